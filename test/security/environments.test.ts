import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
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
import { createRetentionActivities, type RetentionReport } from '../../activities/janitor/retention';
import type { EnvironmentDeclaration } from '../../core/environment';
import type { EnvironmentRef } from '../../core/environment-types';
import type { GateSuiteResult } from '../../core/types';
import { createFixtureRepo, type FixtureRepo } from '../../infra/fixture-repo';
import { containersCreated } from '../helpers/stack';
import { cloneRepo, git, treeOf } from '../helpers/git';

/**
 * A setup is attacker input (the branch's lockfile's install scripts; a declaration's commands):
 * what it can do to the host, to other environments and to gates — each class with a test that shows
 * it does no harm. Real Docker, real files; no network needed (the egress gateway has its own tests).
 */
describe('environments as an attacker sees them: the setup reaches nothing of the host', () => {
  const docker = new Docker();
  const dataDir = mkdtempSync(join(tmpdir(), 'tarmac-env-attack-'));
  const hostSecret = join(tmpdir(), `tarmac-host-secret-${process.pid}`);
  const logger = new DefaultLogger('WARN');
  const runIds: string[] = [];
  let repo: FixtureRepo;
  let counter = 0;
  const declaration = (setup: string[], env: Record<string, string> = {}): EnvironmentDeclaration => ({
    source: 'gate-file',
    file: '.config/tarmac/land-gate.json',
    setup,
    inputs: ['deps.txt'],
    cache: [],
    env,
    timeoutMs: 60_000,
  });

  before(() => {
    writeFileSync(hostSecret, 'HOST-SECRET-CONTENT\n');
    repo = createFixtureRepo({ base: { 'deps.txt': 'one\n', 'check.sh': 'echo checked\n' } });
  });
  after(async () => {
    for (const runId of runIds) await removeRunContainers(docker, runId);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(hostSecret, { force: true });
  });

  function runOn(setup: string[], env: Record<string, string> = {}, dir = dataDir): PrepareEnvironmentInput {
    counter += 1;
    const runId = `land.env-attack.${process.pid}.${counter}`;
    runIds.push(runId);
    const paths = runPaths(dir, runId);
    mkdirSync(paths.runDir, { recursive: true });
    cloneRepo(repo.path, paths.worktree);
    const sha = git(repo.path, 'rev-parse', 'main');
    return { runId, repo: repo.url, commitSha: sha, baseSha: sha, declaration: declaration(setup, env) };
  }
  async function prepare(activities: ReturnType<typeof createEnvironmentActivities>, input: PrepareEnvironmentInput): Promise<PrepareEnvironmentResult> {
    return await new MockActivityEnvironment({}, { logger }).run<[PrepareEnvironmentInput], PrepareEnvironmentResult, typeof activities.prepareEnvironment>(
      activities.prepareEnvironment,
      input,
    );
  }
  const environments = createEnvironmentActivities({ dataDir, hostId: 'test-host', docker, egressAllow: [] });
  const ok = (result: PrepareEnvironmentResult): EnvironmentRef => {
    if (!result.ok) assert.fail(`the environment failed: ${result.failure.why}\n${result.failure.logTail}`);
    return result.environment;
  };

  it("a link the setup makes to a host file is a link in the environment: a gate following it reads its own container's file system, never the host's", async () => {
    const input = runOn([`ln -s ${hostSecret} leak`, 'ln -s / root-link']);
    const environment = ok(await prepare(environments, input));
    const root = join(environmentsDir(dataDir), environment.key.slice(7), 'root');
    assert.ok(lstatSync(join(root, 'leak')).isSymbolicLink(), 'kept as a link, never resolved on the host');
    const gates = createGateActivities({ dataDir, hostId: 'test-host', docker });
    const suite: RunGateSuiteInput = {
      runId: input.runId,
      repo: input.repo,
      commitSha: input.commitSha,
      treeSha: treeOf(repo.path, 'main'),
      suite: { id: 'probe', run: ['sh', '-c', 'cat leak; ls root-link/; echo probe-done'] },
      image: 'tarmac/runner:bookworm',
      timeoutMs: 60_000,
      round: 1,
      reuse: false,
      environment,
    };
    const result = await new MockActivityEnvironment({}, { logger }).run<[RunGateSuiteInput], GateSuiteResult, typeof gates.runGateSuite>(
      gates.runGateSuite,
      suite,
    );
    const log = readFileSync(join(dataDir, result.logRef), 'utf8');
    assert.match(log, /probe-done/);
    assert.doesNotMatch(log, /HOST-SECRET-CONTENT/);
  });

  it('the setup cannot write its own wrapper, the gateway directory, the root file system or another environment', async () => {
    const other = ok(await prepare(environments, runOn(['echo first > made.txt'], { V: 'other' })));
    const otherRoot = join(environmentsDir(dataDir), other.key.slice(7), 'root');
    const attempts = [
      '/tarmac/setup/run.sh',
      '/tarmac/setup/commands/000',
      '/tarmac/egress/x',
      '/usr/x',
      '/opt/tarmac/egress/node',
      `/tarmac/env/x`,
      `${otherRoot}/made.txt`,
    ];
    // The marker is split in the command, so only a write that worked prints it whole.
    const probe = attempts.map((path) => `(echo pwned > ${path}) 2>/dev/null && echo "WR""OTE ${path}"`).join('; ');
    const result = await prepare(environments, runOn([`${probe}; true`]));
    const environment = ok(result);
    const log = readFileSync(join(dataDir, `runs/${runIds.at(-1)!}/logs/environment-${environment.key.slice(7, 19)}.log`), 'utf8');
    assert.doesNotMatch(log, /^WROTE/m, log);
    assert.equal(readFileSync(join(otherRoot, 'made.txt'), 'utf8'), 'first\n');
  });

  it('a process the setup leaves behind is killed before its files are taken: nothing it writes later is kept, no container is left running', async () => {
    const input = runOn(['(sleep 2; echo late > late.txt) & echo started > started.txt']);
    const environment = ok(await prepare(environments, input));
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const root = join(environmentsDir(dataDir), environment.key.slice(7), 'root');
    assert.deepEqual(readdirSync(root).sort(), ['deps.txt', 'started.txt']);
    const running = await docker.listContainers({ filters: JSON.stringify({ label: [`tarmac.run=${input.runId}`] }) });
    assert.deepEqual(running, [], 'no container of the build still runs');
  });

  it('a setup that writes more than the limit fails (its workspace is a capped tmpfs): nothing reaches the host disk, nothing is kept', async () => {
    const small = createEnvironmentActivities({ dataDir, hostId: 'test-host', docker, egressAllow: [], maxBytes: 8 * 1024 * 1024 });
    const result = await prepare(small, runOn(['head -c 40000000 /dev/zero > big.bin']));
    assert.equal(result.ok, false);
    if (result.ok) return;
    assert.match(result.failure.logTail, /No space left on device/);
    assert.equal(existsSync(join(environmentsDir(dataDir), result.failure.key.slice(7))), false);
    assert.deepEqual(
      readdirSync(environmentsDir(dataDir)).filter((name) => name.includes('.build-') || name.endsWith('.lock')),
      [],
    );
  });

  it('two landings that need the same key at the same time build it once; the other waits and reuses it', async () => {
    const since = Math.floor(Date.now() / 1000) - 1;
    const [first, second] = [runOn(['sleep 1; echo once > once.txt'], { V: 'concurrent' }), runOn(['sleep 1; echo once > once.txt'], { V: 'concurrent' })];
    const [a, b] = (await Promise.all([prepare(environments, first), prepare(environments, second)])).map(ok);
    assert.equal(a!.key, b!.key);
    assert.deepEqual([a!.cache, b!.cache].sort(), ['hit', 'miss']);
    const hex = a!.key.slice(7);
    assert.equal(await containersCreated(docker, since, [`tarmac.environment=${hex}`]), 2, 'one setup container and one that unpacks, for both');
  });

  it('the host keeps environments within TARMAC_ENV_CACHE_MAX: the least recently used go, never one a run still holds', async () => {
    const own = mkdtempSync(join(tmpdir(), 'tarmac-env-collect-'));
    try {
      const tiny = createEnvironmentActivities({ dataDir: own, hostId: 'test-host', docker, egressAllow: [], cacheMaxBytes: 1 });
      const first = runOn(['echo a > a.txt'], { V: 'a' }, own);
      const a = ok(await prepare(tiny, first));
      const b = ok(await prepare(tiny, runOn(['echo b > b.txt'], { V: 'b' }, own)));
      const present = () =>
        readdirSync(environmentsDir(own))
          .filter((name) => /^[0-9a-f]{64}$/.test(name))
          .sort();
      assert.deepEqual(present(), [a.key.slice(7), b.key.slice(7)].sort(), 'both held by runs whose directories exist');
      rmSync(runPaths(own, first.runId).runDir, { recursive: true, force: true });
      const c = ok(await prepare(tiny, runOn(['echo c > c.txt'], { V: 'c' }, own)));
      assert.deepEqual(present(), [b.key.slice(7), c.key.slice(7)].sort(), "a's run is gone: a goes; b and c are held");
      // The retention sweep: an environment no run holds and no landing used within the retention goes; a held one stays, however old.
      const old = new Date(Date.now() - 30 * 86_400_000);
      for (const key of [b.key, c.key]) utimesSync(join(environmentsDir(own), key.slice(7), 'environment.json'), old, old);
      rmSync(runPaths(own, runIds.at(-2)!).runDir, { recursive: true, force: true });
      const retention = createRetentionActivities({ dataDir: own, hostId: 'test-host', client: () => assert.fail('no run of this data dir asks Temporal') });
      const report = await new MockActivityEnvironment({}, { logger }).run<[{ retentionMs: number }], RetentionReport, typeof retention.sweep>(
        retention.sweep,
        { retentionMs: 7 * 86_400_000 },
      );
      assert.deepEqual(
        report.removed.filter((entry) => entry.kind === 'environment').map((entry) => entry.path),
        [join('cache', 'environments', b.key.slice(7))],
      );
      assert.deepEqual(present(), [c.key.slice(7)], 'c is still held by its run');
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  });
});
