import { FailureCode } from '../../core/failures';
import { end, finalAfterMove, go, placed, type LandingContext, type LandingState, type Next } from './context';
import { reviewTree } from './steps';
import { maxFixupRounds } from './gate';

/**
 * review: the gate file's panel on the head's tree (a child workflow; the findings cache makes an
 * unchanged tree free). Approved → verify; blocking findings → a fixup round while rounds are left;
 * an incomplete panel, or any refusal after a moved target, is final.
 */
export async function review(ctx: LandingContext, state: LandingState): Promise<Next> {
  const { tracker, request } = ctx;
  const { host, gate: gateFile } = placed(state);
  const verdict = await reviewTree(ctx, host, state.hostId, gateFile.review!);
  if (verdict.needsDecision)
    return end(tracker.fail(FailureCode.needsDecision, `review: ${verdict.needsDecision}; nothing was merged`, { message: verdict.needsDecision }));
  if (verdict.status === 'approved') {
    state.approvedTree = verdict.treeSha;
    return go('verify');
  }
  const incomplete = verdict.status === 'review-incomplete';
  if (finalAfterMove(state)) {
    return end(
      tracker.fail(
        incomplete ? FailureCode.reviewIncomplete : FailureCode.reviewBlocked,
        `review after ${request.target} moved: ${verdict.summary}; nothing was merged`,
        { message: verdict.summary },
      ),
    );
  }
  if (incomplete)
    return end(
      tracker.fail(FailureCode.reviewIncomplete, `${verdict.summary}; nothing was merged`, { message: `missing reviewers: ${verdict.missing.join(', ')}` }),
    );
  if (state.fixups >= maxFixupRounds(ctx, state)) {
    return end(tracker.fail(FailureCode.reviewBlocked, `${verdict.summary}; no fixup round left; nothing was merged`, { message: verdict.summary }));
  }
  const findings = verdict.blocking.map((finding) => `- ${finding.file}:${finding.line ?? 0} [${finding.severity}] ${finding.message}`).join('\n');
  state.repair = { kind: 'findings', findings, problem: verdict.summary };
  return go('fixup');
}
