import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type Docker from 'dockerode';
import type { FastifyInstance } from 'fastify';
import { environmentsDir, type EnvironmentRecord } from '../../activities/environments/environments';
import { runPaths } from '../../activities/stores/run-store';
import { buildApp } from '../../api/app';
import { FailureCode } from '../../core/failures';
import { loadConfig } from '../../core/node/config';
import type { EnvironmentUse, LandingOutcome } from '../../core/types';
import { assertError } from '../helpers/api-assertions';
import { TemporalStandIn } from '../helpers/temporal-stand-in';

/**
 * GET /v1/environments through `app.inject`: environments written into a temp data dir the way
 * activities/environments/environments.ts leaves them (`cache/environments/<hex>/environment.json` beside
 * `root/`, a run's mark under `runs/<id>/environments/<hex>`), read by its own `listEnvironments`.
 * And a landing's outcome with `environments` going through GET /v1/landings/:id whole.
 */

const token = 'unit-token-environments-0123456789';
const auth = { authorization: `Bearer ${token}` };
const hex = (digit: string) => digit.repeat(64);
const secret = 'npm-token-value-that-must-not-leave';

function record(digit: string, repo: string, runId: string): EnvironmentRecord {
  return {
    version: 1,
    key: `sha256:${hex(digit)}`,
    repo,
    baseImage: 'tarmac/runner:local',
    baseImageId: `sha256:${'e'.repeat(64)}`,
    declaration: {
      source: 'gate-file',
      file: '.config/tarmac/land-gate.json',
      image: 'tarmac/runner:local',
      setup: ['npm ci'],
      inputs: ['package-lock.json', 'package.json', 'vendor'],
      egress: ['registry.example.test'],
      cache: [],
      env: { NPM_TOKEN: secret, NODE_ENV: 'test' },
      timeoutMs: 1_200_000,
    },
    inputs: [
      { path: 'package-lock.json', oid: 'a'.repeat(40), mode: '100644' },
      { path: 'package.json', oid: 'b'.repeat(40), mode: '100644' },
      { path: 'vendor', absent: true },
    ],
    products: ['node_modules'],
    sizeBytes: 3 * 1024 * 1024,
    builtAt: '2026-01-02T03:04:05.000Z',
    builtBy: { runId, hostId: 'host-a' },
    buildMs: 42_000,
    egress: [
      { kind: 'tunnel', host: 'registry.example.test', port: 443, allowed: true, address: '10.9.8.7', status: 200, bytesUp: 1200, bytesDown: 3_400_000 },
      { kind: 'tunnel', host: 'evil.example.test', port: 443, allowed: false, reason: 'not on the allow-list', status: 403, bytesUp: 0, bytesDown: 0 },
    ] as EnvironmentRecord['egress'],
  };
}

/** An environment as a finished build leaves it, last used at `usedAt`; each run in `heldBy` marks it. */
function writeEnvironment(dataDir: string, entry: EnvironmentRecord, usedAt: Date, heldBy: string[] = []): void {
  const dir = join(environmentsDir(dataDir), entry.key.slice('sha256:'.length));
  mkdirSync(join(dir, 'root', 'node_modules'), { recursive: true });
  writeFileSync(join(dir, 'environment.json'), JSON.stringify(entry, null, 2));
  utimesSync(join(dir, 'environment.json'), usedAt, usedAt);
  for (const runId of heldBy) {
    mkdirSync(join(runPaths(dataDir, runId).runDir, 'environments'), { recursive: true });
    writeFileSync(join(runPaths(dataDir, runId).runDir, 'environments', entry.key.slice('sha256:'.length)), `${usedAt.toISOString()}\n`);
  }
}

