import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import Docker from 'dockerode';
import { removeRunContainers } from '../../activities/containers/containers';
import { createGateActivities, type RunGateSuiteInput } from '../../activities/containers/gates';
import { runPaths } from '../../activities/stores/run-store';
import type { GateSuiteResult } from '../../core/types';
import { branchHead, createFixtureRepo, gateFile, type FixtureRepo } from '../../infra/fixture-repo';
import { containersCreated, landingFinished, startStack, type Stack } from '../helpers/stack';
import { cloneRepo, git, treeOf } from '../helpers/git';

/** Every file under a directory, relative to it. */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1))
    .sort();
}

/**
 * The gate cache inside `gate.runSuite`, on real Docker and real files (no worker: the activity runs in
 * an activity context of its own). A result is reused only for the same tree, suite definition and
 * runner image ID; anything in doubt (a tampered entry or log) is a miss and the suite runs again.
 */
describe('gate cache: gate.runSuite reuses a sealed result of the same tree, suite and image', () => {
  const docker = new Docker();
  const dataDir = mkdtempSync(join(tmpdir(), 'tarmac-gate-cache-'));
  // An image of this test's own, so it can be rebuilt under the same tag (another ID) without touching the runner's.
  const image = `tarmac-test/gate-cache:${process.pid}`;
  const builtIds: string[] = [];
  /** The image's ID now (the cache keys by it). */
  let imageId = '';
  const build = (generation: number) => {
    execFileSync('docker', ['build', '-q', '-t', image, '-'], {
      input: `FROM tarmac/runner:bookworm\nLABEL tarmac.test.generation=${generation}\n`,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    imageId = execFileSync('docker', ['image', 'inspect', '--format', '{{.Id}}', image], { encoding: 'utf8' }).trim();
    builtIds.push(imageId);
  };
  const gates = createGateActivities({ dataDir, hostId: 'test-host', docker });
  const cacheRoot = join(dataDir, 'cache', 'gates');
  const runIds: string[] = [];
  let repo: FixtureRepo;
  let counter = 0;

  before(() => {
    build(1);
    repo = createFixtureRepo({
      base: { 'check.sh': 'echo "value is $(cat value.txt)"; test "$(cat value.txt)" = good\n', 'value.txt': 'good\n' },
      branches: [
        { name: 'red', commits: [{ message: 'a bad value', files: { 'value.txt': 'bad\n' } }] },
        { name: 'other', commits: [{ message: 'another good tree', files: { 'notes.txt': 'notes\n' } }] },
      ],
    });
  });
  after(async () => {
    for (const runId of runIds) await removeRunContainers(docker, runId);
    for (const id of [...new Set(builtIds)]) execFileSync('docker', ['image', 'rm', '--force', id], { stdio: 'ignore' });
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** A run of its own (workspace cloned from the origin) and the suite's input on `ref`'s tree. */
  function runOn(ref: string, overrides: Partial<RunGateSuiteInput> = {}): RunGateSuiteInput {
    counter += 1;
    const runId = `land.gate-cache.${process.pid}.${counter}`;
    runIds.push(runId);
    const paths = runPaths(dataDir, runId);
    mkdirSync(paths.runDir, { recursive: true });
    cloneRepo(repo.path, paths.worktree);
    const commitSha = git(repo.path, 'rev-parse', ref);
    const treeSha = treeOf(repo.path, ref);
    return { runId, repo: repo.url, commitSha, treeSha, suite: { id: 'test', run: ['sh', 'check.sh'] }, image, timeoutMs: 60_000, round: 1, ...overrides };
  }
  /** Runs the suite step; how many containers the run created while it ran. */
  async function gate(input: RunGateSuiteInput): Promise<{ result: GateSuiteResult; created: number }> {
    const since = Math.floor(Date.now() / 1000) - 1;
    // Warnings only (an entry refused, a seal that failed): the test's output stays readable.
    const result = await new MockActivityEnvironment({}, { logger: new DefaultLogger('WARN') }).run<
      [RunGateSuiteInput],
      GateSuiteResult,
      typeof gates.runGateSuite
    >(gates.runGateSuite, input);
    return { result, created: await containersCreated(docker, since, [`tarmac.run=${input.runId}`]) };
  }
  /** The sealed entry (and its log) of the `test` suite (as `runOn` declares it) on a tree, under the image as it is now. */
  function entryOf(treeSha: string): { json: string; log: string } {
    const dir = join(cacheRoot, treeSha.slice(0, 2), treeSha, 'test');
    const json = readdirSync(dir).filter((name) => name.endsWith(`-${imageId.slice('sha256:'.length)}.json`));
    assert.equal(json.length, 1, `one entry for the tree and image: ${json.join(', ')}`);
    const path = join(dir, json[0]!);
    return { json: path, log: path.replace(/\.json$/, '.log') };
  }

  it('a green suite runs once and is sealed; the same tree in another run is a hit: no container, the sealed log and duration', async () => {
    const first = await gate(runOn('main'));
    assert.deepEqual([first.result.status, first.result.cache, first.created], ['passed', 'miss', 1]);
    const entry = entryOf(first.result.treeSha);
    assert.equal(JSON.parse(readFileSync(entry.json, 'utf8')).result.status, 'passed');
    assert.match(readFileSync(entry.log, 'utf8'), /value is good/, 'the cache keeps the log itself, not a path into the run');

    const second = await gate(runOn('main'));
    assert.deepEqual(
      [second.result.status, second.result.exitCode, second.result.cache, second.result.reattached, second.created],
      ['passed', 0, 'hit', false, 0],
    );
    assert.equal(second.result.durationMs, first.result.durationMs, "the sealed run's duration");
    assert.match(second.result.logRef, new RegExp(`^runs/${second.result.logRef.split('/')[1]}/logs/`), "the log is in the reusing run's own logs");
    assert.notEqual(second.result.logRef.split('/')[1], first.result.logRef.split('/')[1]);
    assert.equal(readFileSync(join(dataDir, second.result.logRef), 'utf8'), readFileSync(join(dataDir, first.result.logRef), 'utf8'), 'the same log, copied');
    // The first run's directory goes (cleanup, retention): the entry stays whole.
    rmSync(runPaths(dataDir, first.result.logRef.split('/')[1]!).runDir, { recursive: true, force: true });
    assert.equal((await gate(runOn('main'))).result.cache, 'hit');
  });

  it('a red result is sealed and reused for its identical tree; another tree runs its own suite', async () => {
    const red = await gate(runOn('red'));
    assert.deepEqual([red.result.status, red.result.exitCode, red.result.cache, red.created], ['failed', 1, 'miss', 1]);
    const again = await gate(runOn('red'));
    assert.deepEqual([again.result.status, again.result.exitCode, again.result.cache, again.created], ['failed', 1, 'hit', 0]);
    assert.match(readFileSync(join(dataDir, again.result.logRef), 'utf8'), /value is bad/);
    const other = await gate(runOn('other'));
    assert.notEqual(other.result.treeSha, red.result.treeSha);
    assert.deepEqual([other.result.status, other.result.cache, other.created], ['passed', 'miss', 1], 'a red result never answers for another tree');
  });

  it('a tampered, truncated or log-less entry is a miss: the suite runs again and seals a sound entry', async () => {
    const entry = entryOf(treeOf(repo.path, 'main'));
    const tamper: [string, () => void][] = [
      [
        'a result edited (red → green would be the attack; here the duration)',
        () => writeFileSync(entry.json, readFileSync(entry.json, 'utf8').replace(/"durationMs": \d+/, '"durationMs": 1')),
      ],
      ['a log edited', () => writeFileSync(entry.log, `${readFileSync(entry.log, 'utf8')}tests passed\n`)],
      ['a log missing', () => rmSync(entry.log)],
      ['a truncated entry', () => writeFileSync(entry.json, readFileSync(entry.json, 'utf8').slice(0, 80))],
      ['an entry for another key', () => writeFileSync(entry.json, readFileSync(entry.json, 'utf8').replace(/"suiteId": "test"/, '"suiteId": "lint"'))],
    ];
    for (const [what, change] of tamper) {
      change();
      const ran = await gate(runOn('main'));
      assert.deepEqual([ran.result.status, ran.result.cache, ran.created], ['passed', 'miss', 1], what);
      const sound = await gate(runOn('main'));
      assert.deepEqual([sound.result.cache, sound.created], ['hit', 0], `${what}: the run sealed a sound entry again`);
    }
  });

  it('the runner image rebuilt under the same tag (another image ID) is a miss', async () => {
    const before = await gate(runOn('main'));
    assert.equal(before.result.cache, 'hit');
    build(2);
    const rebuilt = await gate(runOn('main'));
    assert.deepEqual([rebuilt.result.cache, rebuilt.created], ['miss', 1]);
    assert.deepEqual([(await gate(runOn('main'))).result.cache], ['hit'], 'sealed under the new image ID');
    const other = join(cacheRoot, treeOf(repo.path, 'other').slice(0, 2), treeOf(repo.path, 'other'), 'test');
    assert.equal(readdirSync(other).length, 2, 'the other tree keeps its entry (and log) for the old image');
    assert.equal(readdirSync(dirname(entryOf(treeOf(repo.path, 'main')).json)).length, 4, 'the main tree has one for each image');
  });

  it('a changed suite definition (argv or timeout) is a miss', async () => {
    const argv = await gate(runOn('main', { suite: { id: 'test', run: ['sh', '-c', 'sh check.sh'] } }));
    assert.deepEqual([argv.result.cache, argv.created], ['miss', 1]);
    const timeout = await gate(runOn('main', { suite: { id: 'test', run: ['sh', 'check.sh'], timeout: '2m' }, timeoutMs: 120_000 }));
    assert.deepEqual([timeout.result.cache, timeout.created], ['miss', 1]);
  });

  it('reuse: false runs whatever the cache holds, and its result replaces the sealed one', async () => {
    const input = runOn('red', { reuse: false });
    const fresh = await gate(input);
    assert.deepEqual([fresh.result.status, fresh.result.cache, fresh.created], ['failed', 'miss', 1]);
    const sealed = JSON.parse(readFileSync(entryOf(input.treeSha).json, 'utf8'));
    assert.equal(sealed.sealedBy.runId, input.runId, 'the fresh run sealed the entry');
  });

  it('a container made ahead of the round for a result that is sealed is removed on the hit, not leaked', async () => {
    const input = runOn('main');
    await gates.prepareGateSuite(input);
    assert.equal((await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tarmac.run=${input.runId}`] }) })).length, 1, 'made ahead');
    assert.equal('hit' in (await gates.sealedResult(input)), true, 'the placement would not have made it: the result is sealed');
    const { result } = await gate(input);
    assert.equal(result.cache, 'hit');
    assert.deepEqual(
      await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tarmac.run=${input.runId}`] }) }),
      [],
      'no container of the run is left',
    );
  });

  it('a retried step that finds the entry it sealed itself reports its own run, not a hit', async () => {
    const input = runOn('main', { suite: { id: 'test', run: ['sh', 'check.sh', 'retried'] } });
    const first = await gate(input);
    assert.deepEqual([first.result.cache, first.created], ['miss', 1]);
    // The worker died after the suite ran and sealed, before the step reported: the next attempt finds the entry.
    const retried = await gate(input);
    assert.deepEqual([retried.result.status, retried.result.cache, retried.result.reattached, retried.created], ['passed', 'miss', true, 0]);
  });

  it('a timed-out result is not sealed: it says nothing about the tree', async () => {
    const slow = { id: 'slow', run: ['sleep', '30'] };
    const timedOut = await gate(runOn('main', { suite: slow, timeoutMs: 2_000 }));
    assert.deepEqual([timedOut.result.status, timedOut.result.cache], ['timed-out', 'miss']);
    assert.deepEqual(filesUnder(join(cacheRoot, timedOut.result.treeSha.slice(0, 2), timedOut.result.treeSha, 'slow')), []);
    const again = await gate(runOn('main', { suite: slow, timeoutMs: 2_000 }));
    assert.deepEqual([again.result.status, again.result.cache, again.created], ['timed-out', 'miss', 1]);
  });
});

