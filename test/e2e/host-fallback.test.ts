import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { FailureCode } from '../../core/failures';
import { hostBoundCapsules } from '../../core/host-bound';
import { hostQueue, placementQueue } from '../../core/queues';
import { branchHead, createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { cleanedUp, landingFinished, runningContainer, startStack, stepRunning, type Stack } from '../helpers/stack';
import { treeOf } from '../helpers/git';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** One landing's history as the steps a reader cares about: local activities (and the local tries of host-bound capsules), activity tasks, workflow tasks. */
function readHistory(events: HistoryEvent[]) {
  const locals = events.flatMap((event, index) => {
    const marker = event.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_local_activity') return [];
    const data = defaultPayloadConverter.fromPayload<{ activity_type?: string; activityType?: string }>(marker.details!.data!.payloads![0]!);
    const failure = marker.failure?.applicationFailureInfo?.type ?? marker.failure?.cause?.applicationFailureInfo?.type;
    return [{ index, activityType: data.activity_type ?? data.activityType, failure: failure ?? (marker.failure ? 'failed' : undefined) }];
  });
  const scheduled = events.flatMap((event, index) => {
    const attributes = event.activityTaskScheduledEventAttributes;
    if (!attributes) return [];
    const started = events.find((other) => other.activityTaskStartedEventAttributes?.scheduledEventId?.toString() === event.eventId?.toString());
    return [
      {
        index,
        activityType: attributes.activityType!.name!,
        taskQueue: attributes.taskQueue!.name!,
        startedBy: started?.activityTaskStartedEventAttributes?.identity ?? undefined,
      },
    ];
  });
  const workflowTasks = events.flatMap((event, index) =>
    event.workflowTaskCompletedEventAttributes ? [{ index, identity: event.workflowTaskCompletedEventAttributes.identity ?? '' }] : [],
  );
  return { locals, localTries: locals.filter((entry) => entry.activityType === 'capsule.onHost'), scheduled, workflowTasks };
}

/** The worker identity the SDK gives a process by default: `<pid>@<hostname>`. */
const processOf = (identity: string | undefined) => identity?.split('@')[0];

describe('host-bound capsules: local on the run’s host, through its queue anywhere else', () => {
  let stack: Stack;
  const otherDataDir = mkdtempSync(join(tmpdir(), 'tarmac-test-host-b-'));
  before(async () => {
    stack = await startStack();
  });
  after(async () => {
    await stack?.stop();
    rmSync(otherDataDir, { recursive: true, force: true });
  });

  /** Two branches whose gate (`make test`) sleeps `seconds`, then checks both changes are in. */
  function twoBranchRepo(seconds: number) {
    return createFixtureRepo({
      base: {
        'a.txt': 'a\n',
        'b.txt': 'b\n',
        Makefile: `test:\n\tsleep ${seconds}\n\tgrep -q A a.txt && grep -q B b.txt\n`,
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['make', 'test'] }], { fixup: { maxRounds: 0 } }),
      },
      branches: [
        { name: 'feature/a', commits: [{ message: 'a: upper', files: { 'a.txt': 'A\n' } }] },
        { name: 'feature/b', commits: [{ message: 'b: upper', files: { 'b.txt': 'B\n' } }] },
      ],
    });
  }
  async function land(repoUrl: string): Promise<string> {
    const created = await stack.api('POST', '/v1/landings', { repo: repoUrl, branches: ['feature/a', 'feature/b'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return created.body.id as string;
  }
  /** Lands, and the target is exactly the head whose tree was gated. */
  function assertLandedGatedHead(view: any, repoPath: string) {
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    const merged = branchHead(repoPath, 'main');
    assert.equal(merged, view.outcome.mergedSha);
    assert.equal(merged, view.outcome.headSha, 'the target is the verified head');
    assert.equal(treeOf(repoPath, merged), view.gates[0].treeSha, 'the gated tree is the merged tree');
  }
  const bound = new Set<string>(hostBoundCapsules);

  it('one worker, the run’s host: every host-bound capsule runs locally, none through a task queue', async () => {
    const repo = twoBranchRepo(0);
    const id = await land(repo.url);
    assertLandedGatedHead(await landingFinished(stack, id, 120_000), repo.path);
    const history = readHistory((await stack.client.workflow.getHandle(id).fetchHistory()).events ?? []);
    assert.ok(history.localTries.length >= 2, `host-bound capsules ran as local activities (${history.localTries.length})`);
    assert.deepEqual(
      history.localTries.filter((entry) => entry.failure),
      [],
      'no local try was refused',
    );
    assert.deepEqual(
      history.scheduled.filter((entry) => bound.has(entry.activityType)).map((entry) => entry.activityType),
      [],
      'no host-bound capsule went through a task queue',
    );
  });

  it('the workflow moves to a worker of another host: host-bound capsules are refused there (TARMAC_WRONG_HOST) and run through the run’s host queue', async () => {
    const repo = twoBranchRepo(6);
    const id = await land(repo.url);
    const gate = await runningContainer(stack.docker, [`tarmac.run=${id}`], 'the gate container to run', 60_000);
    // The placement starts the gate's container ahead of its step: kill A only once the step itself
    // runs there (it has heartbeated the container's id), so the retry on A has a step to reattach to.
    await stepRunning(stack, id, 'gate.runSuite', 'the gate step to run on A and heartbeat', 60_000);
    const firstWorker = stack.worker().pid;
    await stack.killWorker('SIGKILL');
    // From here on only B runs workflow tasks (it polls no host queue) and only A runs A's host queue
    // (it polls nothing else): every host-bound step the landing takes now must go B → A's queue.
    const other: ChildProcess = await stack.startExtraWorker({ TARMAC_HOST_ID: 'test-host-b', TARMAC_DATA_DIR: otherDataDir, TARMAC_WORKER_QUEUES: 'shared' });
    await stack.startWorker({ TARMAC_WORKER_QUEUES: 'host' });
    const hostWorker = stack.worker().pid;

    const view = await landingFinished(stack, id, 120_000);
    assertLandedGatedHead(view, repo.path);
    assert.equal(view.gates[0].reattached, true, 'the gate retried on A reattached to its container');
    // A's janitor cleans up once the run has closed.
    assert.equal((await cleanedUp(stack.dataDir, id)).workflowStatus, 'COMPLETED');
    const left = await stack.docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tarmac.run=${id}`] }) });
    assert.deepEqual(
      left.map((container) => container.Id),
      [],
      'no container of the run is left',
    );
    assert.ok((await stack.docker.listContainers({ all: true, filters: JSON.stringify({ id: [gate.Id] }) })).length === 0, 'the gate container was removed');

    const history = readHistory((await stack.client.workflow.getHandle(id).fetchHistory()).events ?? []);
    const refused = history.localTries.filter((entry) => entry.failure);
    assert.ok(refused.length >= 2, `local tries were refused after the move (${refused.length})`);
    assert.deepEqual([...new Set(refused.map((entry) => entry.failure))], [FailureCode.wrongHost]);
    const firstRefused = refused[0]!.index;
    assert.ok(
      history.locals.some((entry) => entry.activityType === 'capsule.placeLanding' && !entry.failure && entry.index < firstRefused),
      'before the move the landing was placed (on A) by a local activity',
    );
    assert.ok(
      history.localTries.filter((entry) => entry.index > firstRefused).every((entry) => entry.failure),
      'after the move no local try succeeds',
    );
    // Every refusal is followed by exactly one activity task on A's host queue: the same step, taken by A.
    const fallbacks = history.scheduled.filter((entry) => bound.has(entry.activityType));
    assert.equal(fallbacks.length, refused.length, JSON.stringify(fallbacks));
    for (const name of ['capsule.verifyLanding', 'capsule.fastForwardTarget']) {
      const step = fallbacks.find((entry) => entry.activityType === name);
      assert.ok(step, `${name} was scheduled as an activity`);
      assert.ok(step.index > firstRefused, `${name} went through the queue after a refused local try`);
      assert.equal(step.taskQueue, hostQueue('test-host'), `${name} went to A's host queue`);
      assert.equal(processOf(step.startedBy), String(hostWorker), `${name} was run by worker A (restarted)`);
    }
    assert.ok(fallbacks.every((entry) => entry.taskQueue === hostQueue('test-host') && processOf(entry.startedBy) === String(hostWorker)));
    // The last step (target freed, outcome stored, the run marked for its host's janitor) went to A too.
    const finish = history.scheduled.find((entry) => entry.activityType === 'capsule.finishRun');
    assert.equal(finish?.taskQueue, hostQueue('test-host'), 'the run was finished on A');
    // The workflow tasks: A's before the kill, B's after (the refused tries were B's).
    const moved = history.workflowTasks.filter((task) => task.index < firstRefused).at(-1)!;
    const afterMove = history.workflowTasks.filter((task) => task.index >= moved.index);
    assert.ok(
      afterMove.every((task) => processOf(task.identity) === String(other.pid)),
      `B ran every workflow task from the move on: ${JSON.stringify(afterMove)}`,
    );
    assert.ok(
      history.workflowTasks.some((task) => processOf(task.identity) === String(firstWorker)),
      'A ran the workflow before the kill',
    );
  });

  it('a workflow-only worker places no run on its own host: the placement goes through the placement queue to a host’s worker', async () => {
    // As the test before left it: B runs workflows only (host test-host-b, no host queue), A serves its host queue only.
    const repo = twoBranchRepo(0);
    const id = await land(repo.url);
    const view = await landingFinished(stack, id, 120_000);
    assertLandedGatedHead(view, repo.path);
    const history = readHistory((await stack.client.workflow.getHandle(id).fetchHistory()).events ?? []);
    const placementTries = history.locals.filter((entry) => entry.activityType === 'capsule.placeLanding');
    assert.deepEqual(
      placementTries.map((entry) => entry.failure),
      [FailureCode.wrongHost],
      'B refused to place the landing on itself',
    );
    const placed = history.scheduled.filter((entry) => entry.activityType === 'capsule.placeLanding');
    assert.deepEqual(
      placed.map((entry) => entry.taskQueue),
      [placementQueue('tarmac')],
      'placed through the placement queue',
    );
    assert.equal(processOf(placed[0]!.startedBy), String(stack.worker().pid), 'by A, a host');
    // Every step after it went to A's host queue: the run is A's, never B's.
    const pinned = history.scheduled.filter((entry) => entry.activityType !== 'capsule.placeLanding');
    assert.ok(pinned.length > 0 && pinned.every((entry) => entry.taskQueue === hostQueue('test-host')), JSON.stringify(pinned));
  });
});
