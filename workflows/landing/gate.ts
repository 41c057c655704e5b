import type { EnvironmentFailure } from '../../core/environment-types';
import { FailureCode } from '../../core/failures';
import { fixupRoundsAllowed } from '../../policies/fixup-rounds';
import { end, finalAfterMove, go, placed, type LandingContext, type LandingState, type Next } from './context';
import { environmentFailureText } from '../../policies/environment-text';
import { placedEnvironment, readyEnvironment } from './environment';
import { redSummary, runGate } from './steps';

/** How many fixup rounds the landing allows: the gate file's, else the recipe's default (policies/fixup-rounds.ts). */
export const maxFixupRounds = (ctx: LandingContext, state: LandingState): number =>
  fixupRoundsAllowed(state.gate?.fixup?.maxRounds, ctx.request.recipes?.limits.landing.maxFixupRounds);

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
  // The repository's environment of this tree first (none declared: none, and nothing is asked).
  // Found by the placement beside its rebase for this very head (a hit): no trip; else prepared now.
  const found = placedEnvironment(ctx, state.placedEnvironment, head.headSha, head.treeSha);
  state.placedEnvironment = undefined;
  const ready = found ? { environment: found } : await readyEnvironment(ctx, state.hostId, state.environment, gateFile, head.headSha, head.treeSha, state.base);
  if ('failed' in ready) return environmentFailed(ctx, state, ready.failed);
  const { environment } = ready;
  state.ready = environment;
  state.round += 1;
  // A red suite is settled by evidence: again on this tree, and on the base the head is rebased onto (flake.ts).
  const environmentOnBase = async () => {
    if (!state.environment) return undefined;
    const base = await readyEnvironment(ctx, state.hostId, state.environment, gateFile, state.base, undefined, state.base);
    return 'environment' in base ? base.environment : undefined;
  };
  const settle = { baseSha: state.base, host, local: ctx.local, ...(environment ? { environment, environmentOnBase } : {}) };
  const verdict = await runGate(ctx, state.hostId, gateFile, state.round, head.headSha, head.treeSha, settle, environment);
  state.verdict = verdict;
  if (verdict.green) return go(gateFile.review ? 'review' : 'verify');
  const red = redSummary(ctx, gateFile, head.treeSha, state.round);
  if (finalAfterMove(state))
    return end(tracker.fail(FailureCode.gateFailed, `re-gate after ${request.target} moved: ${red.summary}`, { message: red.message }));
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

/**
 * A setup that failed: when the branch changed the environment's inputs (a lockfile naming a
 * version that does not exist), its own change broke it, and a fixup round gets the setup's
 * failure as its input, like a red gate; otherwise (the target's own environment does not build,
 * no rounds left, the target moved) the landing ends `environment-failed`, no gate or agent run.
 */
function environmentFailed(ctx: LandingContext, state: LandingState, failure: EnvironmentFailure): Next {
  const { summary, message } = environmentFailureText(failure);
  if (failure.branchChangedInputs && !finalAfterMove(state) && state.fixups < maxFixupRounds(ctx, state)) {
    state.repair = { kind: 'environment', problem: summary, failure: message };
    return go('fixup');
  }
  const after = state.fixups > 0 ? `; still failing after ${state.fixups} fixup round(s)` : '';
  return end(ctx.tracker.fail(FailureCode.environmentFailed, `${summary}${after}; nothing was merged`, { message }));
}
