import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import Docker from 'dockerode';
import { removeRunContainers } from '../../activities/containers/containers';
import {
  createEnvironmentActivities,
  environmentsDir,
  type PrepareEnvironmentInput,
  type PrepareEnvironmentResult,
} from '../../activities/environments/environments';
import { createGateActivities, type RunGateSuiteInput } from '../../activities/containers/gates';
import { runPaths } from '../../activities/stores/run-store';
import type { EnvironmentDeclaration } from '../../core/environment';
import type { EnvironmentRef } from '../../core/environment-types';
import type { GateSuiteResult } from '../../core/types';
import { createFixtureRepo, type FixtureRepo } from '../../infra/fixture-repo';
import { containersCreated } from '../helpers/stack';
import { npmRegistry, npmLockfile } from '../helpers/registries';
import { cloneRepo, git, treeOf } from '../helpers/git';

/**
 * Environments on the real stack's parts (issue 24): real Docker, the runner image's npm, the real
 * npm registry through the egress gateway (its host taken from the machine's npm configuration), real
 * git. The activities run in an activity context of their own (no worker), as the gate cache's test does.
 */
describe('environments: built once from the inputs with audited egress, reused by key, used by gates', () => {
  const docker = new Docker();
  const dataDir = mkdtempSync(join(tmpdir(), 'tarmac-environments-'));
  const registry = npmRegistry();
  const environments = createEnvironmentActivities({ dataDir, hostId: 'test-host', docker, egressAllow: [registry.host] });
  const gates = createGateActivities({ dataDir, hostId: 'test-host', docker });
  const runIds: string[] = [];
  let repo: FixtureRepo;
  let counter = 0;
  const declaration: EnvironmentDeclaration = {
    source: 'gate-file',
    file: '.config/tarmac/land-gate.json',
    setup: [`npm ci --no-audit --no-fund --registry ${registry.url}`],
    inputs: ['package.json', 'package-lock.json'],
    cache: [],
    env: { NODE_ENV: 'test' },
    timeoutMs: 5 * 60_000,
  };

  before(() => {
    const pkg = (deps: Record<string, string>) =>
      `${JSON.stringify({ name: 'env-fixture', version: '1.0.0', private: true, scripts: { test: "node -e \"console.log('left-pad says', require('left-pad')('x', 3, '-'))\"" }, dependencies: deps }, null, 2)}\n`;
    const lockFor = (deps: Record<string, string>) => npmLockfile(pkg(deps));
    const one = { 'left-pad': '1.3.0' };
    const lock = lockFor(one);
    // The same package at a version the registry does not have, in package.json and the lockfile alike.
    const missing = lock.replaceAll('1.3.0', '99.0.0');
    repo = createFixtureRepo({
      base: { 'package.json': pkg(one), 'package-lock.json': lock, 'README.md': 'fixture\n' },
      branches: [
        { name: 'readme', commits: [{ message: 'docs only', files: { 'README.md': 'more docs\n' } }] },
        {
          name: 'missing-version',
          commits: [{ message: 'a version that does not exist', files: { 'package-lock.json': missing, 'package.json': pkg({ 'left-pad': '99.0.0' }) } }],
        },
        { name: 'tracked-node-modules', commits: [{ message: 'tracks node_modules/keep.txt', files: { 'node_modules/keep.txt': 'tracked\n' } }] },
      ],
    });
  });
  after(async () => {
    for (const runId of runIds) await removeRunContainers(docker, runId);
    if (!process.env.TARMAC_TEST_KEEP) rmSync(dataDir, { recursive: true, force: true });
  });

  /** A run of its own (workspace cloned from the origin) on `ref`. */
  function runOn(ref: string, change: Partial<EnvironmentDeclaration> = {}): PrepareEnvironmentInput {
    counter += 1;
    const runId = `land.environments.${process.pid}.${counter}`;
    runIds.push(runId);
    const paths = runPaths(dataDir, runId);
    mkdirSync(paths.runDir, { recursive: true });
    cloneRepo(repo.path, paths.worktree);
    return {
      runId,
      repo: repo.url,
      commitSha: git(repo.path, 'rev-parse', ref),
      baseSha: git(repo.path, 'rev-parse', 'main'),
      declaration: { ...declaration, ...change },
    };
  }
  const logger = new DefaultLogger('WARN');
  async function prepare(input: PrepareEnvironmentInput): Promise<{ result: PrepareEnvironmentResult; created: number }> {
    const since = Math.floor(Date.now() / 1000) - 1;
    const result = await new MockActivityEnvironment({}, { logger }).run<
      [PrepareEnvironmentInput],
      PrepareEnvironmentResult,
      typeof environments.prepareEnvironment
    >(environments.prepareEnvironment, input);
    return { result, created: await containersCreated(docker, since, [`tarmac.run=${input.runId}`]) };
  }
  async function gate(input: PrepareEnvironmentInput, environment: EnvironmentRef, run: string[], id = 'test'): Promise<GateSuiteResult> {
    const suiteInput: RunGateSuiteInput = {
      runId: input.runId,
      repo: input.repo,
      commitSha: input.commitSha,
      treeSha: treeOf(repo.path, input.commitSha),
      suite: { id, run },
      image: 'tarmac/runner:bookworm',
      timeoutMs: 60_000,
      round: 1,
      reuse: false,
      environment,
    };
    return await new MockActivityEnvironment({}, { logger }).run<[RunGateSuiteInput], GateSuiteResult, typeof gates.runGateSuite>(
      gates.runGateSuite,
      suiteInput,
    );
  }
  const ok = (result: PrepareEnvironmentResult): EnvironmentRef => {
    if (!result.ok) assert.fail(`the environment failed: ${result.failure.why}\n${result.failure.logTail}`);
    return result.environment;
  };

  let built: EnvironmentRef;
  it('a cold build runs the setup once with egress to the registry only, and records every connection', async () => {
    const input = runOn('main');
    const { result, created } = await prepare(input);
    built = ok(result);
    assert.equal(built.cache, 'miss');
    assert.equal(created, 2, 'the setup container and the one that unpacks its files');
    assert.deepEqual(built.products, ['node_modules']);
    assert.ok(built.egress.length > 0, 'the setup reached the registry');
    for (const entry of built.egress) assert.deepEqual([entry.host, entry.allowed], [registry.host, true]);
    assert.ok(built.egress.some((entry) => entry.bytesDown > 0));
    assert.ok(existsSync(join(environmentsDir(dataDir), built.key.slice(7), 'root', 'node_modules', 'left-pad', 'package.json')));
  });

  it('the same inputs in another run (another tree) are a hit: no container, the same key', async () => {
    const { result, created } = await prepare(runOn('readme'));
    const hit = ok(result);
    assert.deepEqual([hit.cache, hit.key, created], ['hit', built.key, 0]);
  });

  it("a gate runs in it: the tree as committed, the setup's node_modules linked in, no network from inside", async () => {
    const input = runOn('readme');
    const environment = ok((await prepare(input)).result);
    const passed = await gate(input, environment, ['npm', 'test']);
    const log = readFileSync(join(dataDir, passed.logRef), 'utf8');
    assert.equal(passed.status, 'passed', log);
    assert.match(log, /left-pad says --x/);
    const snapshot = join(runPaths(dataDir, input.runId).snapshots);
    const linked = execFileSync('find', [snapshot, '-maxdepth', '2', '-name', 'node_modules'], { encoding: 'utf8' }).trim();
    assert.equal(readlinkSync(linked), '/tarmac/env/node_modules');
    // From inside the gate: no way out (network none), and the environment's files are read-only.
    const probe = await gate(
      input,
      environment,
      [
        'node',
        '-e',
        `require('net').connect(443, '${registry.address}').on('connect', () => process.exit(3)).on('error', (e) => { console.log('no network:', e.code); require('fs').writeFile('/tarmac/env/node_modules/x', 'y', (w) => { console.log('write:', w && w.code); process.exit(w ? 0 : 4); }); })`,
      ],
      'probe',
    );
    const probeLog = readFileSync(join(dataDir, probe.logRef), 'utf8');
    assert.equal(probe.status, 'passed', probeLog);
    assert.match(probeLog, /no network: (ENETUNREACH|EHOSTUNREACH|ECONNREFUSED)/);
    assert.match(probeLog, /write: EROFS/);
  });

  it('a tracked path wins over a setup output of the same name: nothing is linked over it', async () => {
    const input = runOn('tracked-node-modules');
    const environment = ok((await prepare(input)).result);
    assert.equal(environment.cache, 'hit', 'same inputs');
    const result = await gate(input, environment, ['sh', '-c', 'cat node_modules/keep.txt; test ! -e node_modules/left-pad']);
    assert.equal(result.status, 'passed', readFileSync(join(dataDir, result.logRef), 'utf8'));
    const snapshotEntry = execFileSync('find', [runPaths(dataDir, input.runId).snapshots, '-maxdepth', '2', '-name', 'node_modules'], {
      encoding: 'utf8',
    }).trim();
    assert.ok(lstatSync(snapshotEntry).isDirectory(), 'the tracked directory, not a link');
  });

  it("a lockfile naming a version that does not exist fails the build, quoting npm's error; nothing is kept", async () => {
    const { result } = await prepare(runOn('missing-version'));
    assert.equal(result.ok, false);
    if (result.ok) return;
    assert.match(result.failure.why, /^setup\[0\] `npm ci .*` exited [1-9]/);
    assert.match(result.failure.logTail, /npm (ERR|error)/);
    assert.match(result.failure.logTail, /404|ETARGET|E404/);
    assert.equal(result.failure.branchChangedInputs, true, 'the branch changed the lockfile');
    assert.equal(existsSync(join(environmentsDir(dataDir), result.failure.key.slice(7))), false);
  });

  it("a host off the allow-list is refused and named; the declaration cannot widen the operator's list", async () => {
    const { result } = await prepare(runOn('main', { setup: ['npm view left-pad version --registry https://example.com/'], egress: ['example.com'] }));
    assert.equal(result.ok, false);
    if (result.ok) return;
    assert.deepEqual(result.failure.refused, ['example.com:443']);
    assert.deepEqual(result.failure.refusedDeclared, ['example.com']);
    assert.ok(result.failure.egress.some((entry) => entry.host === 'example.com' && !entry.allowed && entry.reason));
  });

  it("the setup never sees the rest of the tree, and the worker's environment never enters it", async () => {
    process.env.TARMAC_TEST_SECRET_FOR_SETUP = 'must-not-leak';
    try {
      const { result } = await prepare(runOn('main', { setup: ['ls -A > /tmp/seen && mv /tmp/seen seen.txt; env > env.txt'], inputs: ['package.json'] }));
      const environment = ok(result);
      const root = join(environmentsDir(dataDir), environment.key.slice(7), 'root');
      assert.deepEqual(readFileSync(join(root, 'seen.txt'), 'utf8').trim().split('\n').sort(), ['package.json']);
      const env = readFileSync(join(root, 'env.txt'), 'utf8');
      assert.doesNotMatch(env, /must-not-leak|ANTHROPIC|OPENAI|TARMAC_API/);
      assert.match(env, /HTTPS_PROXY=http:\/\/127\.0\.0\.1:3128/);
    } finally {
      delete process.env.TARMAC_TEST_SECRET_FOR_SETUP;
    }
  });
});
