import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { dashboardCsp } from '../../api/dashboard';
import { defaultRecipesDir } from '../../core/node/recipes';
import { createFixtureRepo, gateFile, type FixtureRepo } from '../../infra/fixture-repo';
import { buildDashboard } from '../../scripts/build-dashboard';
import { allWaiting, holdTarget, queueRepo, releaseTarget, startLanding } from '../helpers/merge-queue';
import { landingFinished, startStack, testToken, waitFor, type Stack } from '../helpers/stack';

/**
 * The operator's dashboard in Debian's chromium (playwright-core, no browser download) against
 * the real stack: the login, the run list, and run pages that show a resolver's landing (its
 * question answered from the page), a red gate fixed by a fixup round (the live log followed
 * across a dropped connection), the merge queue (the queues page while landings wait; a batch's
 * members, its culprit and the batch's own page) and a review panel answered from the cache. Every request the
 * page makes is recorded: all go to the API's origin, none carries the token in its URL.
 */

const chromiumPath = '/usr/bin/chromium';
const artifactsDir = resolve(__dirname, '../../artifacts');
const corsOrigin = 'https://ops.example.com';
const question = "Which line should shared.txt keep: the target's or the branch's?";
const answer = 'target and one, in that order';
/** A gate suite that prints a numbered line every 0.3 s, then wants FIXED (the scripted fixer writes it). */
const slowCheck = 'for i in $(seq 1 24); do echo "tick $i"; sleep 0.3; done\ntest -f FIXED || { echo "FIXED is missing"; exit 4; }\n';

