import { condition } from '@temporalio/workflow';
import { end, go, placed, type LandingContext, type LandingState, type Next } from './context';

/**
 * verify: on exactly the head to merge and the target it is on — ≥ 1 commit, a changed tree, no
 * dropped patch, the gate file unchanged or approved, every suite green and the quorum met on this
 * tree (policies/verify.ts). Then the queue, once; after a moved target straight back to merge.
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
  if (!verified.ok) return end(tracker.finish('verify-failed', `verification refused the merge: ${verified.problems.join('; ')}`, { type: 'TARMAC_VERIFY_FAILED', message: verified.problems.join('; ') }));
  return go(ctx.queue.id ? 'merge' : 'queue');
}

/** queue: merges to one target go one at a time; wait for this landing's turn. */
export async function queue({ runId, request, tracker, shared, queue: admission }: LandingContext): Promise<Next> {
  tracker.enter('queue');
  const { queueId } = await tracker.step('queue.requestAdmission', 'capsule', () => shared['queue.requestAdmission']({ repo: request.repo, target: request.target, landingId: runId }));
  admission.id = queueId;
  await condition(() => admission.admitted);
  return go('merge');
}
