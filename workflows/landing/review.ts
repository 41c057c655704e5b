import { end, go, placed, type LandingContext, type LandingState, type Next } from './context';
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
  if (verdict.status === 'approved') {
    state.approvedTree = verdict.treeSha;
    return go('verify');
  }
  const incomplete = verdict.status === 'review-incomplete';
  if (state.moved) {
    return end(
      tracker.finish(incomplete ? 'review-incomplete' : 'review-blocked', `review after ${request.target} moved: ${verdict.summary}; nothing was merged`, {
        type: incomplete ? 'TARMAC_REVIEW_INCOMPLETE' : 'TARMAC_REVIEW_BLOCKED',
        message: verdict.summary,
      }),
    );
  }
  if (incomplete) return end(tracker.finish('review-incomplete', `${verdict.summary}; nothing was merged`, { type: 'TARMAC_REVIEW_INCOMPLETE', message: `missing reviewers: ${verdict.missing.join(', ')}` }));
  if (state.fixups >= maxFixupRounds(state)) {
    return end(tracker.finish('review-blocked', `${verdict.summary}; no fixup round left; nothing was merged`, { type: 'TARMAC_REVIEW_BLOCKED', message: verdict.summary }));
  }
  const findings = verdict.blocking.map((finding) => `- ${finding.file}:${finding.line ?? 0} [${finding.severity}] ${finding.message}`).join('\n');
  state.repair = { kind: 'findings', findings, problem: verdict.summary };
  return go('fixup');
}