describe('the dashboard in a real browser against the real stack', () => {
  let stack: Stack;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const requests: string[] = [];
  const repos: FixtureRepo[] = [];
  const recipesDir = mkdtempSync(join(tmpdir(), 'tarmac-test-recipes-'));
  const ids: { resolver?: string; fixup?: string } = {};
  let repoFixup: FixtureRepo;

  before(async () => {
    assert.ok(existsSync(chromiumPath), `${chromiumPath} not found: install Debian's chromium (\`bash scripts/setup.sh --tests\` does)`);
    // The API serves the build in dist/dashboard: make it from today's sources.
    await buildDashboard();
    cpSync(defaultRecipesDir, recipesDir, { recursive: true });
    const panels = JSON.parse(readFileSync(join(recipesDir, 'panels.json'), 'utf8'));
    panels.panels['script-one'] = {
      reviewers: ['script#reviewer-a'],
      quorum: 1,
      blockingSeverities: ['blocking'],
      promptVersion: 'v1',
      prompt: 'Review the listed files.',
    };
    writeFileSync(join(recipesDir, 'panels.json'), `${JSON.stringify(panels, null, 2)}\n`);
    // A CORS-enabled API: the event stream must carry the CORS headers too.
    const corsBefore = process.env.TARMAC_API_CORS_ORIGINS;
    process.env.TARMAC_API_CORS_ORIGINS = corsOrigin;
    try {
      stack = await startStack({ recipesDir });
    } finally {
      if (corsBefore === undefined) delete process.env.TARMAC_API_CORS_ORIGINS;
      else process.env.TARMAC_API_CORS_ORIGINS = corsBefore;
    }
    stack.scriptScenario('ask-keep', { ask: [question], edits: [{ file: 'shared.txt', replace: '{{answer}}\n' }] });
    stack.scriptScenario('write-fixed', { edits: [{ file: 'FIXED', replace: 'yes\n' }] });

    // A landing whose branch conflicts with the moved target: its resolver asks before it resolves.
    const conflict = createFixtureRepo({
      base: {
        'shared.txt': 'base\n',
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', '-c', 'test -f shared.txt'] }], { fixup: { maxRounds: 0 } }),
      },
      branches: [{ name: 'feature/one', commits: [{ message: 'one: change shared', files: { 'shared.txt': 'one\n' } }] }],
    });
    conflict.advanceTarget('target changes shared', { 'shared.txt': 'target\n' });
    repos.push(conflict);
    const asker = 'script#resolver:ask-keep';
    const created = await stack.api('POST', '/v1/landings', {
      repo: conflict.url,
      branches: ['feature/one'],
      target: 'main',
      agents: { resolver: asker, ladder: [asker] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    ids.resolver = created.body.id;

    browser = await chromium.launch({
      executablePath: chromiumPath,
      headless: true,
      // Anything not on loopback goes to a proxy that is not there: nothing can leave the machine.
      args: [
        '--no-sandbox',
        '--no-first-run',
        '--no-default-browser-check',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--proxy-server=http://127.0.0.1:9',
      ],
    });
    context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    context.setDefaultTimeout(60_000);
    // Recorded, not intercepted (an intercepted response would be buffered, and the stream with it).
    context.on('request', (request) => requests.push(request.url()));
    page = await context.newPage();
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await stack?.stop();
    for (const repo of repos) rmSync(dirname(repo.path), { recursive: true, force: true });
    rmSync(recipesDir, { recursive: true, force: true });
  });

  const screenshot = async (name: string) => {
    mkdirSync(artifactsDir, { recursive: true });
    const path = join(artifactsDir, `dashboard-${name}.png`);
    await page.screenshot({ path, fullPage: true });
    assert.ok(readFileSync(path).length > 10_000, `${path} has content`);
  };
  const openRun = async (id: string) => {
    await page.goto(`${stack.apiUrl}/dashboard/#/runs/${id}`);
    await page.locator('[data-field="workflowStatus"]').waitFor();
  };
  /** The landing's outcome once it finished (through the API), after the page shows it finished too. */
  const outcomeOf = async (id: string) => {
    const view = await landingFinished(stack, id);
    await page.locator('[data-field="workflowStatus"]').filter({ hasText: view.workflowStatus }).waitFor();
    await page.locator('[data-stream-state="ended"]').waitFor();
    return view.outcome.status as string;
  };

  it('without a token only the login shows, under the strict CSP; a wrong token is refused; the right one opens the list (keyboard only)', async () => {
    const response = await page.goto(`${stack.apiUrl}/dashboard/`);
    assert.equal(response?.status(), 200);
    assert.equal(response?.headers()['content-security-policy'], dashboardCsp, 'the page sets the CSP header');
    await page.getByLabel('API token').waitFor();
    assert.equal(await page.locator('main').count(), 1);
    assert.equal(await page.locator('[data-testid="runs"], [data-section], nav').count(), 0, 'nothing but the login');
    assert.deepEqual(
      requests.filter((url) => new URL(url).pathname.startsWith('/v1/')),
      [],
      'no data call without a token',
    );

    await page.getByLabel('API token').focus();
    await page.keyboard.type('not-the-token');
    await page.keyboard.press('Enter');
    await page.getByRole('alert').filter({ hasText: 'refused' }).waitFor();
    assert.equal(await page.evaluate('sessionStorage.length'), 0, 'a refused token is not kept');

    await page.getByLabel('API token').fill('');
    await page.getByLabel('API token').focus();
    await page.keyboard.type(testToken);
    await page.keyboard.press('Enter');
    const row = page.locator(`tr[data-run="${ids.resolver}"]`);
    await row.waitFor();
    assert.equal(await row.getAttribute('data-kind'), 'landing');
    const storage = await page.evaluate('({ session: sessionStorage.length, local: localStorage.length, cookie: document.cookie })');
    assert.deepEqual(storage, { session: 1, local: 0, cookie: '' }, 'the token is kept for the tab only');
    // The list's filters are the list API's: another repo's filter hides the landing.
    await page.getByLabel('Repository').fill(`${repos[0]!.url}-other`);
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('No run matches these filters.').waitFor();
    await page.getByRole('button', { name: 'Clear' }).click();
    await row.waitFor();
    await screenshot('list');
  });

  it('a red gate fixed by a fixup round: the live log grows while the gate runs and resumes after the connection drops; red superseded by green', async () => {
    repoFixup = createFixtureRepo({
      base: {
        'check.sh': slowCheck,
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'], timeout: '2m' }], { review: { panel: 'script-one', quorum: 1 } }),
      },
      branches: [{ name: 'feature/f', commits: [{ message: 'feature without the fix', files: { 'feature.txt': 'f\n' } }] }],
    });
    repos.push(repoFixup);
    const fixer = 'script#fixer:write-fixed';
    const created = await stack.api('POST', '/v1/landings', {
      repo: repoFixup.url,
      branches: ['feature/f'],
      target: 'main',
      agents: { fixer, ladder: [fixer] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = (ids.fixup = created.body.id as string);

    // The stream of a CORS-enabled API carries its CORS headers (it goes through the framework).
    const stream = await fetch(`${stack.apiUrl}/v1/runs/${id}/events`, { headers: { authorization: `Bearer ${testToken}`, origin: corsOrigin } });
    assert.equal(stream.status, 200);
    assert.equal(stream.headers.get('access-control-allow-origin'), corsOrigin);
    await stream.body?.cancel();

    await openRun(id);
    const ticks = page.locator('[data-testid="log"] li').filter({ hasText: /tick \d+/ });
    await waitFor(
      () => ticks.count(),
      (count) => count >= 3,
      90_000,
      'the first gate round to print',
    );
    const before = await ticks.count();
    await stack.restartApi();
    await page.locator('[data-stream-state="reconnecting"]').waitFor();
    await page.locator('[data-stream-state="live"]').waitFor();
    await waitFor(
      () => ticks.count(),
      (count) => count > before + 3,
      60_000,
      'the log to go on after the reconnect',
    );
    // No gap and no repeat: in each gate log the ticks run 1, 2, 3… across the drop.
    const lines = await ticks.evaluateAll((items) =>
      items.map((item) => ({ file: item.getAttribute('data-file') ?? '', n: Number(/tick (\d+)/.exec(item.textContent ?? '')?.[1]) })),
    );
    const byFile = new Map<string, number[]>();
    for (const line of lines) byFile.set(line.file, [...(byFile.get(line.file) ?? []), line.n]);
    for (const [file, numbers] of byFile)
      assert.deepEqual(
        numbers,
        numbers.map((_, index) => index + 1),
        `${file}: every tick once, in order`,
      );

    assert.equal(await outcomeOf(id), 'landed');
    await page.locator('[data-field="outcome"]').filter({ hasText: 'landed' }).waitFor();
    const red = page.locator('tr[data-gate="test#1"]');
    const green = page.locator('tr[data-gate="test#2"]');
    await green.waitFor();
    // The outcome's lineage may render a moment after the green round: wait for it, then read the row.
    await page.locator('tr[data-gate="test#1"][data-markers*="superseded"]').waitFor({ timeout: 30_000 });
    assert.equal(await red.getAttribute('data-status'), 'failed');
    assert.match((await red.getAttribute('data-markers')) ?? '', /superseded/);
    assert.match(await red.innerText(), /by round 2/);
    assert.equal(await green.getAttribute('data-status'), 'passed');
    assert.equal(await page.locator('li[data-step="fix.loop:fixup-1"]').getAttribute('data-status'), 'done');
    assert.match((await page.locator('li[data-step="gate.runSuite:test#1"]').getAttribute('data-markers')) ?? '', /superseded/);
    await page
      .locator(`[data-fix-loop="${id}.fixup-1"]`)
      .filter({ hasText: /fixed; playbook/ })
      .waitFor();
    assert.equal(await page.locator('tr[data-session="fixup-1-implementer-1"] [data-field="rung"]').innerText(), '1');
    // A log link shows that gate's log.
    // (The red row also links its evidence runs' logs: again on the same tree, on the base.)
    assert.deepEqual(await red.locator('[data-evidence]').evaluateAll((items) => items.map((item) => item.getAttribute('data-evidence'))), [
      'same-tree',
      'base',
    ]);
    await red.getByRole('button', { name: 'Show the log of test, round 1', exact: true }).click();
    assert.equal(await page.evaluate('document.activeElement && document.activeElement.id'), 'log', 'the log link moves focus to the log');
    assert.ok((await page.locator('[data-testid="log"] li').count()) > 0);
    await screenshot('fixup');
  });

  it("a resolver's question is answered from the page (keyboard only) and the landing goes on to land", async () => {
    const id = ids.resolver!;
    await openRun(id);
    const form = page.locator('form[data-question="resolver-1-q1"]');
    await form.waitFor();
    assert.match(await form.innerText(), new RegExp(question.replace(/[?.']/g, '.')));
    assert.match(await form.innerText(), /From resolver-1 \(resolver, script#resolver:ask-keep\)/);
    await screenshot('question');
    await form.getByLabel('Your answer').focus();
    await page.keyboard.type(answer);
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    assert.equal(await outcomeOf(id), 'landed');
    await page.locator('[data-field="outcome"]').filter({ hasText: 'landed' }).waitFor();
    await page.locator('li[data-step="session.resolver:resolver-2"]').waitFor();
    assert.match((await page.locator('tr[data-session="resolver-1"]').getAttribute('data-markers')) ?? '', /asked/);
    assert.match(await page.locator('tr[data-session="resolver-2"]').innerText(), /resolver[\s\S]*script#resolver:ask-keep[\s\S]*delivered/);
    assert.match(await page.locator('[data-testid="events"]').innerText(), new RegExp(`question resolver-1-q1 from .* answered: ${answer}`));
    await screenshot('resolver');
  });

  it("the merge queue: the queues page shows the holder and the line (keyboard); a batch lands one, names the other its culprit; both pages and the batch's show it", async () => {
    const repo = queueRepo(['a1', 'b']);
    repos.push(repo);
    const pacer = await holdTarget(stack, repo);
    const good = await startLanding(stack, repo, 'feature/a1');
    // The bad one in a lower lane: behind a1 whenever it arrives (a batch's culprit is the member whose prefix is red first).
    const bad = await startLanding(stack, repo, 'feature/b', {
      priority: -1,
      agents: { fixer: 'script#fixer:write-fixed', ladder: ['script#fixer:write-fixed'] },
    });
    await allWaiting(stack, pacer, [good, bad]);

    await page.goto(`${stack.apiUrl}/dashboard/#/`);
    await page.getByRole('link', { name: 'Queues' }).focus();
    await page.keyboard.press('Enter');
    const queue = page.locator(`section[data-queue]`).filter({ hasText: repo.url });
    await queue.waitFor();
    assert.equal(await page.getByRole('link', { name: 'Queues' }).getAttribute('aria-current'), 'page');
    assert.match(await queue.locator('[data-field="holder"]').innerText(), new RegExp(pacer.replace(/[.]/g, '\\.')));
    const rows = queue.locator('tr[data-landing]');
    assert.deepEqual(
      await rows.evaluateAll((items) =>
        items.map((item) => [item.getAttribute('data-landing'), item.getAttribute('data-position'), item.getAttribute('data-lane')]),
      ),
      [
        [good, '0', '0'],
        [bad, '1', '-1'],
      ],
    );
    // Each landing in the line links to its run page.
    assert.equal(await queue.getByRole('link', { name: good }).getAttribute('href'), `#/runs/${good}`);
    await screenshot('queues');

    await releaseTarget(stack, pacer);
    const goodView = await landingFinished(stack, good, 300_000);
    assert.equal(goodView.outcome.status, 'landed', goodView.outcome.summary);
    const batchId = goodView.outcome.batch.id as string;
    const badView = await landingFinished(stack, bad, 300_000);
    assert.equal(badView.outcome.status, 'landed', `the culprit landed after its fixup round: ${badView.outcome.summary}`);

    // The landing that merged in the batch: the batch, its round, the landings of its fast-forward (this one, marked; not the culprit).
    await openRun(good);
    const merged = page.locator(`[data-section="batch"] [data-batch="${batchId}"]`);
    await merged.waitFor();
    assert.equal(await merged.getAttribute('data-round'), String(goodView.outcome.batch.round));
    assert.equal(await merged.locator('[data-marker="batched"]').count(), 1);
    assert.deepEqual(await merged.locator('li[data-member]').evaluateAll((items) => items.map((item) => item.getAttribute('data-member'))), [good]);
    assert.match(await merged.locator(`li[data-member="${good}"]`).innerText(), /\(this landing\)/);
    assert.equal(await merged.getByRole('link', { name: batchId }).getAttribute('href'), `#/runs/${batchId}`);
    await screenshot('batch-landed');

    // The culprit: the batch that named it, the round and the red suite.
    await openRun(bad);
    const culprit = page.locator(`[data-section="batch"] li[data-culprit-in="${batchId}"]`);
    await culprit.waitFor();
    assert.equal(await culprit.locator('[data-marker="culprit"]').count(), 1);
    assert.match(await culprit.innerText(), /round \d+, the stack up to this landing, was red[\s\S]*\(check\)/);

    // The batch's own page: what it decided for each member, its rounds, its fast-forward.
    await culprit.getByRole('link', { name: batchId }).click();
    await page.locator('[data-testid="batch-members"]').waitFor();
    assert.equal(await page.locator(`tr[data-member="${good}"]`).getAttribute('data-result'), 'landed');
    assert.equal(await page.locator(`tr[data-member="${bad}"]`).getAttribute('data-result'), 'culprit');
    assert.deepEqual(await page.locator('tr[data-batch-round]').evaluateAll((items) => items.map((item) => item.getAttribute('data-green'))), [
      'false',
      'true',
    ]);
    assert.equal(await page.locator('li[data-merge]').count(), 1);
    await screenshot('batch');
  });

  it("a landing in its declared environment: the run page shows the key, ENV_CACHE and the setup's egress; the Environments page lists it (keyboard)", async () => {
    // An environment whose setup needs no network: the base image plus what the setup made (tools/).
    const environment = { setup: ['mkdir -p tools && cat deps.txt > tools/ready'], inputs: ['deps.txt'] };
    const repo = createFixtureRepo({
      base: {
        'deps.txt': 'one\n',
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', '-c', 'grep -qx one tools/ready'] }], { environment }),
      },
      branches: [{ name: 'feature/env', commits: [{ message: 'env feature', files: { 'env.txt': 'e\n' } }] }],
    });
    repos.push(repo);
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/env'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.id as string;
    await openRun(id);
    assert.equal(await outcomeOf(id), 'landed');
    const used = (await landingFinished(stack, id)).outcome.environments as { key: string; cache: string }[];
    assert.equal(used.length, 1, JSON.stringify(used));
    const shortKey = used[0]!.key.slice('sha256:'.length, 'sha256:'.length + 12);
    const panelRow = page.locator(`[data-section="environments"] tr[data-environment="${shortKey}"]`);
    await panelRow.waitFor();
    assert.equal(await panelRow.getAttribute('data-cache'), 'miss');
    assert.match(await panelRow.innerText(), /built in [\d.]+ s/);
    assert.match(await panelRow.innerText(), /none/, 'a setup that reached no host says so');
    await screenshot('environment-use');

    // The Environments page, reached from the navigation with the keyboard.
    await page.getByRole('link', { name: 'Environments' }).focus();
    await page.keyboard.press('Enter');
    const row = page.locator(`[data-testid="environments"] tr[data-environment="${shortKey}"]`);
    await row.waitFor();
    assert.ok((await row.innerText()).includes(created.body.repo as string), 'its repository, as the landing recorded it');
    assert.match((await row.locator('[data-field="size"]').innerText()).trim(), /^\d+(\.\d)? (B|KiB|MiB)$/);
    assert.equal(await row.getByRole('link', { name: id }).first().getAttribute('href'), `#/runs/${id}`, 'the run that built it');
    await screenshot('environments');
  });

  it('the same tree again: the review panel answers from the cache, shown on the run page', async () => {
    // The fixup landing's final tree (its fix included): the panel has reviewed it already.
    const repo = createFixtureRepo({
      base: {
        'check.sh': slowCheck,
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'], timeout: '2m' }], { review: { panel: 'script-one', quorum: 1 } }),
      },
      branches: [{ name: 'feature/f', commits: [{ message: 'feature with the fix', files: { 'feature.txt': 'f\n', FIXED: 'yes\n' } }] }],
    });
    repos.push(repo);
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/f'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.id as string;
    await openRun(id);
    assert.equal(await outcomeOf(id), 'landed');
    const review = page.locator('[data-review="1"]');
    await review.waitFor();
    assert.equal(await review.getAttribute('data-cache'), 'hit');
    assert.equal(await review.locator('[data-reviewer="script#reviewer-a"]').getAttribute('data-source'), 'cache');
    assert.match((await page.locator('li[data-step="review.panel:script-one#1"]').getAttribute('data-markers')) ?? '', /cached/);
    await page.locator('[data-section="events"] li[data-kind="cache"]').filter({ hasText: 'REVIEW_CACHE=hit' }).waitFor();
    await screenshot('review-cache-hit');

    // Every request the page made went to the API's origin, and none carried the token in its URL.
    const origin = new URL(stack.apiUrl).origin;
    assert.ok(requests.length > 0);
    assert.deepEqual(
      requests.filter((url) => new URL(url).origin !== origin),
      [],
      'nothing loaded from another origin',
    );
    assert.deepEqual(
      requests.filter((url) => url.includes(testToken)),
      [],
      'the token never goes in a URL',
    );
  });
});
