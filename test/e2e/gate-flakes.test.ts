import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { suiteQuarantineId } from '../../core/node/quarantine-id';
import { defaultRecipesDir } from '../../core/node/recipes';
import type { GateLimits } from '../../core/recipe-schemas';
import { branchHead, createFixtureRepo, gateFile, type Files } from '../../infra/fixture-repo';
import { containersCreated, landingFinished, startStack, waitFor, type Stack } from '../helpers/stack';

/**
 * Flakes settled by evidence (issue 17), on the real stack: a red suite is run again on the
 * identical tree and on the base its head is rebased onto, and the recipe's limits.gate decides what
 * follows. The flaky suite is honest and deterministic: it fails on the first run of a tree in a
 * round and passes on the re-run (TARMAC_GATE_ATTEMPT, which the gate runner sets: 1, then 2 for the
 * re-run that settles a red) — the same shape as a test that fails once under load.
 */
describe('gate flakes settled by evidence: flaky, pre-existing, failed; quarantines', () => {
  let stack: Stack;
  const recipesDir = mkdtempSync(join(tmpdir(), 'tarmac-test-recipes-'));
  /** The recipes the next landing starts with: the shipped limits with this `gate`. */
  const setGateLimits = (gate: GateLimits) => {
    const limits = JSON.parse(readFileSync(join(defaultRecipesDir, 'limits.json'), 'utf8'));
    writeFileSync(join(recipesDir, 'limits.json'), `${JSON.stringify({ ...limits, gate }, null, 2)}\n`);
  };
  before(async () => {
    cpSync(defaultRecipesDir, recipesDir, { recursive: true });
    stack = await startStack({ recipesDir });
  });
  after(async () => {
    await stack?.stop();
    rmSync(recipesDir, { recursive: true, force: true });
  });

  const flakyCheck =
    'if [ "$TARMAC_GATE_ATTEMPT" = 1 ]; then echo "first run of this tree: fails"; exit 3; fi\necho "run $TARMAC_GATE_ATTEMPT of this tree: passes"\n';
  const gate = (extra: Record<string, unknown> = {}) => gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], extra);
  /**
   * A repo whose gate runs check.sh; the branch adds one file (or the files given). Each test's head
   * tree is its own: the gate cache reuses a sealed result of a tree gated before, in any landing.
   */
  const repoWith = (check: string, base: Files = {}, branch: Files = { 'feature.txt': 'f\n' }, gateExtra: Record<string, unknown> = {}) =>
    createFixtureRepo({
      base: { 'check.sh': check, '.config/tarmac/land-gate.json': gate(gateExtra), ...base },
      branches: [{ name: 'feature/f', commits: [{ message: 'feature', files: branch }] }],
    });
  async function land(repo: { url: string }, branch = 'feature/f'): Promise<string> {
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: [branch], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return created.body.id as string;
  }
  const log = (logRef: string) => readFileSync(join(stack.dataDir, logRef), 'utf8');
  const quarantines = async (query: string) => {
    const response = await stack.api('GET', `/v1/quarantines${query}`);
    assert.equal(response.status, 200, JSON.stringify(response.body));
    return response.body.quarantines as {
      repo: string;
      target: string;
      suiteId: string;
      since: string;
      until: string;
      settled: string;
      landingId: string;
      treeSha: string;
      logRefs: string[];
    }[];
  };
  const query = (repo: { url: string }) => `?repo=${encodeURIComponent(repo.url)}&target=main`;

  it('red, then green on the identical tree → flaky; under retry the landing lands with both logs recorded, no fixup round', async () => {
    setGateLimits({ flaky: 'retry', preExisting: 'allow' });
    const repo = repoWith(flakyCheck);
    const id = await land(repo);
    const view = await landingFinished(stack, id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.equal(branchHead(repo.path, 'main'), view.outcome.mergedSha, 'the target moved to the gated head');
    assert.equal(view.outcome.fixLoops, undefined, 'no fixup round: the flake did not evict the landing');
    const [red, ...others] = view.outcome.gates;
    assert.equal(others.length, 0, 'one result in the round: the evidence runs are on it, not rounds of their own');
    assert.deepEqual(
      { status: red.status, exitCode: red.exitCode, settled: red.settled, excused: red.excused, round: red.round },
      { status: 'failed', exitCode: 3, settled: 'flaky', excused: { by: 'retry' }, round: 1 },
    );
    const [again, onBase] = red.evidence;
    assert.deepEqual(
      { on: again.on, treeSha: again.treeSha, commitSha: again.commitSha, status: again.status },
      { on: 'same-tree', treeSha: red.treeSha, commitSha: view.outcome.headSha, status: 'passed' },
    );
    assert.deepEqual({ on: onBase.on, commitSha: onBase.commitSha }, { on: 'base', commitSha: view.outcome.targetSha });
    assert.notEqual(onBase.treeSha, red.treeSha, 'the base is another tree');
    // Both runs' logs are kept and linked: the red's and the re-run's, each its own file.
    assert.match(log(red.logRef), /first run of this tree: fails/);
    assert.match(log(again.logRef), /run 2 of this tree: passes/);
    assert.notEqual(again.logRef, red.logRef);
    assert.match(view.outcome.summary, /0 of 1 suite\(s\) green, test flaky \(red, then green when run again on the same tree\)/);
    // The view (status and outcome) carries the same record through the API schema.
    assert.deepEqual(
      view.gates[0].evidence.map((run: { on: string }) => run.on),
      ['same-tree', 'base'],
    );
    const names = view.steps.map((step: { name: string }) => step.name);
    for (const step of ['gate.runSuite:test#1', 'quarantine.active', 'capsule.treeOf', 'gate.runSuite:test#1.same-tree', 'gate.runSuite:test#1.base'])
      assert.ok(names.includes(step), `step ${step} in ${names.join(', ')}`);
    assert.deepEqual(await quarantines(query(repo)), [], 'retry quarantines nothing');
  });

  it('red on the identical tree and on the base → pre-existing; under allow the landing lands', async () => {
    setGateLimits({ flaky: 'retry', preExisting: 'allow' });
    const repo = repoWith('if [ -e BROKEN ]; then echo "BROKEN is here"; exit 4; fi\n', { BROKEN: 'the target is red already\n' });
    const id = await land(repo);
    const view = await landingFinished(stack, id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    const [red] = view.outcome.gates;
    assert.deepEqual({ settled: red.settled, excused: red.excused }, { settled: 'pre-existing', excused: { by: 'pre-existing' } });
    assert.deepEqual(
      red.evidence.map((run: { on: string; status: string }) => `${run.on}:${run.status}`),
      ['same-tree:failed', 'base:failed'],
    );
    for (const run of red.evidence) assert.match(log(run.logRef), /BROKEN is here/);
    assert.match(view.outcome.summary, /test red on the base too \(pre-existing\)/);
  });

  it('the shipped recipe blocks a pre-existing red (recorded so); retried on the same tree, the cached red is not run again and the base comes from the cache: no container', async () => {
    const shipped = JSON.parse(readFileSync(join(defaultRecipesDir, 'limits.json'), 'utf8')) as { gate: GateLimits };
    assert.equal(shipped.gate.preExisting, 'fail');
    setGateLimits(shipped.gate);
    const repo = repoWith(
      'if [ -e BROKEN ]; then echo "BROKEN is here"; exit 4; fi\n',
      { BROKEN: 'red before this landing\n' },
      { 'other.txt': 'o\n' },
      { fixup: { maxRounds: 0 } },
    );
    const id = await land(repo);
    const blocked = await landingFinished(stack, id);
    assert.equal(blocked.outcome.status, 'gate-failed', blocked.outcome.summary);
    const [red] = blocked.outcome.gates;
    assert.deepEqual({ settled: red.settled, excused: red.excused }, { settled: 'pre-existing', excused: undefined });
    assert.match(blocked.outcome.summary, /gate suite test exited 4 \(red on the base too, but the recipe's limits\.gate\.preExisting is fail\)/);

    const since = Math.floor(Date.now() / 1000);
    const retried = await stack.api('POST', `/v1/landings/${id}/retry`);
    assert.equal(retried.status, 201, JSON.stringify(retried.body));
    const again = await landingFinished(stack, retried.body.id);
    assert.equal(again.outcome.status, 'gate-failed', again.outcome.summary);
    const [cached] = again.outcome.gates;
    assert.deepEqual(
      { treeSha: cached.treeSha, cache: cached.cache, settled: cached.settled },
      { treeSha: red.treeSha, cache: 'hit', settled: 'pre-existing' },
    );
    assert.deepEqual(
      cached.evidence.map((run: { on: string; status: string; cache?: string }) => `${run.on}:${run.status}:${run.cache}`),
      ['same-tree:failed:hit', 'base:failed:hit'],
    );
    assert.equal(
      await containersCreated(stack.docker, since, [`tarmac.run=${retried.body.id}`]),
      0,
      'a tree known red burns no container, nor does its base gated before',
    );
  });

  it('red on the identical tree, green on the base → failed: the landing broke it, and it blocks as before', async () => {
    setGateLimits({ flaky: 'retry', preExisting: 'allow' });
    const repo = repoWith(
      'grep -qx ok ok.txt || { echo "ok.txt is not ok"; exit 5; }\n',
      { 'ok.txt': 'ok\n' },
      { 'ok.txt': 'broken\n' },
      { fixup: { maxRounds: 0 } },
    );
    const target = branchHead(repo.path, 'main');
    const id = await land(repo);
    const view = await landingFinished(stack, id);
    assert.equal(view.outcome.status, 'gate-failed', view.outcome.summary);
    assert.equal(branchHead(repo.path, 'main'), target, 'nothing merged');
    const [red] = view.outcome.gates;
    assert.equal(red.settled, 'failed');
    assert.equal(red.excused, undefined);
    assert.deepEqual(
      red.evidence.map((run: { on: string; status: string }) => `${run.on}:${run.status}`),
      ['same-tree:failed', 'base:passed'],
    );
    assert.match(view.outcome.summary, /gate suite test exited 5 \(red again on the same tree, green on the base: the landing broke it\)/);
    for (const ref of [red.logRef, ...red.evidence.map((run: { logRef: string }) => run.logRef)])
      assert.ok(view.outcome.summary.includes(ref), `the summary links ${ref}`);
  });

  it('quarantine: recorded and listed by the API; while in force a red of that suite blocks no landing (no evidence spent); lifted early on request', async () => {
    setGateLimits({ flaky: 'quarantine', preExisting: 'fail', quarantineFor: '10m' });
    const repo = createFixtureRepo({
      base: {
        'check.sh': `if [ -e RED ]; then echo "RED is here"; exit 6; fi\n${flakyCheck}`,
        '.config/tarmac/land-gate.json': gate({ fixup: { maxRounds: 0 } }),
      },
      branches: [
        { name: 'feature/f', commits: [{ message: 'feature', files: { 'feature.txt': 'f\n' } }] },
        { name: 'feature/red', commits: [{ message: 'red', files: { RED: 'always red\n' } }] },
      ],
    });
    const first = await landingFinished(stack, await land(repo));
    assert.equal(first.outcome.status, 'landed', first.outcome.summary);
    const [red] = first.outcome.gates;
    assert.equal(red.settled, 'flaky');
    assert.equal(red.excused.by, 'quarantine');
    const listed = await quarantines(query(repo));
    assert.equal(listed.length, 1, JSON.stringify(listed));
    const [entry] = listed;
    assert.deepEqual(
      {
        suiteId: entry!.suiteId,
        target: entry!.target,
        settled: entry!.settled,
        landingId: entry!.landingId,
        treeSha: entry!.treeSha,
        until: entry!.until,
        logRefs: entry!.logRefs,
      },
      {
        suiteId: 'test',
        target: 'main',
        settled: 'flaky',
        landingId: first.outcome.runId,
        treeSha: red.treeSha,
        until: red.excused.until,
        logRefs: [red.logRef, ...red.evidence.map((run: { logRef: string }) => run.logRef)],
      },
    );
    assert.equal(Date.parse(entry!.until) - Date.parse(entry!.since), 10 * 60_000, 'quarantineFor from the recipe');
    // Every target's quarantines (visibility lists the running entities; it may lag a moment).
    await waitFor(
      () => quarantines(''),
      (all) => all.some((found) => found.repo === entry!.repo && found.suiteId === 'test'),
      30_000,
      'the quarantine in the unfiltered list',
    );

    // A branch that makes the suite red for good: the quarantine excuses it, and no evidence run is spent.
    const second = await landingFinished(stack, await land(repo, 'feature/red'));
    assert.equal(second.outcome.status, 'landed', second.outcome.summary);
    const [quarantined] = second.outcome.gates;
    assert.deepEqual(
      { status: quarantined.status, excused: quarantined.excused, settled: quarantined.settled, evidence: quarantined.evidence },
      { status: 'failed', excused: { by: 'quarantine', until: entry!.until }, settled: undefined, evidence: undefined },
    );
    assert.ok(
      !second.steps.some((step: { name: string }) => step.name.endsWith('.same-tree') || step.name.endsWith('.base')),
      'no evidence run for a quarantined suite',
    );
    assert.match(second.outcome.summary, /test red but quarantined on the target/);

    // Lifted early: gone from the list, and lifting again finds nothing.
    const lifted = await stack.api('DELETE', `/v1/quarantines/test${query(repo)}`);
    assert.equal(lifted.status, 200, JSON.stringify(lifted.body));
    assert.deepEqual(await quarantines(query(repo)), []);
    const again = await stack.api('DELETE', `/v1/quarantines/test${query(repo)}`);
    assert.equal(again.status, 404, JSON.stringify(again.body));
    assert.equal(again.body.error.code, 'TARMAC_NOT_FOUND');
    const bad = await stack.api('GET', '/v1/quarantines?target=-x');
    assert.equal(bad.status, 400);
    assert.match(JSON.stringify(bad.body), /target/);
  });

  it('a quarantine expires by itself: listed while in force, then gone, and its entity ends', async () => {
    setGateLimits({ flaky: 'quarantine', quarantineFor: '15s' });
    // A tree of its own: the gate cache would answer for a tree gated before (the first test's went green on its re-run).
    const repo = repoWith(flakyCheck, {}, { 'feature.txt': 'expiry\n' });
    const id = await land(repo);
    // Watched while the landing runs: the quarantine appears once its gate round settles the red.
    const listed = await waitFor(
      () => quarantines(query(repo)),
      (list) => list.length === 1,
      120_000,
      'the quarantine',
    );
    const view = await landingFinished(stack, id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    const until = Date.parse(listed[0]!.until);
    assert.equal(until - Date.parse(listed[0]!.since), 15_000);
    await waitFor(
      () => quarantines(query(repo)),
      (list) => list.length === 0,
      60_000,
      'the quarantine to expire',
    );
    assert.ok(Date.now() >= until, 'not gone before its end');
    // The entity dropped it on its own timer and, with nothing left in force, ended.
    const entity = stack.client.workflow.getHandle(suiteQuarantineId(view.outcome.repo, 'main'));
    await waitFor(
      () => entity.describe(),
      (description) => description.status.name === 'COMPLETED',
      30_000,
      'the quarantine entity to end',
    );
  });
});
