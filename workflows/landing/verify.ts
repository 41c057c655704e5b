import { condition } from '@temporalio/workflow';
import { FailureCode } from '../../core/failures';
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
  if (!verified.ok) return end(tracker.fail(FailureCode.verifyFailed, `verification refused the merge: ${verified.problems.join('; ')}`, { message: verified.problems.join('; ') }));
  return go(ctx.queue.id ? 'merge' : 'queue');
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
