import { FailureCode } from '../../core/failures';
import { fixupRoundsAllowed } from '../../policies/fixup-rounds';
import { end, finalAfterMove, go, placed, type LandingContext, type LandingState, type Next } from './context';
import { redSummary, runGate } from './steps';

/** How many fixup rounds the landing allows: the gate file's, else the recipe's default (policies/fixup-rounds.ts). */
export const maxFixupRounds = (ctx: LandingContext, state: LandingState): number => fixupRoundsAllowed(state.gate?.fixup?.maxRounds, ctx.request.recipes?.limits.landing.maxFixupRounds);

/**
 * gate: every suite the target declares, on the head's exact tree; a red suite is settled by
 * evidence (flake.ts), and one the recipe excuses (flaky, pre-existing, quarantined) counts toward
 * green. Green → review (when the gate file asks for one) or verify; red → a fixup round while rounds
 * are left; after a moved target a red re-gate is final.
 */
export async function gate(ctx: LandingContext, state: LandingState): Promise<Next> {
  const { tracker, request } = ctx;
  const { host, gate: gateFile, head } = placed(state);
  tracker.enter('gate');
  state.round += 1;
  // A red suite is settled by evidence: again on this tree, and on the base the head is rebased onto (flake.ts).
  const verdict = await runGate(ctx, state.hostId, gateFile, state.round, head.headSha, head.treeSha, { baseSha: state.base, host, local: ctx.local });
  state.verdict = verdict;
  if (verdict.green) return go(gateFile.review ? 'review' : 'verify');
  const red = redSummary(ctx, gateFile, head.treeSha, state.round);
  if (finalAfterMove(state)) return end(tracker.fail(FailureCode.gateFailed, `re-gate after ${request.target} moved: ${red.summary}`, { message: red.message }));
  if (state.fixups >= maxFixupRounds(ctx, state)) {
    return end(
      state.fixups === 0
        ? tracker.fail(FailureCode.gateFailed, red.summary, { message: red.message })
        : tracker.fail(FailureCode.fixupFailed, `${red.summary}; still red after ${state.fixups} fixup round(s)`, { message: red.message }),
    );
  }
  // A red gate is a failing command: a fix loop reproduces it (playbooks first, then an agent).
  state.repair = { kind: 'red', failing: verdict.failing, problem: red.summary };
  return go('fixup');
}
