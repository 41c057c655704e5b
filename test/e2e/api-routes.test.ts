import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@temporalio/client';
import { buildApp } from '../../api/app';
import { connectApiToTemporal } from '../../api/temporal-connection';
import { FailureCode } from '../../core/failures';
import { loadConfig } from '../../core/node/config';
import { freePort } from '../../infra/ports';
import { findTemporalBin, startDevServer } from '../../infra/temporal-server';
import { branchHead, createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { assertError, assertEveryRouteNeedsToken } from '../helpers/api-assertions';
import { startStack, testToken, waitFor, type Stack } from '../helpers/stack';

const auth = { authorization: `Bearer ${testToken}` };

describe('API routes through app.inject: auth on every /v1 route, every error code', () => {
  let stack: Stack;
  let landedId = '';
  before(async () => {
    stack = await startStack();
    const repo = createFixtureRepo({
      base: { 'check.sh': 'true\n', '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }]) },
      branches: [{ name: 'feature/a', commits: [{ message: 'a', files: { 'a.txt': 'a\n' } }] }],
    });
    const created = await stack.app.inject({
      method: 'POST',
      url: '/v1/landings',
      headers: auth,
      payload: { repo: repo.url, branches: ['feature/a'], target: 'main' },
    });
    assert.equal(created.statusCode, 201, created.body);
    landedId = created.json().id;
    await waitFor(
      async () => (await stack.app.inject({ method: 'GET', url: `/v1/landings/${landedId}`, headers: auth })).json(),
      (view) => view.workflowStatus === 'COMPLETED',
      120_000,
      'the landing',
    );
    assert.equal(branchHead(repo.path, 'main'), branchHead(repo.path, 'feature/a'));
  });
  after(async () => {
    await stack?.stop();
  });

  it('every /v1 route in the OpenAPI document answers 401 without a token and with a wrong one, the same way', async () => {
    await assertEveryRouteNeedsToken(stack.app, testToken);
  });

  it('each read route answers with a token: lists, views, recipes, the outcome of a finished run', async () => {
    for (const url of ['/v1/landings', `/v1/landings/${landedId}`, `/v1/runs/${landedId}`, '/v1/recipes', '/v1/schedules']) {
      const response = await stack.app.inject({ method: 'GET', url, headers: auth });
      assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
    }
    const view = (await stack.app.inject({ method: 'GET', url: `/v1/landings/${landedId}`, headers: auth })).json();
    assert.equal(view.outcome.status, 'landed');
    const events = await stack.app.inject({ method: 'GET', url: `/v1/landings/${landedId}/events?logs=false`, headers: auth });
    assert.equal(events.statusCode, 200);
    assert.match(String(events.headers['content-type']), /^text\/event-stream/);
    assert.match(events.body, /event: outcome\n/);
    assert.match(events.body, /event: end\n/);
  });

  it('TARMAC_VALIDATION: 400 naming the field, nothing started', async () => {
    const before = (await stack.app.inject({ method: 'GET', url: '/v1/landings', headers: auth })).json().landings.length;
    const cases: { method: 'POST' | 'GET'; url: string; payload?: Record<string, unknown>; field: string }[] = [
      { method: 'POST', url: '/v1/landings', payload: { branches: ['a'], target: 'main' }, field: 'repo' },
      { method: 'POST', url: '/v1/landings', payload: { repo: '/tmp', branches: [], target: 'main' }, field: 'branches' },
      { method: 'POST', url: '/v1/landings', payload: { repo: '/tmp', branches: ['a'], target: 'main', extra: 1 }, field: 'extra' },
      { method: 'POST', url: '/v1/reviews', payload: { repo: '/tmp' }, field: 'base' },
      { method: 'POST', url: '/v1/fix-loops', payload: { repo: '/tmp', branch: 'a' }, field: 'request' },
      { method: 'POST', url: `/v1/runs/${landedId}/budget`, payload: { action: 'grow' }, field: 'action' },
      { method: 'POST', url: '/v1/schedules', payload: { repo: '/tmp', target: 'main', cron: '61 * * * *' }, field: 'cron' },
      { method: 'GET', url: '/v1/landings?phase=flying', field: 'phase' },
    ];
    for (const { method, url, payload, field } of cases) {
      const error = assertError(
        await stack.app.inject({ method, url, headers: auth, ...(payload === undefined ? {} : { payload }) }),
        400,
        FailureCode.validation,
      );
      assert.ok(error.message.includes(field) || JSON.stringify(error.details ?? {}).includes(field), `${method} ${url}: names ${field}: ${error.message}`);
    }
    const afterwards = (await stack.app.inject({ method: 'GET', url: '/v1/landings', headers: auth })).json().landings.length;
    assert.equal(afterwards, before, 'no landing was started by a rejected request');
  });

  it('TARMAC_REPO_ALLOW: a repository outside the allowed prefixes is refused (400 naming repo), one inside is accepted', async () => {
    const repo = createFixtureRepo({
      base: { 'check.sh': 'true\n', '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }]) },
      branches: [{ name: 'feature/allowed', commits: [{ message: 'b', files: { 'b.txt': 'b\n' } }] }],
    });
    const config = loadConfig({
      TARMAC_API_TOKENS: testToken,
      TARMAC_REPO_ALLOW: 'https://git.example.invalid/acme/',
      TARMAC_TEMPORAL_ADDRESS: stack.config.temporalAddress,
      TARMAC_DATA_DIR: stack.dataDir,
    });
    const strictApp = await buildApp({ client: stack.client, config });
    try {
      const refused = assertError(
        await strictApp.inject({
          method: 'POST',
          url: '/v1/landings',
          headers: auth,
          payload: { repo: repo.url, branches: ['feature/allowed'], target: 'main' },
        }),
        400,
        FailureCode.validation,
      );
      assert.equal(refused.details?.field, 'repo');
      assert.match(refused.message, /not allowed/);
    } finally {
      await strictApp.close();
    }
    const allowing = loadConfig({
      TARMAC_API_TOKENS: testToken,
      TARMAC_REPO_ALLOW: `${repo.url.slice(0, repo.url.lastIndexOf('/') + 1)}`,
      TARMAC_TEMPORAL_ADDRESS: stack.config.temporalAddress,
      TARMAC_DATA_DIR: stack.dataDir,
      TARMAC_TASK_QUEUE: stack.config.taskQueue,
    });
    const openApp = await buildApp({ client: stack.client, config: allowing });
    try {
      const accepted = await openApp.inject({
        method: 'POST',
        url: '/v1/landings',
        headers: auth,
        payload: { repo: repo.url, branches: ['feature/allowed'], target: 'main' },
      });
      assert.equal(accepted.statusCode, 201, accepted.body);
      await waitFor(
        async () => (await stack.app.inject({ method: 'GET', url: `/v1/landings/${accepted.json().id}`, headers: auth })).json(),
        (view) => view.workflowStatus === 'COMPLETED',
        120_000,
        'the allowed landing',
      );
    } finally {
      await openApp.close();
    }
  });

  it('TARMAC_UNKNOWN_MODEL: 400 naming the field and the nearest models', async () => {
    const error = assertError(
      await stack.app.inject({
        method: 'POST',
        url: '/v1/landings',
        headers: auth,
        payload: { repo: '/tmp', branches: ['a'], target: 'main', agents: { fixer: 'script#fixr' } },
      }),
      400,
      FailureCode.unknownModel,
    );
    assert.equal(error.details?.field, 'agents.fixer');
    assert.ok((error.details?.nearest as string[]).includes('script#fixer'));
  });

  it('TARMAC_NOT_FOUND (unknown run, unknown route), TARMAC_METHOD_NOT_ALLOWED, TARMAC_CONFLICT (a finished landing)', async () => {
    assertError(await stack.app.inject({ method: 'GET', url: '/v1/landings/landing-nope', headers: auth }), 404, FailureCode.notFound);
    assertError(await stack.app.inject({ method: 'GET', url: '/v1/runs/landing-nope', headers: auth }), 404, FailureCode.notFound);
    assertError(await stack.app.inject({ method: 'POST', url: '/v1/landings/landing-nope/cancel', headers: auth }), 404, FailureCode.notFound);
    assertError(await stack.app.inject({ method: 'GET', url: '/v1/nothing-here', headers: auth }), 404, FailureCode.notFound);
    const wrongMethod = await stack.app.inject({ method: 'DELETE', url: '/v1/landings', headers: auth });
    assertError(wrongMethod, 405, FailureCode.methodNotAllowed);
    assert.match(String(wrongMethod.headers.allow), /GET/);
    assertError(
      await stack.app.inject({ method: 'POST', url: `/v1/landings/${landedId}/answers`, headers: auth, payload: { text: 'yes' } }),
      409,
      FailureCode.conflict,
    );
    assertError(await stack.app.inject({ method: 'POST', url: `/v1/landings/${landedId}/cancel`, headers: auth }), 409, FailureCode.conflict);
    // Retry reads the run's description and result from the real server: unknown → 404, landed → 409.
    assertError(await stack.app.inject({ method: 'POST', url: '/v1/landings/landing-nope/retry', headers: auth }), 404, FailureCode.notFound);
    const landed = assertError(await stack.app.inject({ method: 'POST', url: `/v1/landings/${landedId}/retry`, headers: auth }), 409, FailureCode.conflict);
    assert.match(landed.message, /landed.*nothing to retry/);
  });

  it('TARMAC_RATE_LIMITED on unauthenticated paths', async () => {
    const config = loadConfig({
      TARMAC_API_TOKENS: testToken,
      TARMAC_API_RATE_LIMIT: '1',
      TARMAC_TEMPORAL_ADDRESS: stack.config.temporalAddress,
      TARMAC_DATA_DIR: stack.dataDir,
    });
    const app = await buildApp({ client: stack.client, config });
    try {
      assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
      assertError(await app.inject({ method: 'GET', url: '/healthz' }), 429, FailureCode.rateLimited);
    } finally {
      await app.close();
    }
  });

  it('TARMAC_UNAVAILABLE: Temporal goes down → 503 with no internals; /healthz says which', async () => {
    // A Temporal server of its own, stopped under a connected API: what an outage looks like.
    const dir = mkdtempSync(join(tmpdir(), 'tarmac-outage-'));
    const server = await startDevServer({
      bin: findTemporalBin(process.env.TARMAC_TEMPORAL_BIN),
      dbFile: join(dir, 'temporal.db'),
      port: await freePort(),
      logFile: join(dir, 'temporal.log'),
    });
    const connection = await connectApiToTemporal(server.address);
    const app = await buildApp({ client: new Client({ connection }), config: stack.config });
    try {
      assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
      await server.stop();
      const error = assertError(await app.inject({ method: 'GET', url: '/v1/landings/landing-x', headers: auth }), 503, FailureCode.unavailable);
      assert.equal(String((await app.inject({ method: 'GET', url: '/v1/landings', headers: auth })).headers['retry-after']), '5', 'says when to retry');
      assert.doesNotMatch(error.message, /127\.0\.0\.1|grpc|at \w+ \(/, 'no address, library or stack in the message');
      const health = await app.inject({ method: 'GET', url: '/healthz' });
      assert.equal(health.statusCode, 503);
      assert.deepEqual(health.json(), { status: 'degraded', temporal: 'unreachable', docker: 'ok' });
    } finally {
      await app.close();
      // The connection is left to the process: the SDK's gRPC retries of the calls above may still
      // be backing off, and closing the channel under them turns their next try into an error.
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('TARMAC_INTERNAL: an unexpected error is a 500 that carries neither its message nor a stack', async () => {
    const app = await buildApp({ client: stack.client, config: stack.config });
    // A route that fails the way a bug would: the handler throws an Error with internals in its message.
    app.get('/v1/test-boom', async () => {
      throw new Error('password=hunter2 at /srv/secret/path.ts:12');
    });
    try {
      const error = assertError(await app.inject({ method: 'GET', url: '/v1/test-boom', headers: auth }), 500, FailureCode.internal);
      assert.doesNotMatch(JSON.stringify(error), /hunter2|secret|\.ts/);
    } finally {
      await app.close();
    }
  });
});
