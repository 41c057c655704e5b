import { condition, patched, upsertMemo } from '@temporalio/workflow';
import type { BatchTicket } from '../../core/batch-types';
import { FailureCode } from '../../core/failures';
import { metrics } from '../metrics';
import { maxFixupRounds } from './gate';
import { end, finalAfterMove, go, placed, type LandingContext, type LandingState, type Next } from './context';

/**
 * verify: on exactly the head to merge and the target it is on — ≥ 1 commit, a changed tree, no
 * dropped patch, the gate file unchanged or approved, every suite green and the quorum met on this
 * tree (policies/verify.ts). Then the queue, once; after a moved target straight back to merge. A
 * refusal a fixer can mend (leftover conflict markers) gets one fixup round and a re-verify.
 */
export async function verify(ctx: LandingContext, state: LandingState): Promise<Next> {
  const { runId, tracker } = ctx;
  const { host, gate: gateFile, head } = placed(state);
  const lineage = state.verdict?.lineage ?? [];
  if (!state.moved && lineage.length > 0) tracker.facts.supersedes = lineage;
  tracker.enter('verify');
  const approvedGateFile = ctx.gateFiles.approved;
  const verified = await tracker.step('capsule.verifyLanding', 'capsule', () =>
    host['capsule.verifyLanding']({
      runId,
      targetSha: state.base,
      headSha: head.headSha,
      gates: tracker.gates,
      suiteIds: gateFile.suites.map((suite) => suite.id),
      dropped: state.dropped,
      ...(gateFile.review ? { reviewedTreeSha: state.approvedTree } : {}),
      ...(approvedGateFile ? { approvedGateFile } : {}),
    }),
  );
  if (verified.ok) return go(ctx.queue.id ? 'merge' : 'queue');
  const problems = verified.problems.join('; ');
  // One mechanical fixup round, with the refusal as the fixer's input, then the new head goes back
  // through the questions, the gate and the review to a re-verify. Only a refusal a change to the
  // tree can mend goes there (policies/verify.ts), and only where the gate file allows fixups.
  if (verified.repairable && state.verifyFixups === 0 && !finalAfterMove(state) && maxFixupRounds(ctx, state) > 0) {
    state.verifyFixups += 1;
    state.repair = { kind: 'verify', problems, problem: `verification refused the merge: ${problems}` };
    return go('fixup');
  }
  const after = state.verifyFixups > 0 ? ' after its fixup round' : '';
  return end(tracker.fail(FailureCode.verifyFailed, `verification refused the merge${after}: ${problems}; nothing was merged`, { message: problems }));
}

/**
 * queue: merges to one target go one at a time, or a speculative batch at a time when the target's
 * gate file asks for batches; wait for this landing's turn — no wait at all when the target is free
 * (the request's answer admits it). Admitted → merge (itself). Waited in a batch → the batch's
 * result: landed (the outcome), its culprit (retarget onto what merged, then its fixup round), or go
 * on alone (retarget); either way it comes back to the queue at its place.
 */
export async function queue(ctx: LandingContext, state: LandingState): Promise<Next> {
  ctx.tracker.enter('queue');
  // A culprit that got back here is an ordinary landing again (its place in the line kept).
  state.culprit = undefined;
  const enteredAt = Date.now();
  await requestAdmission(ctx, state);
  await condition(() => ctx.queue.admitted || ctx.queue.batchResult !== undefined);
  waited(ctx, Date.now() - enteredAt, ctx.queue.admitted ? 'alone' : 'batch');
  if (ctx.queue.admitted) return go('merge');
  return afterBatch(ctx, state);
}

/** The history marker of landings that record their time in the queue in their memo (the list API shows it). */
const queueMemoPatch = 'landing-queue-memo';

