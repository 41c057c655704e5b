import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import type Docker from 'dockerode';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import { FailureCode as ApiErrorCode } from '../../core/failures';
import { answerUpdate, budgetUpdate, eventsQuery, landingStatusQuery } from '../../core/messages';
import { loadConfig, type Config } from '../../core/node/config';
import { defaultRecipesDir } from '../../core/node/recipes';
import { searchAttributes } from '../../core/search-attributes';
import type { LandingOutcome, LandingStatusView } from '../../core/types';
import { branchHead, createFixtureRepo, type FixtureRepo } from '../../infra/fixture-repo';
import { RunJournal } from '../../workflows/run-journal';
import { assertError, assertEveryRouteNeedsToken } from '../helpers/api-assertions';
import { TemporalStandIn } from '../helpers/temporal-stand-in';

/**
 * The API's routes through `app.inject`, with a stand-in Temporal client (test/helpers/
 * temporal-stand-in.ts) and a stand-in Docker ping: no Temporal server, no Docker engine.
 * Repositories are real (git in a temp dir). The same routes against the real stack:
 * test/e2e/api-routes.test.ts.
 */

const token = 'unit-token-0123456789abcdef';
const auth = { authorization: `Bearer ${token}` };

/** Docker as the health check sees it: a ping that answers while `reachable`, else fails as a missing socket does. */
function dockerStandIn() {
  const state = { reachable: true };
  const docker = { ping: async () => (state.reachable ? 'OK' : Promise.reject(new Error('connect ENOENT /var/run/docker.sock'))) } as unknown as Docker;
  return { state, docker };
}

const sha = (digit: string) => digit.repeat(40);

function statusView(phase: LandingStatusView['phase']): LandingStatusView {
  return {
    runId: 'land.view',
    phase,
    steps: [{ name: 'capsule.rebaseBranches', status: 'done', startedAt: '2024-01-01T00:00:00.000Z', endedAt: '2024-01-01T00:00:01.000Z' }],
    meters: { capsulesRun: 3, containersRun: 1, agentSessions: 0, inputTokens: 0, outputTokens: 0, costUsd: 0, wallTimeMs: 1200 },
    gates: [],
    reviews: [],
    pendingQuestions: [{ id: 'gate-file-edit', question: 'approve the gate file change?' }],
  };
}

function landedOutcome(runId: string): LandingOutcome {
  return {
    status: 'landed',
    summary: 'main fast-forwarded',
    runId,
    repo: '/srv/repo.git',
    target: 'main',
    heads: [{ branch: 'feature/a', sha: sha('a') }],
    endedInPhase: 'merge',
    gates: [],
    meters: { capsulesRun: 9, containersRun: 1, agentSessions: 0, inputTokens: 0, outputTokens: 0, costUsd: 0, wallTimeMs: 900 },
  };
}

