import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { branchHead, createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { buildWorkflowBundle } from '../../worker/workflow-bundle';
import { newBranchMemo, versionSwitchPatch } from '../fixtures/version-switch/change';
import { landingFinished, runningContainer, startStack, waitFor, type Stack } from '../helpers/stack';

/**
 * A deploy of changed workflow code under runs in flight, on the real stack. The change
 * (test/fixtures/version-switch/change.ts) adds a timer and a memo write before the landing's first
 * command. Landings start on today's code (one waiting on a question, one in a slow gate); the worker
 * is stopped and started again on a bundle (TARMAC_WORKFLOW_BUNDLE) whose landing carries the change:
 * - without `patched()` (what docs/VERSIONING.md forbids) an old run cannot replay: when its gate
 *   ends, its workflow task fails with a nondeterminism error and it does not move;
 * - with `patched()` they replay, skip the new branch, and land; a landing started on the new code
 *   takes the new branch (the marker in its history, the memo).
 */
describe('version switch: runs in flight across a worker on changed workflow code', () => {
  let stack: Stack;
  let bundles: string;
  const bundle = (variant: 'patched' | 'unpatched') => join(bundles, `${variant}.js`);
  before(async () => {
    stack = await startStack();
    bundles = mkdtempSync(join(tmpdir(), 'tarmac-variant-bundles-'));
    for (const variant of ['patched', 'unpatched'] as const) {
      await buildWorkflowBundle({ workflowsPath: require.resolve(`../fixtures/version-switch/${variant}.ts`), outFile: bundle(variant) });
    }
  });
  after(async () => {
    await stack?.stop();
    if (bundles) rmSync(bundles, { recursive: true, force: true });
  });

  async function land(repo: string, branch: string): Promise<string> {
    const created = await stack.api('POST', '/v1/landings', { repo, branches: [branch], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return created.body.id as string;
  }
  const history = async (id: string) => (await stack.client.workflow.getHandle(id).fetchHistory()).events ?? [];
  /** The ids of the patches a run's history records (the SDK's `core_patch` markers). */
  const patchMarkers = async (id: string) =>
    (await history(id)).flatMap((event) => {
      const marker = event.markerRecordedEventAttributes;
      if (marker?.markerName !== 'core_patch') return [];
      return [defaultPayloadConverter.fromPayload<{ id: string }>(marker.details!['patch-data']!.payloads![0]!).id];
    });
  const nondeterminismFailures = async (id: string) =>
    (await history(id)).filter(
      (event) =>
        event.workflowTaskFailedEventAttributes?.cause === temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR,
    ).length;
  const memoOf = async (id: string) => (await stack.client.workflow.getHandle(id).describe()).memo ?? {};
  const switchWorker = async (variant: 'patched' | 'unpatched') => {
    await stack.killWorker('SIGTERM');
    await stack.startWorker({ TARMAC_WORKFLOW_BUNDLE: bundle(variant) });
  };

  it('unpatched: an old run fails to replay and stays put; patched: the old runs finish on the old branch, and a new run takes the new one', async () => {
    const gate = gateFile([{ id: 'test', run: ['sh', 'check.sh'], timeout: '5m' }]);
    // A: edits the gate file, so it waits for an answer.
    const asking = createFixtureRepo({
      base: { 'check.sh': 'true\n', '.config/tarmac/land-gate.json': gate },
      branches: [
        {
          name: 'feature/gate',
          commits: [{ message: 'loosen the gate', files: { '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['true'] }]) } }],
        },
      ],
    });
    // B: a gate that takes a while.
    const slow = createFixtureRepo({
      base: { 'check.sh': 'sleep 20\n', '.config/tarmac/land-gate.json': gate },
      branches: [{ name: 'feature/slow', commits: [{ message: 'slow feature', files: { 'slow.txt': 'slow\n' } }] }],
    });
    const waiting = await land(asking.url, 'feature/gate');
    const gating = await land(slow.url, 'feature/slow');
    await waitFor(
      () => stack.api('GET', `/v1/landings/${waiting}`),
      (view) => view.body?.pendingQuestions?.length === 1,
      120_000,
      'A to ask',
    );
    await runningContainer(stack.docker, [`tarmac.run=${gating}`], "B's gate container", 120_000);

    // The change without a patch: B's gate ends, B is replayed on the new code and cannot be.
    const slowBefore = branchHead(slow.path, 'main');
    await switchWorker('unpatched');
    await waitFor(
      () => nondeterminismFailures(gating),
      (count) => count > 0,
      120_000,
      "B's workflow task to fail on nondeterminism",
    );
    assert.equal((await stack.client.workflow.getHandle(gating).describe()).status.name, 'RUNNING');
    assert.equal(branchHead(slow.path, 'main'), slowBefore, 'B did not move');

    // The change under patched(): both old runs replay, skip the new branch, and land.
    await switchWorker('patched');
    assert.equal((await stack.api('POST', `/v1/landings/${waiting}/answers`, { text: 'approved' })).status, 200);
    for (const [id, repo, branch] of [
      [waiting, asking, 'feature/gate'],
      [gating, slow, 'feature/slow'],
    ] as const) {
      const view = await landingFinished(stack, id, 180_000);
      assert.equal(view.outcome.status, 'landed', `${id}: ${view.outcome.summary}`);
      assert.equal(branchHead(repo.path, 'main'), view.outcome.mergedSha);
      assert.equal(branchHead(repo.path, branch), view.outcome.heads[0].sha, `${branch} is what was landed`);
      // (Other patches of today's code — e.g. the queue memo — mark every run that passes them; this test is about its own.)
      assert.deepEqual(
        (await patchMarkers(id)).filter((marker) => marker === versionSwitchPatch),
        [],
        `${id} ran the old branch: no marker`,
      );
      assert.equal((await memoOf(id)).versionSwitch, undefined, `${id} ran the old branch: no memo`);
    }

    // A landing started on the new code takes the new branch.
    const fresh = createFixtureRepo({
      base: { 'check.sh': 'true\n', '.config/tarmac/land-gate.json': gate },
      branches: [{ name: 'feature/new', commits: [{ message: 'new feature', files: { 'new.txt': 'new\n' } }] }],
    });
    const started = await land(fresh.url, 'feature/new');
    const view = await landingFinished(stack, started, 180_000);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.deepEqual(
      (await patchMarkers(started)).filter((marker) => marker === versionSwitchPatch),
      [versionSwitchPatch],
    );
    assert.equal((await memoOf(started)).versionSwitch, newBranchMemo);
    assert.equal(await nondeterminismFailures(started), 0);
  });
});