/** Time in the queue: the outcome's `queue` (every turn it waited for), the metrics, and the memo the list API reads. */
function waited({ tracker }: LandingContext, waitedMs: number, how: 'alone' | 'batch'): void {
  const before = tracker.facts.queue ?? { waitedMs: 0, turns: 0 };
  tracker.facts.queue = { waitedMs: before.waitedMs + waitedMs, turns: before.turns + 1 };
  metrics.queueWait(waitedMs, how);
  if (patched(queueMemoPatch)) upsertMemo({ queuedMs: tracker.facts.queue.waitedMs });
}

/**
 * The landing's batch ticket when the target's gate file asks for batches — none for a head that
 * changes the gate file (approved by an operator): a batch gates with the target's, so it merges alone.
 */
export function batchTicket({ request, gateFiles }: LandingContext, state: LandingState): BatchTicket | undefined {
  const { gate: gateFile, head } = placed(state);
  const size = gateFile.queue?.batchSize ?? 1;
  return size > 1 && !gateFiles.approved
    ? { repo: request.repo, target: request.target, size, hostId: state.hostId, base: state.base, headSha: head.headSha }
    : undefined;
}

async function requestAdmission(ctx: LandingContext, state: LandingState): Promise<void> {
  const { runId, request, tracker, local, queue: admission } = ctx;
  const batch = batchTicket(ctx, state);
  const batchSize = batch?.size ?? 1;
  // Back from a merge that found the target moved: it waits for the next batch, never let in alone again.
  const moved = admission.moved === true;
  admission.moved = undefined;
  const { queueId, admitted, seq } = await tracker.step(
    'queue.requestAdmission',
    'capsule',
    () =>
      local['queue.requestAdmission']({
        repo: request.repo,
        target: request.target,
        landingId: runId,
        ...(request.priority ? { lane: request.priority } : {}),
        ...(admission.seq !== undefined ? { seq: admission.seq } : {}),
        ...(batch ? { batch } : {}),
        ...(moved ? { moved } : {}),
      }),
    (value) => (value.admitted ? 'admitted at once' : batch ? `waiting for its turn (batches of up to ${batchSize})` : 'waiting for its turn'),
  );
  admission.id = queueId;
  if (seq !== undefined) admission.seq = seq;
  if (admitted) admission.admitted = true;
}

/** What a batch decided for this landing (workflows/merge-batch/merge-batch.ts). */
function afterBatch(ctx: LandingContext, state: LandingState): Next {
  const { tracker, request, queue: admission } = ctx;
  const result = admission.batchResult!;
  // It does not hold the target (the batch did): nothing to release, and a next turn is asked afresh.
  admission.batchResult = undefined;
  admission.id = undefined;
  admission.admitted = false;
  if (result.kind === 'landed') {
    tracker.enter('merge');
    tracker.facts.mergedSha = result.mergedSha;
    tracker.facts.batch = { id: result.batchId, members: result.members, round: result.round, treeSha: result.treeSha, stackedSha: result.stackedSha };
    const others = result.members.length - 1;
    return end(
      tracker.finish(
        'landed',
        `${request.target} fast-forwarded to ${result.mergedSha.slice(0, 12)} in batch ${result.batchId}${others ? ` with ${others} other landing(s)` : ''} (all suites green on the batch's tree ${result.treeSha.slice(0, 12)}, round ${result.round}); this landing's commits end at ${result.stackedSha.slice(0, 12)}`,
      ),
    );
  }
  if (result.kind === 'culprit') {
    tracker.facts.culpritIn = [
      ...(tracker.facts.culpritIn ?? []),
      { batchId: result.batchId, round: result.round, treeSha: result.treeSha, failing: result.failing },
    ];
    state.culprit = { batchId: result.batchId, failing: result.failing };
  }
  tracker.journal.record({
    kind: 'step',
    name: `queue.batch:${result.batchId}`,
    status: 'done',
    detail: result.kind === 'culprit' ? `culprit: ${result.summary}` : `goes on alone: ${result.reason}`,
  });
  return go('retarget');
}
