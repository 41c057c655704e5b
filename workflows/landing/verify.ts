import { condition } from '@temporalio/workflow';
import { FailureCode } from '../../core/failures';
import { maxFixupRounds } from './gate';
import { end, go, placed, type LandingContext, type LandingState, type Next } from './context';

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
  if (verified.repairable && state.verifyFixups === 0 && !state.moved && maxFixupRounds(ctx, state) > 0) {
    state.verifyFixups += 1;
    state.repair = { kind: 'verify', problems, problem: `verification refused the merge: ${problems}` };
    return go('fixup');
  }
  const after = state.verifyFixups > 0 ? ' after its fixup round' : '';
  return end(tracker.fail(FailureCode.verifyFailed, `verification refused the merge${after}: ${problems}; nothing was merged`, { message: problems }));
}

/**
 * queue: merges to one target go one at a time; wait for this landing's turn — no wait at all when
 * the target is free (the request's answer admits it).
 */
export async function queue(ctx: LandingContext): Promise<Next> {
  ctx.tracker.enter('queue');
  await requestAdmission(ctx);
  await condition(() => ctx.queue.admitted);
  return go('merge');
}

async function requestAdmission({ runId, request, tracker, local, queue: admission }: LandingContext): Promise<void> {
  const { queueId, admitted } = await tracker.step('queue.requestAdmission', 'capsule', () => local['queue.requestAdmission']({ repo: request.repo, target: request.target, landingId: runId }), (value) =>
    value.admitted ? 'admitted at once' : 'waiting for its turn',
  );
  admission.id = queueId;
  if (admitted) admission.admitted = true;
}
