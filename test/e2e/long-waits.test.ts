import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, cpSync, createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import { loadConfig } from '../../core/node/config';
import { defaultRecipesDir } from '../../core/node/recipes';
import { searchAttributeDeclarations } from '../../core/search-attributes';
import { stopChild } from '../../infra/temporal-server';
import { branchHead, createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { testToken, waitFor } from '../helpers/stack';

/** Where scripts/fetch-test-server.sh (run by setup) puts the JVM build of Temporal's time-skipping test server. */
const testServer =
  process.env.TARMAC_TEST_SERVER ??
  join(process.env.TARMAC_CACHE_DIR ?? join(homedir(), '.cache', 'tarmac'), 'temporal-test-server-1.31.0', 'temporal-test-server');
/**
 * The time-skipping test server. The SDK gives it a fixed 5 s to accept connections and then kills
 * it; on a loaded 2-core machine (a CI run) its start has taken longer. A start that timed out is
 * tried again (each failed start's process is killed by the SDK); any other error is thrown at once.
 */
async function timeSkippingEnvironment(attempts = 3): Promise<TestWorkflowEnvironment> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: testServer } } });
    } catch (error) {
      if (attempt >= attempts || !/did not start within/.test(String((error as Error).message))) throw error;
      console.warn(`[long-waits] the test server did not start in the SDK's 5 s (attempt ${attempt} of ${attempts}); starting it again`);
    }
  }
}
const hasTestServer = (() => {
  try {
    accessSync(testServer, constants.X_OK);
    return true;
  } catch {
    return false;
  }
})();