describe('GET /v1/environments: the environments cached on the API host, from its data dir', () => {
  const temporal = new TemporalStandIn();
  const docker = { ping: async () => 'OK' } as unknown as Docker;
  let app: FastifyInstance;
  let dataDir: string;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'tarmac-unit-environments-'));
    app = await buildApp({
      client: temporal.client,
      docker,
      config: loadConfig({ TARMAC_API_TOKENS: token, TARMAC_REPO_ALLOW: `file://${tmpdir()}`, TARMAC_DATA_DIR: dataDir }),
    });
    await app.ready();
  });
  after(async () => {
    await app?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('no environment yet: an empty list (no cache directory at all)', async () => {
    const response = await app.inject({ method: 'GET', url: '/v1/environments', headers: auth });
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(response.json(), { environments: [] });
  });

  it('without a token, or with a wrong one: 401, nothing listed', async () => {
    writeEnvironment(dataDir, record('1', '/srv/app.git', 'land.app.1'), new Date('2026-01-03T00:00:00Z'));
    assertError(await app.inject({ method: 'GET', url: '/v1/environments' }), 401, FailureCode.unauthorized);
    const wrong = await app.inject({ method: 'GET', url: '/v1/environments', headers: { authorization: 'Bearer not-the-token-0123456789' } });
    assertError(wrong, 401, FailureCode.unauthorized);
    assert.doesNotMatch(wrong.body, /sha256|app\.git/);
  });

  it("lists complete environments most recently used first, with size, last use, the runs holding them, and the declaration's variables by name only", async () => {
    writeEnvironment(dataDir, record('1', '/srv/app.git', 'land.app.1'), new Date('2026-01-03T00:00:00Z'));
    writeEnvironment(dataDir, record('2', '/srv/app.git', 'land.app.2'), new Date('2026-01-05T00:00:00Z'), ['land.app.3', 'land.app.2']);
    writeEnvironment(dataDir, record('3', 'file:///srv/other.git', 'land.other.1'), new Date('2026-01-04T00:00:00Z'));
    // What a listing must never show: a build a killed worker left, its lock, and a record under another key's name.
    mkdirSync(join(environmentsDir(dataDir), `${hex('4')}.build-0a1b2c3d`, 'root'), { recursive: true });
    writeFileSync(join(environmentsDir(dataDir), `${hex('4')}.lock`), '{"pid":1}');
    const misnamed = join(environmentsDir(dataDir), hex('5'));
    mkdirSync(join(misnamed, 'root'), { recursive: true });
    writeFileSync(join(misnamed, 'environment.json'), JSON.stringify(record('6', '/srv/app.git', 'land.app.6')));

    const response = await app.inject({ method: 'GET', url: '/v1/environments', headers: auth });
    assert.equal(response.statusCode, 200, response.body);
    const { environments } = response.json<{ environments: Record<string, unknown>[] }>();
    assert.deepEqual(
      environments.map((entry) => [entry.key, entry.lastUsedAt, entry.usedBy]),
      [
        [`sha256:${hex('2')}`, '2026-01-05T00:00:00.000Z', ['land.app.2', 'land.app.3']],
        [`sha256:${hex('3')}`, '2026-01-04T00:00:00.000Z', []],
        [`sha256:${hex('1')}`, '2026-01-03T00:00:00.000Z', []],
      ],
    );
    assert.deepEqual(environments[0], {
      key: `sha256:${hex('2')}`,
      repo: '/srv/app.git',
      baseImage: 'tarmac/runner:local',
      sizeBytes: 3 * 1024 * 1024,
      builtAt: '2026-01-02T03:04:05.000Z',
      lastUsedAt: '2026-01-05T00:00:00.000Z',
      buildMs: 42_000,
      usedBy: ['land.app.2', 'land.app.3'],
      builtBy: { runId: 'land.app.2' },
      inputs: [
        { path: 'package-lock.json', oid: 'a'.repeat(40) },
        { path: 'package.json', oid: 'b'.repeat(40) },
        { path: 'vendor', absent: true },
      ],
      products: ['node_modules'],
      egress: [
        { host: 'registry.example.test', port: 443, allowed: true, bytesUp: 1200, bytesDown: 3_400_000 },
        { host: 'evil.example.test', port: 443, allowed: false, bytesUp: 0, bytesDown: 0, reason: 'not on the allow-list' },
      ],
      declaration: {
        source: 'gate-file',
        file: '.config/tarmac/land-gate.json',
        image: 'tarmac/runner:local',
        setup: ['npm ci'],
        inputs: ['package-lock.json', 'package.json', 'vendor'],
        egress: ['registry.example.test'],
        envNames: ['NODE_ENV', 'NPM_TOKEN'],
      },
    });
    assert.ok(!response.body.includes(secret), "a declaration's variable values never leave the host");
    assert.ok(!response.body.includes('10.9.8.7') && !response.body.includes('host-a'), 'nor the addresses its setup reached, nor the builder host');
  });

  it('?repo= narrows to one repository, read the way runs record it (canonical); an invalid one is 400 naming repo', async () => {
    const keys = async (url: string) =>
      (await app.inject({ method: 'GET', url, headers: auth })).json<{ environments: { key: string }[] }>().environments.map((entry) => entry.key);
    assert.deepEqual(await keys(`/v1/environments?repo=${encodeURIComponent('/srv/app.git/')}`), [`sha256:${hex('2')}`, `sha256:${hex('1')}`]);
    assert.deepEqual(await keys(`/v1/environments?repo=${encodeURIComponent('file:///srv/other.git')}`), [`sha256:${hex('3')}`]);
    assert.deepEqual(await keys(`/v1/environments?repo=${encodeURIComponent('/srv/nothing.git')}`), []);
    const error = assertError(
      await app.inject({ method: 'GET', url: `/v1/environments?repo=${encodeURIComponent("x' OR 1=1")}`, headers: auth }),
      400,
      FailureCode.validation,
    );
    assert.match(error.message, /repo/);
  });

  it('the OpenAPI document describes the route and its answer', () => {
    const document = app.swagger() as {
      paths: Record<
        string,
        {
          get?: {
            parameters?: { name: string }[];
            responses: Record<
              string,
              { content: Record<string, { schema: { properties: Record<string, { items: { properties: Record<string, unknown> } }> } }> }
            >;
          };
        }
      >;
    };
    const operation = document.paths['/v1/environments']?.get;
    assert.ok(operation, 'GET /v1/environments is in the document');
    assert.deepEqual(
      operation.parameters?.map((parameter) => parameter.name),
      ['repo'],
    );
    const item = operation.responses['200']!.content['application/json']!.schema.properties.environments!.items.properties;
    for (const field of ['key', 'repo', 'sizeBytes', 'lastUsedAt', 'usedBy', 'builtBy', 'inputs', 'products', 'egress', 'declaration'])
      assert.ok(field in item, field);
  });

  it("GET /v1/landings/:id returns the outcome's environments whole (ENV_CACHE, egress, a failed build's reason)", async () => {
    const environments: EnvironmentUse[] = [
      {
        commitSha: 'c'.repeat(40),
        treeSha: 'd'.repeat(40),
        key: `sha256:${hex('2')}`,
        cache: 'miss',
        buildMs: 42_000,
        egress: [{ host: 'registry.example.test', port: 443, allowed: true, bytesUp: 1, bytesDown: 2 }],
      },
      {
        commitSha: 'f'.repeat(40),
        key: `sha256:${hex('7')}`,
        cache: 'miss',
        buildMs: 900,
        egress: [{ host: 'evil.example.test', port: 443, allowed: false, bytesUp: 0, bytesDown: 0, reason: 'not on the allow-list' }],
        failed: 'setup[0] `npm ci` exited 1',
      },
    ];
    const outcome: LandingOutcome = {
      status: 'environment-failed',
      summary: 'setup[0] `npm ci` exited 1',
      runId: 'land.env',
      repo: '/srv/app.git',
      target: 'main',
      heads: [{ branch: 'feature/a', sha: 'a'.repeat(40) }],
      endedInPhase: 'gate',
      gates: [],
      environments,
      meters: { capsulesRun: 2, containersRun: 1, agentSessions: 0, inputTokens: 0, outputTokens: 0, costUsd: 0, wallTimeMs: 50_000 },
    };
    temporal.add({ workflowId: 'land.env', status: 'COMPLETED', result: outcome });
    const response = await app.inject({ method: 'GET', url: '/v1/landings/land.env', headers: auth });
    assert.equal(response.statusCode, 200, response.body);
    const view = response.json<{ outcome: LandingOutcome }>();
    assert.equal(view.outcome.status, 'environment-failed');
    assert.deepEqual(view.outcome.environments, environments);
    assert.equal(view.outcome.summary, outcome.summary, 'the rest of the outcome as before');
    // The new statuses filter the list like the others.
    for (const status of ['environment-failed', 'invalid-environment']) {
      assert.equal((await app.inject({ method: 'GET', url: `/v1/landings?outcome=${status}`, headers: auth })).statusCode, 200);
    }
  });
});
