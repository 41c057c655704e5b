import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { BatchOutcome } from '../../core/batch-types';
import { maxBisectRounds } from '../../policies/batch';
import { branchHead, type FixtureRepo } from '../../infra/fixture-repo';
import { allWaiting as allWaitingIn, holdTarget as holdTargetWith, queueRepo, releaseTarget, startLanding } from '../helpers/merge-queue';
import { containersCreated, landingFinished, startStack, waitFor, type Stack } from '../helpers/stack';
import { fileAt, git, isAncestor, refValues, treeOf } from '../helpers/git';

describe('merge queue: speculative batches with bisection', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
    stack.scriptScenario('write-fixed', { edits: [{ file: 'FIXED', replace: 'yes\n' }] });
  });
  after(async () => {
    await stack?.stop();
  });

  const land = (repo: FixtureRepo, branch: string, extra: Record<string, unknown> = {}) => startLanding(stack, repo, branch, extra);
  const holdTarget = (repo: FixtureRepo) => holdTargetWith(stack, repo);
  const allWaiting = (pacer: string, ids: string[]) => allWaitingIn(stack, pacer, ids);

  /** The target moved only by fast-forwards, and every value after the test's own pushes is a tree some gate round passed. */
  function assertTestedFastForwards(repo: FixtureRepo, values: string[], greenTrees: Set<string>, ownPushes: number): void {
    for (let index = 1; index < values.length; index += 1) {
      assert.ok(isAncestor(repo.path, values[index - 1]!, values[index]!), `target value ${index} is a fast-forward of the one before`);
      if (index > ownPushes)
        assert.ok(greenTrees.has(treeOf(repo.path, values[index]!)), `target value ${index} (${values[index]!.slice(0, 12)}) is a tree a gate round passed`);
    }
  }

  it('8 landings at once, batches of 4: two batches, one gate round (one container) each; the target moves by fast-forwards to tested trees', async () => {
    const names = ['l1', 'l2', 'l3', 'l4', 'l5', 'l6', 'l7', 'l8'];
    const repo = queueRepo(names);
    const since = Math.floor(Date.now() / 1000);
    const pacer = await holdTarget(repo);
    const ids: string[] = [];
    for (const name of names) ids.push(await land(repo, `feature/${name}`));
    await allWaiting(pacer, ids);
    await releaseTarget(stack, pacer);

    const views = await Promise.all(ids.map((id) => landingFinished(stack, id, 300_000)));
    for (const view of views) assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    const batchIds = [...new Set(views.map((view) => view.outcome.batch?.id as string))];
    assert.equal(batchIds.length, 2, `two batches: ${batchIds.join(', ')}`);
    const batches = await Promise.all(batchIds.map(async (id) => (await stack.client.workflow.getHandle(id).result()) as BatchOutcome));
    for (const batch of batches) {
      assert.equal(Object.keys(batch.results).length, 4, 'four landings in each batch');
      assert.equal(batch.rounds.length, 1, `one gate round: ${batch.summary}`);
      assert.equal(batch.merges.length, 1, 'one fast-forward');
      assert.equal(await containersCreated(stack.docker, since, `tarmac.run=${batch.batchId}`), 1, 'one gate container per batch (one suite, one round)');
    }
    // Each landing's commits are in the target; each outcome names its batch and the merged tree.
    const main = branchHead(repo.path, 'main');
    for (const view of views) {
      assert.ok(isAncestor(repo.path, view.outcome.batch.stackedSha, main), 'the landing’s stacked commit is on the target');
      assert.equal(view.outcome.batch.members.length, 4);
    }
    assert.equal(git(repo.path, 'ls-tree', '--name-only', 'main', 'features/').split('\n').length, 8);
    assert.equal(git(repo.path, 'ls-tree', '--name-only', 'main', 'p'), '', 'the cancelled pacer’s batch merged nothing of it');
    const pacerView = await landingFinished(stack, pacer);
    assert.equal(pacerView.outcome.status, 'cancelled', pacerView.outcome.summary);
    // initial, tick (the test's pushes), then one value per batch.
    const values = refValues(repo.path);
    assert.equal(values.length, 4, `the target took 4 values: ${values.join(', ')}`);
    const greenTrees = new Set(batches.flatMap((batch) => batch.rounds.filter((round) => round.green).map((round) => round.treeSha)));
    assertTestedFastForwards(repo, values, greenTrees, 2);
  });

  it("a batch gates each stacked tree in that tree's own environment (its inputs are the members'), and lands them", async () => {
    // The setup lists the features it sees (its input); the gate checks the list is its tree's.
    const environment = { setup: ['ls features 2>/dev/null > /tmp/l; mv /tmp/l env-features.txt'], inputs: ['features'] };
    const repo = queueRepo(['e1', 'e2'], { environment });
    const pacer = await holdTarget(repo);
    const ids = [await land(repo, 'feature/e1'), await land(repo, 'feature/e2')];
    await allWaiting(pacer, ids);
    await releaseTarget(stack, pacer);
    const views = await Promise.all(ids.map((id) => landingFinished(stack, id, 300_000)));
    for (const view of views) assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    const batchId = views[0].outcome.batch?.id as string;
    assert.ok(batchId && views[1].outcome.batch?.id === batchId, 'both landed in one batch');
    const batch = (await stack.client.workflow.getHandle(batchId).result()) as BatchOutcome;
    assert.ok(
      batch.rounds.every((round) => round.green && round.environmentFailed === undefined),
      batch.summary,
    );
    assert.deepEqual(git(repo.path, 'ls-tree', '--name-only', 'main', 'features/').split('\n'), ['features/e1', 'features/e2']);
  });

  it('one bad landing in a batch of 4: bisection names it within ⌈log2 4⌉ + 1 rounds, the other three land, it gets its fixup round and lands after', async () => {
    const repo = queueRepo(['a1', 'a2', 'a3', 'b']);
    const pacer = await holdTarget(repo);
    const good: string[] = [];
    for (const name of ['a1', 'a2', 'a3']) good.push(await land(repo, `feature/${name}`));
    // The bad one in a lower lane: behind the others whenever it arrives (a batch's culprit is the first member whose prefix is red).
    const bad = await land(repo, 'feature/b', { priority: -1, agents: { fixer: 'script#fixer:write-fixed', ladder: ['script#fixer:write-fixed'] } });
    await allWaiting(pacer, [...good, bad]);

    // The queue view: the pacer holds the target; the line by lane, then arrival — the bad one last in its lower lane.
    const queuePath = `/v1/queues/${encodeURIComponent(repo.url)}/main`;
    const waitingView = await stack.api('GET', queuePath);
    assert.equal(waitingView.status, 200, JSON.stringify(waitingView.body));
    assert.equal(waitingView.body.running, true);
    assert.deepEqual(waitingView.body.batch.members, [pacer], 'the pacer holds the target (in a batch of its own)');
    const line = waitingView.body.waiting as { landingId: string; position: number; lane: number; batchable: boolean }[];
    assert.deepEqual(new Set(line.slice(0, 3).map((entry) => entry.landingId)), new Set(good));
    assert.deepEqual(
      line.map((entry) => [entry.position, entry.lane, entry.batchable]),
      [
        [0, 0, true],
        [1, 0, true],
        [2, 0, true],
        [3, -1, true],
      ],
    );
    assert.equal(line[3]!.landingId, bad);
    assert.equal(
      (await stack.api('GET', `/v1/queues/${encodeURIComponent(repo.url)}/${encodeURIComponent('no..such')}`)).status,
      400,
      'an invalid target is named',
    );
    await releaseTarget(stack, pacer);

    const goodViews = await Promise.all(good.map((id) => landingFinished(stack, id, 300_000)));
    for (const view of goodViews) assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    const badView = await landingFinished(stack, bad, 300_000);
    assert.equal(badView.outcome.status, 'landed', `the culprit landed after its fixup round: ${badView.outcome.summary}`);

    const batchId = goodViews[0].outcome.batch.id as string;
    for (const view of goodViews) assert.equal(view.outcome.batch.id, batchId, 'the three landed in one batch');
    const batch = (await stack.client.workflow.getHandle(batchId).result()) as BatchOutcome;
    assert.equal(Object.keys(batch.results).length, 4, 'a batch of four');
    assert.equal(batch.results[bad]?.kind, 'culprit', JSON.stringify(batch.results[bad]));
    assert.ok(batch.rounds.length <= maxBisectRounds(4), `${batch.rounds.length} rounds ≤ ${maxBisectRounds(4)}`);
    assert.deepEqual(
      batch.rounds.map((round) => `${round.prefix}:${round.green ? 'green' : 'red'}`),
      ['4:red', '2:green', '3:green'],
    );
    assert.equal(batch.merges.length, 1, 'the green prefix of three merged in one fast-forward');

    // The culprit: named with its batch and failing suite, then a fixup round, a green re-gate, and back through the queue.
    assert.deepEqual(
      badView.outcome.culpritIn.map((entry: { batchId: string; failing: string[] }) => [entry.batchId, entry.failing]),
      [[batchId, ['check']]],
    );
    assert.equal(badView.outcome.fixLoops.length, 1, 'its fixup round');
    assert.equal(badView.outcome.fixLoops[0].outcome, 'fixed');
    const main = branchHead(repo.path, 'main');
    assert.equal(fileAt(repo.path, main, 'FIXED'), 'yes\n');
    assert.equal(git(repo.path, 'ls-tree', '--name-only', 'main', 'features/').split('\n').length, 4);

    const greenTrees = new Set([...batch.rounds.filter((round) => round.green).map((round) => round.treeSha), badView.outcome.treeSha as string]);
    // Its last batch (when it merged through one) gated its tree too.
    if (badView.outcome.batch) {
      const last = (await stack.client.workflow.getHandle(badView.outcome.batch.id).result()) as BatchOutcome;
      for (const round of last.rounds) if (round.green) greenTrees.add(round.treeSha);
    }
    assertTestedFastForwards(repo, refValues(repo.path), greenTrees, 2);

    // Time in the queue: the outcome (the culprit waited twice: its batch, then its own turn), the list API, the metrics.
    for (const view of goodViews) assert.equal(view.outcome.queue.turns, 1);
    assert.equal(badView.outcome.queue.turns, 2, 'the culprit waited for two turns');
    assert.ok(badView.outcome.queue.waitedMs > 0);
    const listed = await stack.api('GET', `/v1/landings?repo=${encodeURIComponent(repo.url)}&target=main`);
    const queued = new Map((listed.body.landings as { id: string; queuedMs?: number }[]).map((entry) => [entry.id, entry.queuedMs]));
    assert.equal(queued.get(bad), badView.outcome.queue.waitedMs, 'the list shows the time in queue');
    const metrics = await waitFor(
      async () => (await fetch(`${stack.apiUrl}/metrics`)).text(),
      (text) => /^tarmac_batch_results_total\{[^}]*result="culprit"[^}]*\} \d+$/m.test(text),
      30_000,
      'batch results in /metrics',
    );
    assert.match(metrics, /^tarmac_queue_wait_ms_bucket\{[^}]*how="batch"[^}]*\} \d+$/m, 'time in queue in the metrics');
    assert.match(metrics, /^tarmac_gate_cache_total\{[^}]*status="miss"[^}]*\} \d+$/m, 'gate cache status in the metrics');

    // Afterwards: nobody waits, and the turns it timed give the next landing an ETA.
    const idle = await stack.api('GET', queuePath);
    assert.deepEqual(idle.body.waiting, []);
    assert.ok(idle.body.recentTurnMs.length >= 2, JSON.stringify(idle.body));
    assert.ok(idle.body.batches >= 1);
  });

  it('a suite flaky in a batch (red, then green on the same tree) is settled flaky with both logs: no bisection, nobody evicted', async () => {
    const repo = queueRepo(['a1', 'flaky', 'a2']);
    const pacer = await holdTarget(repo);
    const ids: string[] = [];
    for (const name of ['a1', 'flaky', 'a2']) ids.push(await land(repo, `feature/${name}`));
    await allWaiting(pacer, ids);
    await releaseTarget(stack, pacer);
    const views = await Promise.all(ids.map((id) => landingFinished(stack, id, 300_000)));
    for (const view of views) assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    const batchId = views[0].outcome.batch.id as string;
    for (const view of views) assert.equal(view.outcome.batch.id, batchId, 'all three in one batch');
    const batch = (await stack.client.workflow.getHandle(batchId).result()) as BatchOutcome;
    assert.equal(batch.rounds.length, 1, 'one round: no bisection');
    const [result] = batch.rounds[0]!.gates;
    assert.equal(result!.status, 'failed', 'the first run was red');
    assert.equal(result!.settled, 'flaky');
    assert.deepEqual(result!.excused, { by: 'retry' });
    assert.equal(result!.evidence?.[0]?.status, 'passed', 'the run again on the same tree was green');
    assert.notEqual(result!.evidence?.[0]?.logRef, result!.logRef, 'both logs kept');
    assert.ok(
      Object.values(batch.results).every((entry) => entry.kind === 'landed'),
      'nobody evicted',
    );
  });

  it('chaos: the worker SIGKILLed in the middle of a bisection (its second round running) loses no landing and merges nothing untested', async () => {
    const repo = queueRepo(['a1', 'a2', 'a3', 'b']);
    const since = Math.floor(Date.now() / 1000);
    const pacer = await holdTarget(repo);
    const good: string[] = [];
    for (const name of ['a1', 'a2', 'a3']) good.push(await land(repo, `feature/${name}`));
    const bad = await land(repo, 'feature/b', { priority: -1, agents: { fixer: 'script#fixer:write-fixed', ladder: ['script#fixer:write-fixed'] } });
    await allWaiting(pacer, [...good, bad]);
    await releaseTarget(stack, pacer);

    // The batch in flight, then its second gate round's container running: the bisection has begun.
    const queuePath = `/v1/queues/${encodeURIComponent(repo.url)}/main`;
    const inFlight = await waitFor(
      () => stack.api('GET', queuePath),
      (response) => response.body.batch?.members?.includes(bad) === true,
      60_000,
      'the batch to start',
    );
    const batchId = inFlight.body.batch.id as string;
    await waitFor(
      () => stack.docker.listContainers({ filters: JSON.stringify({ label: [`tarmac.run=${batchId}`], status: ['running'] }) }),
      (list) => list.some((info) => info.Labels['tarmac.step']?.endsWith('-r2')),
      120_000,
      'the bisection’s second round (two features: 5 s) to run',
    );
    const running = await stack.api('GET', `/v1/runs/${encodeURIComponent(batchId)}`);
    await stack.killWorker('SIGKILL');
    // The round's container outlives the worker: the kill came while the batch was still bisecting.
    const still = await stack.docker.listContainers({ filters: JSON.stringify({ label: [`tarmac.run=${batchId}`], status: ['running'] }) });
    assert.ok(
      still.some((info) => info.Labels['tarmac.step']?.endsWith('-r2')),
      'the second round still ran when the worker died',
    );
    await stack.startWorker();

    const goodViews = await Promise.all(good.map((id) => landingFinished(stack, id, 300_000)));
    for (const view of goodViews) assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    const badView = await landingFinished(stack, bad, 300_000);
    assert.equal(badView.outcome.status, 'landed', badView.outcome.summary);
    const batch = (await stack.client.workflow.getHandle(batchId).result()) as BatchOutcome;
    assert.deepEqual(
      batch.rounds.map((round) => `${round.prefix}:${round.green ? 'green' : 'red'}`),
      ['4:red', '2:green', '3:green'],
      'the same bisection as without the kill',
    );
    assert.equal(running.body.type, 'mergeBatch');
    assert.equal(running.body.status.state, 'gating', 'the batch said what it did while it ran (GET /v1/runs/:id)');
    assert.deepEqual(new Set(running.body.status.members), new Set([...good, bad]));
    assert.equal(running.body.status.rounds[0].prefix, 4, 'its first round (the whole stack) was done');
    assert.equal(batch.results[bad]?.kind, 'culprit');
    assert.equal(batch.merges.length, 1);
    for (const view of goodViews) assert.equal(view.outcome.batch.id, batchId);
    const greenTrees = new Set([...batch.rounds.filter((round) => round.green).map((round) => round.treeSha), badView.outcome.treeSha as string]);
    if (badView.outcome.batch) {
      const last = (await stack.client.workflow.getHandle(badView.outcome.batch.id).result()) as BatchOutcome;
      for (const round of last.rounds) if (round.green) greenTrees.add(round.treeSha);
    }
    assertTestedFastForwards(repo, refValues(repo.path), greenTrees, 2);
    // One container per run: each round's, and the red full stack's run again on its tree (it was red again: no flake) —
    // the round running at the kill was reattached, not run twice.
    const runs = batch.rounds.reduce((sum, round) => sum + round.gates.reduce((count, result) => count + 1 + (result.evidence?.length ?? 0), 0), 0);
    assert.equal(runs, 4, 'three rounds and one run again of the red stack');
    assert.equal(batch.rounds[0]!.gates[0]!.evidence?.[0]?.status, 'failed', 'the red stack was red again on its tree: not a flake');
    assert.equal(await containersCreated(stack.docker, since, `tarmac.run=${batchId}`), runs, 'one gate container per run');
    const containers = await stack.docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tarmac.run=${batchId}`] }) });
    assert.equal(containers.length, 0, 'the batch cleaned up its containers');
  });
});