const hour = 3_600_000;
const base = {
  Makefile: 'test:\n\tnode test.js\n',
  'value.js': 'module.exports = 1;\n',
  'test.js': "if (require('./value.js') < 1) process.exit(1);\nconsole.log('suite ok');\n",
  '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['make', 'test'], timeout: '2m' }]),
};
/** A branch that changes the gate file: the landing asks before it goes on, and waits for the answer. */
const gateChange = (name: string) => [
  {
    name,
    commits: [
      {
        message: `${name}: value 2, gate timeout 3m`,
        files: { 'value.js': 'module.exports = 2;\n', '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['make', 'test'], timeout: '3m' }]) },
      },
    ],
  },
];

/**
 * Hours-long waits, with time skipped: the real worker (a child process, real git and Docker)
 * and the real API on Temporal's time-skipping test server; `env.sleep` moves the server's clock
 * on by hours in a moment. What a wait costs in history is counted before and after.
 */
describe('multi-hour waits (time skipped): a question waits for hours at no cost in history', () => {
  // Fails, never skips: setup fetches the server, and a missing one must not pass as a skip.
  before(() => assert.ok(hasTestServer, `no time-skipping test server at ${testServer}: run scripts/fetch-test-server.sh (setup runs it)`));
  let env: TestWorkflowEnvironment;
  let app: FastifyInstance;
  let worker: ChildProcess | undefined;
  const dataDir = mkdtempSync(join(tmpdir(), 'tarmac-test-'));
  const recipesDir = mkdtempSync(join(tmpdir(), 'tarmac-test-recipes-'));
  const scenariosDir = mkdtempSync(join(tmpdir(), 'tarmac-test-scenarios-'));
  const setQuestionWait = (wait?: string) => {
    const limits = JSON.parse(readFileSync(join(defaultRecipesDir, 'limits.json'), 'utf8'));
    writeFileSync(join(recipesDir, 'limits.json'), `${JSON.stringify({ ...limits, ...(wait ? { questions: { wait } } : {}) }, null, 2)}\n`);
  };
  const api = async (method: 'GET' | 'POST', url: string, payload?: unknown) => {
    const response = await app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${testToken}` },
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return { status: response.statusCode, body: response.body ? JSON.parse(response.body) : undefined };
  };
  const historyLength = async (id: string) => (await env.client.workflow.getHandle(id).describe()).historyLength;

  before(async () => {
    cpSync(defaultRecipesDir, recipesDir, { recursive: true });
    // A fixer that writes FIXED=1 (the gate wants 2) and reports 600 tokens a session.
    writeFileSync(
      join(scenariosDir, 'write-1-spend-600.json'),
      JSON.stringify({ edits: [{ file: 'FIXED', replace: '1\n' }], reportUsage: { inputTokens: 400, outputTokens: 200, costUsd: 0 } }),
    );
    env = await timeSkippingEnvironment();
    // The Tarmac* search attributes, as `tarmac dev` registers them on its dev server.
    const types: Record<string, number> = { Keyword: 2, KeywordList: 7 };
    await env.connection.operatorService.addSearchAttributes({
      namespace: env.namespace ?? 'default',
      searchAttributes: Object.fromEntries(
        searchAttributeDeclarations.map((declaration) => declaration.split('=') as [string, string]).map(([name, type]) => [name, types[type]!]),
      ),
    });
    const environment = {
      ...process.env,
      TARMAC_DATA_DIR: dataDir,
      TARMAC_TEMPORAL_ADDRESS: env.address,
      TARMAC_API_TOKENS: testToken,
      TARMAC_REPO_ALLOW: `file://${tmpdir()}`,
      TARMAC_HOST_ID: 'test-host',
      TARMAC_RECIPES_DIR: recipesDir,
      TARMAC_SCRIPT_SCENARIOS: scenariosDir,
      TARMAC_WORKER_METRICS_PORT: '0',
      TARMAC_LOG_LEVEL: 'info',
    };
    app = await buildApp({ client: env.client, config: loadConfig(environment) });
    const child = spawn(process.execPath, ['--import', 'tsx', resolve(__dirname, '../../bin/tarmac.ts'), 'worker'], {
      cwd: resolve(__dirname, '../..'),
      env: environment,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    worker = child;
    const log = createWriteStream(join(tmpdir(), `tarmac-test-worker-long-waits.log`));
    let output = '';
    await new Promise<void>((ready, fail) => {
      const timer = setTimeout(() => fail(new Error(`worker did not start in 120 s:\n${output}`)), 120_000);
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('worker started')) {
          clearTimeout(timer);
          ready();
        }
      });
      child.once('exit', (code) => fail(new Error(`worker exited (${code}):\n${output}`)));
    });
    child.stdout.pipe(log);
    child.stderr.pipe(log);
  });
  after(async () => {
    await app?.close();
    if (worker) await stopChild(worker, 20_000);
    await env?.teardown();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(recipesDir, { recursive: true, force: true });
    rmSync(scenariosDir, { recursive: true, force: true });
  });

  it('waits 6 hours for an answer (no wait limit): no history event for the wait; answered, it lands', async () => {
    setQuestionWait(undefined);
    const repo = createFixtureRepo({ base, branches: gateChange('feature/slow-answer') });
    const created = await api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/slow-answer'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.id as string;
    await waitFor(
      () => api('GET', `/v1/landings/${id}`),
      (response) => response.body?.pendingQuestions?.length === 1,
      120_000,
      'the question',
    );
    const before = await historyLength(id);
    await env.sleep(6 * hour);
    const afterWait = await historyLength(id);
    console.log(`question waited 6 h: history ${before} events before the wait, ${afterWait} after`);
    assert.equal(afterWait, before, 'six hours of waiting added no history event');
    const waiting = await api('GET', `/v1/landings/${id}`);
    assert.equal(waiting.body.workflowStatus, 'RUNNING');
    assert.equal(waiting.body.pendingQuestions.length, 1);

    const answered = await api('POST', `/v1/landings/${id}/answers`, { text: 'approve' });
    assert.equal(answered.status, 200, JSON.stringify(answered.body));
    const done = await waitFor(
      () => api('GET', `/v1/landings/${id}`),
      (response) => response.body?.workflowStatus !== 'RUNNING',
      180_000,
      'the landing to finish',
    );
    assert.equal(done.body.outcome.status, 'landed', done.body.outcome.summary);
    assert.equal(branchHead(repo.path, 'main'), branchHead(repo.path, 'feature/slow-answer'));
    assert.ok(done.body.outcome.meters.wallTimeMs >= 6 * hour, `the landing's wall time counts the wait (${done.body.outcome.meters.wallTimeMs} ms)`);
    console.log(`landed after a 6 h wait: history ${await historyLength(id)} events`);
  });

  it('a question with the recipe wait of 3 h: unanswered, the landing ends needs-decision after 3 hours, not before', async () => {
    setQuestionWait('3h');
    const repo = createFixtureRepo({ base, branches: gateChange('feature/no-answer') });
    const created = await api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/no-answer'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.id as string;
    await waitFor(
      () => api('GET', `/v1/landings/${id}`),
      (response) => response.body?.pendingQuestions?.length === 1,
      120_000,
      'the question',
    );
    const before = await historyLength(id);
    await env.sleep(2 * hour + 50 * 60_000);
    const still = await api('GET', `/v1/landings/${id}`);
    assert.equal(still.body.workflowStatus, 'RUNNING', 'still waiting after 2 h 50 min');
    assert.equal(await historyLength(id), before, 'the wait so far added no history event');
    await env.sleep(15 * 60_000);
    const done = await waitFor(
      () => api('GET', `/v1/landings/${id}`),
      (response) => response.body?.workflowStatus !== 'RUNNING',
      120_000,
      'the landing to end',
    );
    assert.equal(done.body.outcome.status, 'needs-decision', done.body.outcome.summary);
    assert.match(done.body.outcome.summary, /3h|3 h|10800/);
    const total = await historyLength(id);
    console.log(`needs-decision after a 3 h wait: history ${before} events at the question, ${total} at the end`);
    assert.ok(total - before < 30, `the timeout and the finale took a few events (${total - before})`);
  });

  it('paused for its budget for 5 hours: no history event for the pause; extended, the next fixup round runs', async () => {
    setQuestionWait(undefined);
    const repo = createFixtureRepo({
      base: {
        'check.sh': 'test "$(cat FIXED 2>/dev/null)" = 2 || { echo "FIXED is not 2"; exit 4; }\n',
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], { fixup: { maxRounds: 2 } }),
      },
      branches: [{ name: 'feature/b', commits: [{ message: 'feature', files: { 'feature.txt': 'b\n' } }] }],
    });
    const spender = { fixer: 'script#fixer:write-1-spend-600', ladder: ['script#fixer:write-1-spend-600'] };
    const created = await api('POST', '/v1/landings', {
      repo: repo.url,
      branches: ['feature/b'],
      target: 'main',
      agents: spender,
      budget: { tokens: 500, wall: '24h', onExhausted: 'pause' },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.id as string;
    const paused = await waitFor(
      () => api('GET', `/v1/landings/${id}`),
      (response) => response.body?.pausedFor !== undefined || response.body?.workflowStatus !== 'RUNNING',
      180_000,
      'the budget pause',
    );
    assert.match(paused.body.pausedFor ?? '', /^tokens: 600 used of 500$/, JSON.stringify(paused.body.outcome ?? paused.body));
    const before = await historyLength(id);
    await env.sleep(5 * hour);
    assert.equal(await historyLength(id), before, 'five hours paused added no history event');
    assert.equal((await api('GET', `/v1/landings/${id}`)).body.pausedFor, 'tokens: 600 used of 500', 'still paused');
    const extended = await api('POST', `/v1/runs/${id}/budget`, { action: 'extend', tokens: 10_000 });
    assert.equal(extended.status, 200, JSON.stringify(extended.body));
    const done = await waitFor(
      () => api('GET', `/v1/landings/${id}`),
      (response) => response.body?.workflowStatus !== 'RUNNING',
      180_000,
      'the landing to finish',
    );
    assert.equal(done.body.outcome.status, 'fixup-failed', done.body.outcome.summary);
    assert.equal(done.body.outcome.fixLoops.length, 2, 'the second round ran after the extension');
    console.log(`budget pause of 5 h: history ${before} events at the pause, ${await historyLength(id)} at the end`);
  });
});
