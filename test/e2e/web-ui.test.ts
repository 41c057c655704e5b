import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { branchHead, createFixtureRepo, gateFile, type FixtureRepo } from '../../infra/fixture-repo';
import { startStack, waitFor, type Stack } from '../helpers/stack';

/** Debian's chromium; `scripts/setup.sh --tests` (`npm test`) installs it. Playwright's own browser downloads are not used. */
const chromiumPath = '/usr/bin/chromium';
const artifactsDir = resolve(__dirname, '../../artifacts');
const screenshotPath = join(artifactsDir, 'web-ui-landing.png');
/** Rows of the workflow list table in Temporal UI 2.x (checked against UI 2.42.1). */
const workflowRow = '[data-testid="workflows-summary-configurable-table-row"]';

function fixture(name: string): FixtureRepo {
  return createFixtureRepo({
    name,
    base: {
      Makefile: 'test:\n\tnode test.js\n',
      'test.js': `console.log('${name} suite ok');\n`,
      '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['make', 'test'], timeout: '2m' }]),
    },
    branches: [{ name: 'feature/x', commits: [{ message: `${name}: feature`, files: { [`${name}.txt`]: `${name}\n` } }] }],
  });
}

async function land(stack: Stack, repo: FixtureRepo): Promise<string> {
  const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/x'], target: 'main' });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const view = await waitFor(
    () => stack.api('GET', `/v1/landings/${created.body.id}`),
    (response) => response.status === 200 && response.body.workflowStatus !== 'RUNNING',
    180_000,
    `landing ${created.body.id} to finish`,
  );
  assert.equal(view.body.outcome.status, 'landed', view.body.outcome.summary);
  assert.equal(branchHead(repo.path, 'main'), branchHead(repo.path, 'feature/x'), `${repo.url}: main is the landed head`);
  return created.body.id as string;
}

function isLoopback(url: string): boolean {
  const { protocol, hostname } = new URL(url);
  if (protocol === 'data:' || protocol === 'blob:') return true;
  return hostname === '127.0.0.1' || hostname === 'localhost' || hostname === '[::1]';
}

/** Opens the UI's workflow list with a visibility query in its `query` URL parameter. */
async function openFiltered(page: Page, uiUrl: string, query: string): Promise<void> {
  await page.goto(`${uiUrl}/namespaces/default/workflows?query=${encodeURIComponent(query)}`, { waitUntil: 'domcontentloaded' });
}

/** The table row of a workflow: the UI renders its id as a link to its history. */
function rowOf(page: Page, workflowId: string) {
  return page.locator(workflowRow).filter({ has: page.getByRole('link', { name: workflowId, exact: true }) });
}

describe('Temporal Web UI: an operator finds a landing by TarmacRepo in a real browser', () => {
  let stack: Stack | undefined;
  let browser: Browser | undefined;
  const repos: FixtureRepo[] = [];
  const blocked: string[] = [];

  before(async () => {
    // Fail, never skip: without a browser this acceptance check would silently prove nothing.
    assert.ok(
      existsSync(chromiumPath),
      `${chromiumPath} not found: install Debian's chromium (\`bash scripts/setup.sh --tests\` does, or \`apt-get install -y chromium\`)`,
    );
    stack = await startStack({ webUi: true });
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await stack?.stop();
    for (const repo of repos) rmSync(dirname(repo.path), { recursive: true, force: true });
  });

  it('lists the landing under TarmacRepo="<repo>" and not a landing of another repo; saves a screenshot', async (t) => {
    const uiUrl = stack!.server.uiUrl;
    assert.ok(uiUrl, 'the dev server serves the Web UI');
    const [repoA, repoB] = [fixture('alpha'), fixture('bravo')];
    repos.push(repoA, repoB);
    const [idA, idB] = await Promise.all([land(stack!, repoA), land(stack!, repoB)]);
    assert.notEqual(idA, idB);
    await waitFor(
      () =>
        fetch(uiUrl).then(
          (response) => response.status,
          () => 0,
        ),
      (status) => status === 200,
      60_000,
      'the Web UI to serve',
    );

    browser = await chromium.launch({
      executablePath: chromiumPath,
      headless: true,
      args: [
        '--no-sandbox', // the tests run as root
        '--no-first-run',
        '--no-default-browser-check',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-default-apps',
        '--disable-sync',
        '--disable-domain-reliability',
        // Anything not on loopback goes to a proxy that is not there (loopback bypasses proxies),
        // so even the browser's own background traffic cannot leave the machine.
        '--proxy-server=http://127.0.0.1:9',
      ],
    });
    const context: BrowserContext = await browser.newContext({ viewport: { width: 1600, height: 900 } });
    context.setDefaultTimeout(60_000);
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (isLoopback(url)) return route.continue();
      blocked.push(url);
      return route.abort('blockedbyclient');
    });
    const page = await context.newPage();

    // The repo's filter lists its landing, and the other repo's landing is not in the same table.
    await openFiltered(page, uiUrl, `TarmacRepo="${repoB.url}"`);
    await rowOf(page, idB).waitFor();
    assert.equal(await rowOf(page, idA).count(), 0, `${idA} (another repo) is not listed under ${repoB.url}`);

    await openFiltered(page, uiUrl, `TarmacRepo="${repoA.url}"`);
    await rowOf(page, idA).waitFor();
    // The whole result arrives in one response, so once idA is shown the table is complete.
    assert.equal(await rowOf(page, idB).count(), 0, `${idB} (another repo) is not listed under ${repoA.url}`);
    assert.match(await rowOf(page, idA).innerText(), /Completed/, 'the landing shows as completed');

    rmSync(screenshotPath, { force: true });
    mkdirSync(artifactsDir, { recursive: true });
    await page.screenshot({ path: screenshotPath, fullPage: true });
    const png = readFileSync(screenshotPath);
    assert.deepEqual([...png.subarray(1, 4)], [...Buffer.from('PNG')], 'the screenshot is a PNG');
    assert.ok(statSync(screenshotPath).size > 20_000, `the screenshot has content (${png.length} bytes)`);
    // Not an assertion: a UI upgrade that fetches a font elsewhere is blocked, which is all that matters here.
    if (blocked.length > 0) t.diagnostic(`blocked non-loopback requests: ${blocked.join(', ')}`);
  });
});
