import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Docker from 'dockerode';
import { buildApp } from '../../api/app';
import { loadConfig } from '../../core/node/config';
import { branchHead, createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { startStack, testToken, waitFor, type Stack } from '../helpers/stack';

const passing = { 'check.sh': 'echo ok\n', '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }]) };
// No fixup round: a red gate ends the landing gate-failed at once.
const failing = {
  'check.sh': 'echo broken; exit 3\n',
  '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], { fixup: { maxRounds: 0 } }),
};
const auth = { authorization: `Bearer ${testToken}` };

describe('operator surface: list filters, recipes, health, metrics, rate limit, CORS', () => {
  let stack: Stack;
  const repos = { green: '', red: '' };
  const ids = { green: '', red: '' };
  before(async () => {
    stack = await startStack();
    const green = createFixtureRepo({
      name: 'green',
      base: passing,
      branches: [{ name: 'feature/g', commits: [{ message: 'g', files: { 'g.txt': 'g\n' } }] }],
    });
    const red = createFixtureRepo({ name: 'red', base: failing, branches: [{ name: 'feature/r', commits: [{ message: 'r', files: { 'r.txt': 'r\n' } }] }] });
    repos.green = green.url;
    repos.red = red.url;
    ids.green = (await stack.api('POST', '/v1/landings', { repo: green.url, branches: ['feature/g'], target: 'main' })).body.id;
    ids.red = (await stack.api('POST', '/v1/landings', { repo: red.url, branches: ['feature/r'], target: 'main' })).body.id;
    for (const id of Object.values(ids)) {
      await waitFor(
        () => stack.api('GET', `/v1/landings/${id}`),
        (view) => view.body?.workflowStatus === 'COMPLETED',
        180_000,
        `landing ${id}`,
      );
    }
    assert.equal(branchHead(green.path, 'main'), branchHead(green.path, 'feature/g'));
  });
  after(async () => {
    await stack?.stop();
  });

  it('GET /v1/landings filters by repo, outcome, branch and status through Temporal visibility', async () => {
    // Visibility is eventually consistent: wait until both closed runs are listed with their outcome.
    await waitFor(
      () => stack.api('GET', '/v1/landings?status=Completed'),
      (list) => list.body.landings.filter((entry: { outcome?: string }) => entry.outcome).length >= 2,
      30_000,
      'visibility',
    );
    const byRepo = await stack.api('GET', `/v1/landings?repo=${encodeURIComponent(repos.green)}`);
    assert.deepEqual(
      byRepo.body.landings.map((entry: { id: string }) => entry.id),
      [ids.green],
    );
    assert.equal(byRepo.body.landings[0].repo, repos.green);
    assert.deepEqual(byRepo.body.landings[0].branches, ['feature/g']);
    const byOutcome = await stack.api('GET', '/v1/landings?outcome=gate-failed');
    assert.deepEqual(
      byOutcome.body.landings.map((entry: { id: string }) => entry.id),
      [ids.red],
    );
    const byBranch = await stack.api('GET', '/v1/landings?branch=feature/r&target=main');
    assert.deepEqual(
      byBranch.body.landings.map((entry: { id: string }) => entry.id),
      [ids.red],
    );
    const running = await stack.api('GET', '/v1/landings?status=Running');
    assert.deepEqual(running.body.landings, []);
    const limited = await stack.api('GET', '/v1/landings?limit=1');
    assert.equal(limited.body.landings.length, 1);
  });

  it('GET /v1/landings refuses bad filters with 400 naming the field', async () => {
    for (const [query, field] of [
      ['phase=flying', 'phase'],
      ['outcome=great', 'outcome'],
      ['limit=0', 'limit'],
      [`repo=${encodeURIComponent("x' OR TarmacKind = 'nightly")}`, 'repo'],
      ['colour=blue', 'colour'],
    ] as const) {
      const response = await stack.api('GET', `/v1/landings?${query}`);
      assert.equal(response.status, 400, query);
      assert.equal(response.body.error.code, 'TARMAC_VALIDATION');
      assert.match(response.body.error.message, new RegExp(`^${field}\\b`), response.body.error.message);
    }
  });

  it('GET /v1/recipes shows the harnesses, ladder, panels, limits and playbooks in force', async () => {
    const response = await stack.api('GET', '/v1/recipes');
    assert.equal(response.status, 200);
    assert.match(response.body.version, /^[0-9a-f]{12}$/);
    const script = response.body.harnesses.find((harness: { name: string }) => harness.name === 'script');
    assert.ok(script.models.includes('fixer'), 'the script harness lists its models');
    assert.ok(response.body.ladder.length > 0);
    assert.ok(response.body.panels.some((panel: { quorum: number; reviewers: string[] }) => panel.quorum <= panel.reviewers.length));
    assert.ok(response.body.playbooks.length >= 3);
    assert.equal((await stack.api('GET', '/v1/recipes', undefined, null)).status, 401);
  });

  it('GET /healthz checks Temporal and Docker; 503 names what is down', async () => {
    const healthy = await stack.app.inject({ method: 'GET', url: '/healthz' });
    assert.equal(healthy.statusCode, 200);
    assert.deepEqual(healthy.json(), { status: 'ok', temporal: 'ok', docker: 'ok' });
    const noDocker = await buildApp({ client: stack.client, config: stack.config, docker: new Docker({ socketPath: '/nonexistent/docker.sock' }) });
    try {
      const degraded = await noDocker.inject({ method: 'GET', url: '/healthz' });
      assert.equal(degraded.statusCode, 503);
      assert.deepEqual(degraded.json(), { status: 'degraded', temporal: 'ok', docker: 'unreachable' });
    } finally {
      await noDocker.close();
    }
  });

  it('GET /metrics: landings by outcome, API requests, and the worker’s Tarmac and SDK metrics', async () => {
    const metrics = await waitFor(
      async () => (await fetch(`${stack.apiUrl}/metrics`)).text(),
      (text) => /^tarmac_landings\{outcome="landed"\} 1$/m.test(text) && /^tarmac_landings\{outcome="gate-failed"\} 1$/m.test(text),
      30_000,
      'landing counts in /metrics',
    );
    assert.match(metrics, /^# TYPE tarmac_landings gauge$/m);
    assert.match(metrics, /^tarmac_api_up 1$/m);
    assert.match(metrics, /^tarmac_worker_metrics_up 1$/m);
    assert.match(metrics, /^tarmac_api_requests_total\{method="POST",route="\/v1\/landings",status="201"\} 2$/m);
    assert.match(metrics, /^tarmac_landings_finished_total\{[^}]*outcome="landed"[^}]*\} 1$/m, 'the worker counted the landed outcome');
    assert.match(metrics, /^tarmac_phase_duration_ms_bucket\{[^}]*phase="gate"[^}]*\} \d+$/m, 'phase durations from the worker');
    assert.match(metrics, /^temporal_workflow_completed_total\{/m, 'the SDK’s own worker metrics');
  });

  it('rate limits the unauthenticated paths (429 TARMAC_RATE_LIMITED) but not /v1', async () => {
    const config = loadConfig({
      TARMAC_API_TOKENS: testToken,
      TARMAC_API_RATE_LIMIT: '3',
      TARMAC_TEMPORAL_ADDRESS: stack.config.temporalAddress,
      TARMAC_DATA_DIR: stack.dataDir,
    });
    const app = await buildApp({ client: stack.client, config });
    try {
      const statuses = [];
      for (let index = 0; index < 4; index += 1) statuses.push((await app.inject({ method: 'GET', url: '/healthz' })).statusCode);
      assert.deepEqual(statuses, [200, 200, 200, 429]);
      const limited = await app.inject({ method: 'GET', url: '/metrics' });
      assert.equal(limited.statusCode, 429);
      assert.equal(limited.json().error.code, 'TARMAC_RATE_LIMITED');
      assert.ok(Number(limited.headers['retry-after']) > 0, 'says when to retry');
      for (let index = 0; index < 5; index += 1) assert.equal((await app.inject({ method: 'GET', url: '/v1/recipes', headers: auth })).statusCode, 200);
    } finally {
      await app.close();
    }
  });

  it('CORS is off by default; configured origins get CORS headers, others do not', async () => {
    const plain = await stack.app.inject({ method: 'GET', url: '/v1/recipes', headers: { ...auth, origin: 'https://ops.example.com' } });
    assert.equal(plain.statusCode, 200);
    assert.equal(plain.headers['access-control-allow-origin'], undefined);
    const config = loadConfig({
      TARMAC_API_TOKENS: testToken,
      TARMAC_API_CORS_ORIGINS: 'https://ops.example.com',
      TARMAC_TEMPORAL_ADDRESS: stack.config.temporalAddress,
      TARMAC_DATA_DIR: stack.dataDir,
    });
    const app = await buildApp({ client: stack.client, config });
    try {
      const allowed = await app.inject({
        method: 'OPTIONS',
        url: '/v1/recipes',
        headers: { origin: 'https://ops.example.com', 'access-control-request-method': 'GET' },
      });
      assert.equal(allowed.headers['access-control-allow-origin'], 'https://ops.example.com');
      const other = await app.inject({ method: 'GET', url: '/v1/recipes', headers: { ...auth, origin: 'https://evil.example.net' } });
      assert.equal(other.headers['access-control-allow-origin'], undefined);
    } finally {
      await app.close();
    }
  });
});
