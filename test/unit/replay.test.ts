import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { DefaultLogger, makeTelemetryFilterString, Runtime, Worker, type ReplayWorkerOptions } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import * as workflows from '../../workflows';
import { buildWorkflowBundle, prebuiltBundleState } from '../../worker/workflow-bundle';
import { historyFromJson } from '../helpers/history-json';
import { readDemoHistory, readHistoryFixtures, replayDemoDir, type RecordedWorkflow } from '../helpers/history-fixture';

/**
 * Replay safety: every recorded history (test/fixtures/histories/, scripts/record-histories.ts)
 * replays against today's workflow code with the SDK's replayer, so a change to a workflow that
 * would break the runs in flight fails here, with no Temporal server. Then the same replayer on a
 * tiny workflow of the test's own (test/fixtures/replay-demo/), whose v2 reorders two activities:
 * replaying v1's history must fail with a DeterminismViolationError, and the same change under
 * `patched()` must not. The policy these enforce: docs/VERSIONING.md.
 */

// The replayer's own lines (worker states; core's warning on the nondeterminism the demo provokes on purpose) stay out of the report.
Runtime.install({ logger: new DefaultLogger('ERROR'), telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'ERROR' }), forward: {} } } });

/** Replays histories with one replay worker: each history's error (undefined when it replayed), in the order given. */
async function replay(options: ReplayWorkerOptions, recorded: RecordedWorkflow[]): Promise<(Error | undefined)[]> {
  const errors = new Map<string, Error | undefined>();
  const results = Worker.runReplayHistories(
    { ...options, replayName: 'tarmac-replay-test' },
    recorded.map((workflow) => ({ workflowId: workflow.workflowId, history: historyFromJson(workflow.history) })),
  );
  for await (const result of results) errors.set(result.workflowId, result.error);
  assert.deepEqual(
    recorded.map((workflow) => workflow.workflowId).filter((id) => !errors.has(id)),
    [],
    'every history was replayed',
  );
  return recorded.map((workflow) => errors.get(workflow.workflowId));
}

/** "<workflowType> <workflowId>: <error>" for each history that did not replay. */
const failuresOf = (recorded: RecordedWorkflow[], errors: (Error | undefined)[]) =>
  recorded.flatMap((workflow, index) =>
    errors[index] ? [`${workflow.workflowType} ${workflow.workflowId}: ${errors[index].name}: ${errors[index].message}`] : [],
  );

const fixtures = readHistoryFixtures();

describe('replay: every recorded history against today’s workflow code', () => {
  // One bundle for the file: the prebuilt one when it is current (what workers load), else today's sources.
  let workflowBundle: { code: string };
  let failures: Map<string, string[]>;
  before(async () => {
    const prebuilt = prebuiltBundleState();
    workflowBundle = { code: prebuilt.state === 'current' ? readFileSync(prebuilt.path, 'utf8') : (await buildWorkflowBundle()).code };
    const all = fixtures.flatMap((fixture) => fixture.workflows);
    const errors = await replay({ workflowBundle }, all);
    failures = new Map(
      fixtures.map((fixture) => [
        fixture.kind,
        failuresOf(
          fixture.workflows,
          fixture.workflows.map((workflow) => errors[all.indexOf(workflow)]),
        ),
      ]),
    );
  });

  for (const fixture of fixtures) {
    it(`${fixture.kind}: ${fixture.workflows.length} workflow(s) (${[...new Set(fixture.workflows.map((workflow) => workflow.workflowType))].join(', ')}) replay without nondeterminism`, () => {
      assert.deepEqual(failures.get(fixture.kind), [], `${fixture.description}; recorded from ${fixture.recordedFrom.commit}`);
    });
  }

  it('the fixtures cover every workflow type the worker registers, and the kinds the versioning policy names', () => {
    const recordedTypes = new Set(fixtures.flatMap((fixture) => fixture.workflows.map((workflow) => workflow.workflowType)));
    const registered = Object.keys(workflows).sort();
    assert.deepEqual(
      registered.filter((type) => !recordedTypes.has(type)),
      [],
      'a workflow type without a recorded history',
    );
    const kinds = fixtures.map((fixture) => fixture.kind).sort();
    assert.deepEqual(kinds, [
      'agent-registry',
      'fix-loop',
      'landing-conflict',
      'landing-finish-on-host',
      'landing-fixup',
      'landing-flaky',
      'landing-question',
      'landing-review',
      'merge-batch',
      'nightly',
      'retention-sweep',
      'review-panel',
      'suite-quarantine',
      'target-queue',
    ]);
  });

  it('every fixture is a whole recording: each child a run started is recorded with it', () => {
    for (const fixture of fixtures) {
      const ids = new Set(fixture.workflows.map((workflow) => workflow.workflowId));
      for (const workflow of fixture.workflows) {
        const events = (workflow.history as { events: { startChildWorkflowExecutionInitiatedEventAttributes?: { workflowId: string } }[] }).events;
        assert.equal(events.length, workflow.events, `${fixture.kind}: ${workflow.workflowId}'s history is as long as recorded`);
        for (const event of events) {
          const child = event.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
          if (child) assert.ok(ids.has(child), `${fixture.kind}: the child ${child} of ${workflow.workflowId} is recorded`);
        }
      }
    }
  });
});

describe('replay can fail: a deliberately non-deterministic change in the test’s own workflow', () => {
  const v1 = readDemoHistory('v1');
  const v3 = readDemoHistory('v3');
  const bundleOf = async (version: string) => ({ code: (await buildWorkflowBundle({ workflowsPath: join(replayDemoDir, `${version}.ts`) })).code });

  it('v1 ran first then second; a new run on v3 took the patched branch (the recordings say so)', () => {
    assert.deepEqual(v1.result, ['first', 'second']);
    assert.deepEqual(v3.result, ['first', 'second'], 'v3 returns in the same shape, having run second first');
    const scheduled = (history: unknown) =>
      (history as { events: { activityTaskScheduledEventAttributes?: { activityType: { name: string } } }[] }).events.flatMap(
        (event) => event.activityTaskScheduledEventAttributes?.activityType.name ?? [],
      );
    assert.deepEqual(scheduled(v1.history), ['first', 'second']);
    assert.deepEqual(scheduled(v3.history), ['second', 'first']);
  });

  it('v2 reorders the two activities with no patch: replaying v1’s history fails with a DeterminismViolationError', async () => {
    const [error] = await replay({ workflowBundle: await bundleOf('v2-reordered') }, [v1]);
    assert.ok(error instanceof DeterminismViolationError, String(error));
    assert.match(error.message, /Activity type of scheduled event 'first' does not match activity type of activity command 'second'/);
  });

  it('v3 makes the same change under patched(): v1’s history (old branch) and v3’s (new branch) both replay', async () => {
    assert.deepEqual(failuresOf([v1, v3], await replay({ workflowBundle: await bundleOf('v3-patched') }, [v1, v3])), []);
  });

  it('v5 changes only the activities’ task queue, timeouts, retry policy and arguments: v1’s history replays (replay does not compare them)', async () => {
    assert.deepEqual(failuresOf([v1], await replay({ workflowBundle: await bundleOf('v5-options') }, [v1])), []);
  });

  it('v4 retires the patch with deprecatePatch(): v3’s history replays, v1’s no longer does (so a patch is retired only when no v1 run is left)', async () => {
    const [onV3, onV1] = await replay({ workflowBundle: await bundleOf('v4-deprecated') }, [v3, v1]);
    assert.equal(onV3, undefined, String(onV3));
    assert.ok(onV1 instanceof DeterminismViolationError, String(onV1));
  });
});