/**
 * On the real stack: a re-queued landing whose tree was gated already reuses the verdict (no gate
 * container, GATE_CACHE=hit in the step, the outcome and the meters), and a cached red never blocks a
 * tree that differs.
 */
describe('gate cache in landings: a re-queued tree is not gated twice', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(async () => {
    await stack?.stop();
  });

  const gateStep = (view: { steps: { name: string; detail?: string }[] }) => view.steps.find((step) => step.name === 'gate.runSuite:test#1');

  it('a landing refused at the merge and retried on the same tree: GATE_CACHE=hit, no gate container, landed', async () => {
    const repo = createFixtureRepo({
      base: { 'check.sh': 'sleep 2; echo suite ok\n', '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }]) },
      branches: [{ name: 'feature/again', commits: [{ message: 'a feature', files: { 'feature.txt': 'again\n' } }] }],
    });
    // The origin refuses the merge (a cause outside the tree): the landing ends after its gate.
    const hook = join(repo.path, 'hooks', 'pre-receive');
    writeFileSync(hook, '#!/bin/sh\necho "frozen" >&2\nexit 1\n');
    chmodSync(hook, 0o755);
    const began = Math.floor(Date.now() / 1000);
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/again'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const first = await landingFinished(stack, created.body.id);
    assert.equal(first.outcome.failure?.type, 'TARMAC_PUSH_REFUSED', first.outcome.summary);
    assert.deepEqual([first.outcome.gates[0].status, first.outcome.gates[0].cache], ['passed', 'miss']);
    assert.match(gateStep(first)!.detail!, /GATE_CACHE=miss/);
    assert.equal(first.outcome.meters.containersRun, 1);
    assert.equal(
      await containersCreated(stack.docker, began, [`tarmac.run=${created.body.id}`, 'tarmac.role=gate']),
      1,
      'the first run gated: the count sees its container',
    );

    rmSync(hook);
    const since = Math.floor(Date.now() / 1000);
    const retried = await stack.api('POST', `/v1/landings/${created.body.id}/retry`);
    assert.equal(retried.status, 201, JSON.stringify(retried.body));
    const view = await landingFinished(stack, retried.body.id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.equal(view.outcome.treeSha, first.outcome.treeSha, 'the same tree');
    const reused = view.outcome.gates[0];
    assert.deepEqual([reused.status, reused.cache, reused.durationMs], ['passed', 'hit', first.outcome.gates[0].durationMs]);
    assert.match(gateStep(view)!.detail!, /^passed \(exit 0\); GATE_CACHE=hit$/);
    assert.equal(view.outcome.meters.containersRun, 0, 'a reused result is not a container run');
    assert.equal(
      await containersCreated(stack.docker, since, [`tarmac.run=${retried.body.id}`]),
      0,
      'no container at all for the retry: none made ahead, none for the gate',
    );
    assert.equal(
      readFileSync(join(stack.dataDir, reused.logRef), 'utf8'),
      readFileSync(join(stack.dataDir, first.outcome.gates[0].logRef), 'utf8'),
      "the retry's log is the sealed run's",
    );
    assert.equal(branchHead(repo.path, 'main'), view.outcome.mergedSha);
  });

  it("a red landing re-queued reuses its round's red without a container; a fixed branch is another tree: it runs and lands", async () => {
    // Green on the target, red on the branch: a red of the branch's own (not one the target has too).
    const repo = createFixtureRepo({
      base: {
        'check.sh': 'echo "value is $(cat value.txt)"; test "$(cat value.txt)" = good\n',
        'value.txt': 'good\n',
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], { fixup: { maxRounds: 0 } }),
      },
      branches: [{ name: 'feature/red', commits: [{ message: 'a feature that breaks the value', files: { 'feature.txt': 'red\n', 'value.txt': 'bad\n' } }] }],
    });
    /** The round's own gate container of a run on a tree (a run settling a red result has steps of its own). */
    const roundContainers = (since: number, runId: string, treeSha: string) =>
      containersCreated(stack.docker, since, [`tarmac.run=${runId}`, `tarmac.step=gate-test-${treeSha.slice(0, 12)}-r1`]);
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/red'], target: 'main' });
    const red = await landingFinished(stack, created.body.id);
    assert.equal(red.outcome.status, 'gate-failed', red.outcome.summary);
    assert.deepEqual([red.outcome.gates[0].exitCode, red.outcome.gates[0].cache], [1, 'miss']);

    const since = Math.floor(Date.now() / 1000);
    const retried = await stack.api('POST', `/v1/landings/${created.body.id}/retry`);
    assert.equal(retried.status, 201, JSON.stringify(retried.body));
    const again = await landingFinished(stack, retried.body.id);
    assert.equal(again.outcome.status, 'gate-failed', again.outcome.summary);
    assert.equal(again.outcome.treeSha, red.outcome.treeSha);
    assert.deepEqual([again.outcome.gates[0].exitCode, again.outcome.gates[0].cache], [1, 'hit']);
    assert.match(gateStep(again)!.detail!, /^failed \(exit 1\); GATE_CACHE=hit/);
    assert.equal(await roundContainers(since, retried.body.id, again.outcome.treeSha), 0, "the identical red tree's round burnt no container");
    assert.match(readFileSync(join(stack.dataDir, again.outcome.gates[0].logRef), 'utf8'), /value is bad/, 'its log says why');

    // The branch is fixed: another tree, so the sealed red says nothing about it.
    repo.git('checkout', '-q', 'feature/red');
    writeFileSync(join(repo.clone, 'value.txt'), 'good\n');
    repo.git('add', 'value.txt');
    repo.git('-c', 'user.name=t', '-c', 'user.email=t@t.invalid', 'commit', '-q', '-m', 'the fix');
    repo.git('push', '-q', 'origin', 'feature/red');
    const fixedSince = Math.floor(Date.now() / 1000);
    const fixed = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/red'], target: 'main' });
    assert.equal(fixed.status, 201, JSON.stringify(fixed.body));
    const landed = await landingFinished(stack, fixed.body.id);
    assert.equal(landed.outcome.status, 'landed', landed.outcome.summary);
    assert.notEqual(landed.outcome.treeSha, red.outcome.treeSha);
    assert.deepEqual([landed.outcome.gates[0].status, landed.outcome.gates[0].cache], ['passed', 'miss']);
    assert.equal(await roundContainers(fixedSince, fixed.body.id, landed.outcome.treeSha), 1, 'its gate ran');
  });
});