describe('API routes with a stand-in Temporal client (no Temporal, no Docker)', () => {
  // One app for the file (making one costs about half a second of schema compiling); the
  // stand-ins are reset before each test instead.
  const temporal = new TemporalStandIn();
  const docker = dockerStandIn();
  let app: FastifyInstance;
  let config: Config;
  let repo: FixtureRepo;
  let env: Record<string, string>;
  const build = async (overrides: Record<string, string> = {}) =>
    await buildApp({ client: temporal.client, docker: docker.docker, config: loadConfig({ ...env, ...overrides }) });

  before(async () => {
    repo = createFixtureRepo({ base: { 'a.txt': 'base\n' }, branches: [{ name: 'feature/a', commits: [{ message: 'a', files: { 'a.txt': 'a\n' } }] }] });
    env = { TARMAC_API_TOKENS: token, TARMAC_REPO_ALLOW: `file://${tmpdir()}`, TARMAC_DATA_DIR: mkdtempSync(join(tmpdir(), 'tarmac-unit-api-')) };
    config = loadConfig(env);
    app = await build();
    // A route that fails the way a bug would: the handler throws an Error with internals in its message.
    app.get('/v1/test-boom', { schema: { hide: true } }, async () => {
      throw new Error('password=hunter2 at /srv/secret/path.ts:12');
    });
    await app.ready();
  });
  beforeEach(() => {
    temporal.reset();
    docker.state.reachable = true;
  });
  after(async () => {
    await app?.close();
  });

  it('every /v1 route in the OpenAPI document answers 401 without a token, with a wrong one and a malformed header, the same way', async () => {
    await assertEveryRouteNeedsToken(app, token);
    assert.equal(
      temporal.startCalls.length + temporal.updateCalls.length + temporal.visibilityQueries.length,
      0,
      'no unauthenticated request reached Temporal',
    );
  });

  it('TARMAC_VALIDATION: 400 naming the field, and nothing is started', async () => {
    const cases: { method: 'POST' | 'GET'; url: string; payload?: Record<string, unknown>; field: string }[] = [
      { method: 'POST', url: '/v1/landings', payload: { branches: ['a'], target: 'main' }, field: 'repo' },
      { method: 'POST', url: '/v1/landings', payload: { repo: repo.url, branches: [], target: 'main' }, field: 'branches' },
      { method: 'POST', url: '/v1/landings', payload: { repo: repo.url, branches: ['a'], target: 'main', extra: 1 }, field: 'extra' },
      { method: 'POST', url: '/v1/landings', payload: { repo: repo.url, branches: ['a..b'], target: 'main' }, field: 'branches[0]' },
      { method: 'POST', url: '/v1/landings', payload: { repo: repo.url, branches: ['feature/a', 'feature/a'], target: 'main' }, field: 'branches' },
      { method: 'POST', url: '/v1/landings', payload: { repo: repo.url, branches: ['main'], target: 'main' }, field: 'branches[0]' },
      { method: 'POST', url: '/v1/landings', payload: { repo: repo.url, branches: ['feature/missing'], target: 'main' }, field: 'branches[0]' },
      { method: 'POST', url: '/v1/landings', payload: { repo: repo.url, branches: ['feature/a'], target: 'trunk' }, field: 'target' },
      { method: 'POST', url: '/v1/landings', payload: { repo: '/nonexistent/tarmac/repo.git', branches: ['feature/a'], target: 'main' }, field: 'repo' },
      { method: 'POST', url: '/v1/reviews', payload: { repo: '/tmp' }, field: 'base' },
      { method: 'POST', url: '/v1/fix-loops', payload: { repo: '/tmp', branch: 'a' }, field: 'request' },
      { method: 'POST', url: '/v1/runs/landing-x/budget', payload: { action: 'grow' }, field: 'action' },
      { method: 'POST', url: '/v1/schedules', payload: { repo: '/tmp', target: 'main', cron: '61 * * * *' }, field: 'cron' },
      { method: 'GET', url: '/v1/landings?phase=flying', field: 'phase' },
      { method: 'GET', url: `/v1/landings?target=${encodeURIComponent("main' OR TarmacKind = 'x")}`, field: 'target' },
    ];
    for (const { method, url, payload, field } of cases) {
      const error = assertError(await app.inject({ method, url, headers: auth, ...(payload === undefined ? {} : { payload }) }), 400, ApiErrorCode.validation);
      assert.ok(error.message.includes(field) || JSON.stringify(error.details ?? {}).includes(field), `${method} ${url}: names ${field}: ${error.message}`);
    }
    assert.deepEqual(temporal.startCalls, [], 'no run was started by a rejected request');
    assert.deepEqual(temporal.visibilityQueries, [], 'a rejected filter never became a query');
  });

  it('TARMAC_RECIPES_INVALID: recipe files that do not load are named (file and field) and nothing is started', async () => {
    const broken = mkdtempSync(join(tmpdir(), 'tarmac-unit-recipes-'));
    cpSync(defaultRecipesDir, broken, { recursive: true });
    const limits = JSON.parse(readFileSync(join(broken, 'limits.json'), 'utf8'));
    limits.session.timeout = 'half an hour';
    writeFileSync(join(broken, 'limits.json'), JSON.stringify(limits));
    const misconfigured = await build({ TARMAC_RECIPES_DIR: broken });
    try {
      const error = assertError(
        await misconfigured.inject({
          method: 'POST',
          url: '/v1/landings',
          headers: auth,
          payload: { repo: repo.url, branches: ['feature/a'], target: 'main' },
        }),
        500,
        ApiErrorCode.recipesInvalid,
      );
      assert.match(error.message, /^recipes\/limits\.json: session\.timeout .*; nothing was started$/);
      assert.deepEqual(temporal.startCalls, []);
    } finally {
      await misconfigured.close();
      rmSync(broken, { recursive: true, force: true });
    }
  });

  it('TARMAC_REPO_ALLOW: a repository outside the allowed prefixes is refused naming repo, before anything is started; TARMAC_RATE_LIMITED on unauthenticated paths', async () => {
    // One app with a strict configuration for both: an allow-list that excludes the fixture, one request a minute.
    const strict = await build({ TARMAC_REPO_ALLOW: 'https://git.example.invalid/acme/', TARMAC_API_RATE_LIMIT: '1' });
    try {
      const error = assertError(
        await strict.inject({ method: 'POST', url: '/v1/landings', headers: auth, payload: { repo: repo.url, branches: ['feature/a'], target: 'main' } }),
        400,
        ApiErrorCode.validation,
      );
      assert.equal(error.details?.field, 'repo');
      assert.match(error.message, /not allowed/);
      assert.deepEqual(temporal.startCalls, []);
      assert.equal((await strict.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
      assertError(await strict.inject({ method: 'GET', url: '/healthz' }), 429, ApiErrorCode.rateLimited);
    } finally {
      await strict.close();
    }
  });

  it('TARMAC_UNKNOWN_MODEL: 400 naming the field and the nearest models, nothing started', async () => {
    const error = assertError(
      await app.inject({
        method: 'POST',
        url: '/v1/landings',
        headers: auth,
        payload: { repo: repo.url, branches: ['feature/a'], target: 'main', agents: { fixer: 'script#fixr' } },
      }),
      400,
      ApiErrorCode.unknownModel,
    );
    assert.equal(error.details?.field, 'agents.fixer');
    assert.ok((error.details?.nearest as string[]).includes('script#fixer'));
    assert.deepEqual(temporal.startCalls, []);
  });

  it('POST /v1/landings is idempotent: 201 starts the landing pinned to the branch heads, the same request again is 200 with the same id', async () => {
    const payload = { repo: repo.url, branches: ['feature/a'], target: 'main' };
    const created = await app.inject({ method: 'POST', url: '/v1/landings', headers: auth, payload });
    assert.equal(created.statusCode, 201, created.body);
    const body = created.json();
    assert.equal(body.duplicate, false);
    assert.equal(body.links.self, `/v1/landings/${body.id}`);
    assert.equal(body.targetSha, branchHead(repo.path, 'main'));
    assert.deepEqual(body.heads, [{ branch: 'feature/a', sha: branchHead(repo.path, 'feature/a') }]);

    assert.equal(temporal.startCalls.length, 1);
    const [start] = temporal.startCalls;
    assert.equal(start!.workflowType, 'landing');
    assert.equal(start!.options.workflowId, body.id);
    assert.equal(start!.options.taskQueue, config.taskQueue);
    const request = start!.options.args![0] as { repo: string; target: string; heads: unknown; requestedTargetSha: string; budget: unknown };
    assert.deepEqual(
      { repo: request.repo, target: request.target, heads: request.heads, requestedTargetSha: request.requestedTargetSha },
      { repo: body.repo, target: 'main', heads: body.heads, requestedTargetSha: body.targetSha },
    );
    assert.ok(request.budget, 'the budget in force is resolved at request time');
    const run = temporal.runs.get(body.id)!;
    const snapshot = (request as unknown as { recipes: { version: string; ladder: string[]; playbooks: unknown; pricing: unknown } }).recipes;
    assert.ok(snapshot.ladder.length > 0 && snapshot.playbooks && snapshot.pricing, 'the recipe snapshot the run will use to its end is in its input');
    assert.equal(run.memo.recipeVersion, snapshot.version, "the memo's recipe version is the snapshot's");
    const attribute = (name: string) => run.searchAttributes.find((pair) => pair.key.name === name)?.value;
    assert.equal(attribute(searchAttributes.kind.name), 'landing');
    assert.deepEqual(attribute(searchAttributes.branch.name), ['feature/a']);

    const again = await app.inject({ method: 'POST', url: '/v1/landings', headers: auth, payload });
    assert.equal(again.statusCode, 200, again.body);
    assert.equal(again.json().id, body.id);
    assert.equal(again.json().duplicate, true);
    assert.equal(temporal.startCalls.length, 2, 'the duplicate asked Temporal, which refused the taken id');
    assert.equal(temporal.runs.size, 1, 'one run for one business key');
  });

  it('POST /v1/landings/:id/retry: a landing that did not land starts again on its own heads under a new id, with the recipes in force now; 409 while it runs or once it landed', async () => {
    const retryRepo = createFixtureRepo({
      base: { 'a.txt': 'base\n' },
      branches: [{ name: 'feature/r', commits: [{ message: 'r', files: { 'r.txt': 'r\n' } }] }],
    });
    const payload = { repo: retryRepo.url, branches: ['feature/r'], target: 'main', agents: { fixer: 'script#fixer' }, budget: { tokens: 1234 } };
    const first = (await app.inject({ method: 'POST', url: '/v1/landings', headers: auth, payload })).json();
    const firstRequest = temporal.startCalls[0]!.options.args![0] as { heads: unknown; budget: { tokens: number }; recipes: { version: string } };

    const running = assertError(await app.inject({ method: 'POST', url: `/v1/landings/${first.id}/retry`, headers: auth }), 409, ApiErrorCode.conflict);
    assert.match(running.message, /still running/);
    assert.equal(temporal.startCalls.length, 1, 'a refused retry starts nothing');

    temporal.complete(first.id, { ...landedOutcome(first.id), status: 'gate-failed', summary: 'gate suite test exited 1' });
    // The branch moves on after the failure: the retry keeps the heads the first run was pinned to.
    retryRepo.git('checkout', '-q', 'feature/r');
    retryRepo.git('commit', '-q', '--allow-empty', '-m', 'later');
    retryRepo.git('push', '-q', 'origin', 'feature/r');
    const retried = await app.inject({ method: 'POST', url: `/v1/landings/${first.id}/retry`, headers: auth });
    assert.equal(retried.statusCode, 201, retried.body);
    const body = retried.json();
    assert.deepEqual(
      { id: body.id, duplicate: body.duplicate, retryOf: body.retryOf, attempt: body.attempt },
      { id: `${first.id}.retry-2`, duplicate: false, retryOf: first.id, attempt: 2 },
    );
    assert.deepEqual(body.heads, first.heads, 'the same heads, not the branch as it is now');
    assert.notEqual(branchHead(retryRepo.path, 'feature/r'), first.heads[0].sha);
    const start = temporal.startCalls.at(-1)!;
    const request = start.options.args![0] as { heads: unknown; agents: unknown; budget: { tokens: number }; recipes: { version: string } };
    assert.deepEqual(request.heads, firstRequest.heads);
    assert.deepEqual(request.agents, { fixer: 'script#fixer' });
    assert.equal(request.budget.tokens, 1234, "the first run's budget");
    const recipes = (await app.inject({ method: 'GET', url: '/v1/recipes', headers: auth })).json();
    assert.equal(request.recipes.version, recipes.version, 'a snapshot of the recipes in force now');
    const retryRun = temporal.runs.get(body.id)!;
    assert.equal(retryRun.memo.retryOf, first.id, 'the memo names the run it retries');
    assert.equal(retryRun.memo.recipeVersion, request.recipes.version, "the memo's version is the snapshot's");
    assert.equal(temporal.runs.get(first.id)!.status, 'COMPLETED', 'the retried run is kept as it was');

    const again = await app.inject({ method: 'POST', url: `/v1/landings/${first.id}/retry`, headers: auth });
    assert.equal(again.statusCode, 200, again.body);
    assert.deepEqual({ id: again.json().id, duplicate: again.json().duplicate }, { id: body.id, duplicate: true }, 'asking again finds the same retry');
    assert.equal(temporal.runs.size, 2);

    temporal.complete(body.id, landedOutcome(body.id));
    const landed = assertError(await app.inject({ method: 'POST', url: `/v1/landings/${body.id}/retry`, headers: auth }), 409, ApiErrorCode.conflict);
    assert.match(landed.message, /landed/);
    assertError(await app.inject({ method: 'POST', url: '/v1/landings/land.nope/retry', headers: auth }), 404, ApiErrorCode.notFound);
    temporal.add({ workflowId: 'fix.some-loop', type: 'fixLoop', status: 'COMPLETED', result: {} });
    assert.match(
      assertError(await app.inject({ method: 'POST', url: '/v1/landings/fix.some-loop/retry', headers: auth }), 404, ApiErrorCode.notFound).message,
      /only landings/,
    );
    assert.equal(temporal.runs.size, 3, 'no refused retry started a run');
  });

  it('GET /v1/landings/:id shows a running landing from its status query, a finished one from its outcome', async () => {
    temporal.add({ workflowId: 'land.running', queries: { [landingStatusQuery.name]: () => statusView('gate') } });
    const running = await app.inject({ method: 'GET', url: '/v1/landings/land.running', headers: auth });
    assert.equal(running.statusCode, 200, running.body);
    const view = running.json();
    assert.equal(view.workflowStatus, 'RUNNING');
    assert.equal(view.phase, 'gate');
    assert.equal(view.steps[0].name, 'capsule.rebaseBranches');
    assert.equal(view.meters.capsulesRun, 3);
    assert.deepEqual(view.pendingQuestions, [{ id: 'gate-file-edit', question: 'approve the gate file change?' }]);
    assert.equal(view.outcome, undefined);

    // Running, but no worker answers (all down, or its host lost): 200 with the phase visibility recorded, and why.
    temporal.add({
      workflowId: 'land.orphan',
      searchAttributes: [{ key: searchAttributes.phase, value: 'gate' }],
      queries: {
        [landingStatusQuery.name]: () => {
          throw new Error('query timed out: no worker polls the queue');
        },
      },
    });
    const orphan = await app.inject({ method: 'GET', url: '/v1/landings/land.orphan', headers: auth });
    assert.equal(orphan.statusCode, 200, orphan.body);
    const { statusUnavailable, ...shown } = orphan.json();
    assert.deepEqual(shown, {
      id: 'land.orphan',
      workflowStatus: 'RUNNING',
      phase: 'gate',
      steps: [],
      gates: [],
      meters: {},
      pendingQuestions: [],
      reviews: [],
    });
    assert.match(statusUnavailable, /^no worker answered the status query \(query timed out: no worker polls the queue\)/);

    // No worker to answer the query: a completed landing still shows its recorded outcome.
    temporal.add({ workflowId: 'land.done', status: 'COMPLETED', result: landedOutcome('land.done') });
    const done = (await app.inject({ method: 'GET', url: '/v1/landings/land.done', headers: auth })).json();
    assert.equal(done.workflowStatus, 'COMPLETED');
    assert.equal(done.outcome.status, 'landed');
    assert.equal(done.phase, 'merge', 'the phase it ended in');
    assert.equal(done.meters.capsulesRun, 9);

    const runView = (await app.inject({ method: 'GET', url: '/v1/runs/land.done', headers: auth })).json();
    assert.deepEqual(
      { type: runView.type, workflowStatus: runView.workflowStatus, status: runView.result.status },
      { type: 'landing', workflowStatus: 'COMPLETED', status: 'landed' },
    );
  });

  it('GET /v1/landings/:id/events streams the journal of a finished landing, then outcome and end', async () => {
    const journal = new RunJournal();
    journal.record({ kind: 'phase', phase: 'validate' });
    journal.record({ kind: 'outcome', status: 'landed', summary: 'main fast-forwarded' });
    journal.finished = true;
    temporal.add({
      workflowId: 'land.events',
      status: 'COMPLETED',
      result: landedOutcome('land.events'),
      queries: { [eventsQuery.name]: ({ after, limit }: { after?: number; limit?: number }) => journal.page(after, limit) },
    });
    const events = await app.inject({ method: 'GET', url: '/v1/landings/land.events/events?logs=false', headers: auth });
    assert.equal(events.statusCode, 200);
    assert.match(String(events.headers['content-type']), /^text\/event-stream/);
    assert.match(events.body, /event: phase\n/);
    assert.match(events.body, /event: outcome\n/);
    assert.match(events.body, /event: end\ndata: \{"workflowStatus":"COMPLETED","outcome":\{"status":"landed"/);
  });

  it('the event stream goes through the framework: a CORS-enabled API sends its CORS headers on the stream too', async () => {
    const journal = new RunJournal();
    journal.record({ kind: 'phase', phase: 'validate' });
    journal.finished = true;
    temporal.add({
      workflowId: 'land.cors',
      status: 'COMPLETED',
      result: landedOutcome('land.cors'),
      queries: { [eventsQuery.name]: ({ after, limit }: { after?: number; limit?: number }) => journal.page(after, limit) },
    });
    const origin = 'https://ops.example.com';
    const cors = await build({ TARMAC_API_CORS_ORIGINS: origin });
    try {
      for (const url of ['/v1/landings/land.cors/events?logs=false', '/v1/runs/land.cors/events?logs=false']) {
        const stream = await cors.inject({ method: 'GET', url, headers: { ...auth, origin } });
        assert.equal(stream.statusCode, 200, url);
        assert.match(String(stream.headers['content-type']), /^text\/event-stream/, url);
        assert.equal(stream.headers['access-control-allow-origin'], origin, `${url}: the CORS header reaches the stream`);
        assert.match(stream.body, /event: phase\n[\s\S]*event: end\n/, url);
        const other = await cors.inject({ method: 'GET', url, headers: { ...auth, origin: 'https://elsewhere.example.com' } });
        assert.equal(other.headers['access-control-allow-origin'], undefined, `${url}: an origin not configured gets no CORS header`);
      }
    } finally {
      await cors.close();
    }
  });

  it('TARMAC_NOT_FOUND (unknown run, unknown route) and TARMAC_METHOD_NOT_ALLOWED with Allow', async () => {
    assertError(await app.inject({ method: 'GET', url: '/v1/landings/landing-nope', headers: auth }), 404, ApiErrorCode.notFound);
    assertError(await app.inject({ method: 'GET', url: '/v1/runs/landing-nope', headers: auth }), 404, ApiErrorCode.notFound);
    assertError(await app.inject({ method: 'GET', url: '/v1/landings/landing-nope/events', headers: auth }), 404, ApiErrorCode.notFound);
    assertError(await app.inject({ method: 'POST', url: '/v1/landings/landing-nope/cancel', headers: auth }), 404, ApiErrorCode.notFound);
    assertError(
      await app.inject({ method: 'POST', url: '/v1/landings/landing-nope/answers', headers: auth, payload: { text: 'yes' } }),
      404,
      ApiErrorCode.notFound,
    );
    assertError(await app.inject({ method: 'GET', url: '/v1/schedules/nightly-nope', headers: auth }), 404, ApiErrorCode.notFound);
    assertError(await app.inject({ method: 'GET', url: '/v1/nothing-here', headers: auth }), 404, ApiErrorCode.notFound);
    const wrongMethod = await app.inject({ method: 'DELETE', url: '/v1/landings', headers: auth });
    assertError(wrongMethod, 405, ApiErrorCode.methodNotAllowed);
    assert.equal(wrongMethod.headers.allow, 'GET, HEAD, POST');
    const wrongOnOne = await app.inject({ method: 'PUT', url: '/v1/landings/land.x', headers: auth });
    assertError(wrongOnOne, 405, ApiErrorCode.methodNotAllowed);
    assert.match(String(wrongOnOne.headers.allow), /GET/);
  });

  it('TARMAC_CONFLICT: answering, cancelling or extending the budget of a finished landing is 409, and no update is sent', async () => {
    temporal.add({ workflowId: 'land.done', status: 'COMPLETED', result: landedOutcome('land.done') });
    assertError(
      await app.inject({ method: 'POST', url: '/v1/landings/land.done/answers', headers: auth, payload: { text: 'yes' } }),
      409,
      ApiErrorCode.conflict,
    );
    assertError(await app.inject({ method: 'POST', url: '/v1/landings/land.done/cancel', headers: auth }), 409, ApiErrorCode.conflict);
    assertError(
      await app.inject({ method: 'POST', url: '/v1/runs/land.done/budget', headers: auth, payload: { action: 'extend', tokens: 1000 } }),
      409,
      ApiErrorCode.conflict,
    );
    assert.deepEqual(temporal.updateCalls, []);
    assert.equal(temporal.runs.get('land.done')!.cancelRequested, false);
  });

  it('a running landing takes an answer (the update), a rejected answer is 400 naming text, a cancel is 202', async () => {
    const answers: unknown[] = [];
    temporal.add({
      workflowId: 'land.asking',
      updates: {
        [answerUpdate.name]: (answer: { text: string }) => {
          if (answer.text === 'later') throw new Error('the landing has no pending question');
          answers.push(answer);
          return { accepted: true, questionId: 'gate-file-edit' };
        },
        [budgetUpdate.name]: () => ({ accepted: true, budget: { tokens: 2000, costUsd: 1, sessions: 4, wallMs: 1000, onExhausted: 'pause' } }),
      },
    });
    const accepted = await app.inject({ method: 'POST', url: '/v1/landings/land.asking/answers', headers: auth, payload: { text: 'approve' } });
    assert.equal(accepted.statusCode, 200, accepted.body);
    assert.deepEqual(accepted.json(), { accepted: true, questionId: 'gate-file-edit' });
    assert.deepEqual(answers, [{ text: 'approve' }]);
    const refused = assertError(
      await app.inject({ method: 'POST', url: '/v1/landings/land.asking/answers', headers: auth, payload: { text: 'later' } }),
      400,
      ApiErrorCode.validation,
    );
    // The same through /v1/runs/:id/answers (any run that asks); a run that takes no answers → 409.
    const viaRuns = await app.inject({
      method: 'POST',
      url: '/v1/runs/land.asking/answers',
      headers: auth,
      payload: { text: 'yes', questionId: 'fixup-1-implementer-1-q1' },
    });
    assert.equal(viaRuns.statusCode, 200, viaRuns.body);
    assert.deepEqual(answers.at(-1), { text: 'yes', questionId: 'fixup-1-implementer-1-q1' });
    temporal.add({ workflowId: 'nightly.x', type: 'nightly' });
    assert.match(
      assertError(await app.inject({ method: 'POST', url: '/v1/runs/nightly.x/answers', headers: auth, payload: { text: 'yes' } }), 409, ApiErrorCode.conflict)
        .message,
      /takes no answers/,
    );
    assert.equal(refused.details?.field, 'text');
    assert.match(refused.message, /no pending question/);
    const budget = await app.inject({ method: 'POST', url: '/v1/runs/land.asking/budget', headers: auth, payload: { action: 'extend', tokens: 1000 } });
    assert.equal(budget.statusCode, 200, budget.body);
    assert.deepEqual(temporal.updateCalls.at(-1), { workflowId: 'land.asking', name: 'budget', arg: { action: 'extend', tokens: 1000 } });
    const cancelled = await app.inject({ method: 'POST', url: '/v1/landings/land.asking/cancel', headers: auth });
    assert.equal(cancelled.statusCode, 202, cancelled.body);
    assert.equal(temporal.runs.get('land.asking')!.cancelRequested, true);
  });

  it('GET /v1/landings turns its filters into one visibility query and lists what it matches, newest first', async () => {
    const created = (
      await app.inject({ method: 'POST', url: '/v1/landings', headers: auth, payload: { repo: repo.url, branches: ['feature/a'], target: 'main' } })
    ).json();
    const canonicalRepo: string = created.repo;
    const landing = (workflowId: string, minutesAgo: number, phase: string, branches: string[]) =>
      temporal.add({
        workflowId,
        startTime: new Date(Date.now() - minutesAgo * 60_000),
        searchAttributes: [
          { key: searchAttributes.kind, value: 'landing' },
          { key: searchAttributes.repo, value: canonicalRepo },
          { key: searchAttributes.target, value: 'main' },
          { key: searchAttributes.branch, value: branches },
          { key: searchAttributes.phase, value: phase },
        ],
      });
    landing('land.older', 10, 'gate', ['feature/a', 'feature/b']);
    landing('land.other-phase', 5, 'review', ['feature/a']);
    landing('land.other-branch', 3, 'gate', ['feature/c']);

    const response = await app.inject({
      method: 'GET',
      url: `/v1/landings?repo=${encodeURIComponent(repo.url)}&target=main&branch=feature%2Fa&phase=gate&status=Running&limit=5`,
      headers: auth,
    });
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(temporal.visibilityQueries, [
      `TarmacKind = 'landing' AND TarmacRepo = '${canonicalRepo}' AND TarmacTarget = 'main' AND TarmacBranch = 'feature/a' AND TarmacPhase = 'gate' AND ExecutionStatus = 'Running'`,
    ]);
    assert.deepEqual(
      response
        .json()
        .landings.map((entry: { id: string; workflowStatus: string; phase: string; branches: string[] }) => [
          entry.id,
          entry.workflowStatus,
          entry.phase,
          entry.branches,
        ]),
      [['land.older', 'RUNNING', 'gate', ['feature/a', 'feature/b']]],
      'only the landing on that repo, target, branch, phase and status',
    );
    const limited = (await app.inject({ method: 'GET', url: '/v1/landings?limit=2', headers: auth })).json().landings;
    assert.deepEqual(
      limited.map((entry: { id: string }) => entry.id),
      [created.id, 'land.other-branch'],
      'newest first, at most limit',
    );
  });

  it('GET /v1/runs lists runs of every kind an operator starts (or one kind), newest first, with kind and parent', async () => {
    const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000);
    const run = (workflowId: string, kind: string, minutes: number, memo: Record<string, unknown> = {}) =>
      temporal.add({
        workflowId,
        startTime: minutesAgo(minutes),
        memo,
        searchAttributes: [
          { key: searchAttributes.kind, value: kind },
          { key: searchAttributes.repo, value: '/srv/repo.git' },
        ],
      });
    run('land.a', 'landing', 9);
    run('land.a.review-1', 'review-panel', 8, { parent: 'land.a' });
    run('fix.b', 'fix-loop', 7);
    run('nightly.c', 'nightly', 6);
    run('land.a.resolver-1', 'agent-session', 5, { parent: 'land.a' });

    const all = await app.inject({ method: 'GET', url: '/v1/runs', headers: auth });
    assert.equal(all.statusCode, 200, all.body);
    assert.deepEqual(
      temporal.visibilityQueries.at(-1),
      "TarmacKind IN ('landing', 'review-panel', 'fix-loop', 'nightly') AND ExecutionStatus != 'ContinuedAsNew'",
    );
    assert.deepEqual(
      all.json().runs.map((entry: { id: string; kind: string; parent?: string }) => [entry.id, entry.kind, entry.parent]),
      [
        ['nightly.c', 'nightly', undefined],
        ['fix.b', 'fix-loop', undefined],
        ['land.a.review-1', 'review-panel', 'land.a'],
        ['land.a', 'landing', undefined],
      ],
      'sessions are left out unless asked for; a child names its parent',
    );
    const sessions = (await app.inject({ method: 'GET', url: '/v1/runs?kind=agent-session&limit=5', headers: auth })).json().runs;
    assert.deepEqual(
      sessions.map((entry: { id: string }) => entry.id),
      ['land.a.resolver-1'],
    );
    assertError(await app.inject({ method: 'GET', url: '/v1/runs?kind=session', headers: auth }), 400, ApiErrorCode.validation);
    assertError(await app.inject({ method: 'GET', url: `/v1/runs?target=${encodeURIComponent("main' OR 1=1")}`, headers: auth }), 400, ApiErrorCode.validation);
  });

  it('TARMAC_UNAVAILABLE: Temporal unreachable → 503 with Retry-After and no internals, nothing started; /healthz says which', async () => {
    temporal.unreachable = true;
    const error = assertError(await app.inject({ method: 'GET', url: '/v1/landings/landing-x', headers: auth }), 503, ApiErrorCode.unavailable);
    assert.doesNotMatch(error.message, /127\.0\.0\.1|grpc|UNAVAILABLE|at \w+ \(/, 'no address, library or stack in the message');
    const listed = await app.inject({ method: 'GET', url: '/v1/landings', headers: auth });
    assertError(listed, 503, ApiErrorCode.unavailable);
    assert.equal(listed.headers['retry-after'], '5', 'says when to retry');
    const start = assertError(
      await app.inject({ method: 'POST', url: '/v1/landings', headers: auth, payload: { repo: repo.url, branches: ['feature/a'], target: 'main' } }),
      503,
      ApiErrorCode.unavailable,
    );
    assert.match(start.message, /nothing was started/);
    assert.equal(temporal.startCalls.length, 1, 'the start was tried');
    assert.equal(temporal.runs.size, 0);
    const health = await app.inject({ method: 'GET', url: '/healthz' });
    assert.equal(health.statusCode, 503);
    assert.deepEqual(health.json(), { status: 'degraded', temporal: 'unreachable', docker: 'ok' });
  });

  it('/healthz: 200 when Temporal and Docker answer, 503 naming Docker when it does not', async () => {
    const ok = await app.inject({ method: 'GET', url: '/healthz' });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.deepEqual(ok.json(), { status: 'ok', temporal: 'ok', docker: 'ok' });
    docker.state.reachable = false;
    const degraded = await app.inject({ method: 'GET', url: '/healthz' });
    assert.equal(degraded.statusCode, 503);
    assert.deepEqual(degraded.json(), { status: 'degraded', temporal: 'ok', docker: 'unreachable' });
  });

  it('TARMAC_INTERNAL: an unexpected error is a 500 that carries neither its message nor a stack', async () => {
    const error = assertError(await app.inject({ method: 'GET', url: '/v1/test-boom', headers: auth }), 500, ApiErrorCode.internal);
    assert.doesNotMatch(JSON.stringify(error), /hunter2|secret|\.ts/);
  });
});
