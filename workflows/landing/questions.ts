import { end, go, placed, type LandingContext, type LandingState, type Next } from './context';
import { checkGateFile } from './steps';

/**
 * questions: blocking decisions before the head's gate counts. Every head that can be merged is
 * checked — after the rebase, after each fixup round, after a rebase onto a moved target: a change
 * to the gate file is asked about, and only an approving answer for that exact version goes on.
 */
export async function questions(ctx: LandingContext, state: LandingState): Promise<Next> {
  const { host, head } = placed(state);
  // The phase shows on the first pass; later passes enter it only when they ask.
  if (state.round === 0) ctx.tracker.enter('questions');
  const known = state.headFacts?.base === state.base && state.headFacts.headSha === head.headSha ? state.headFacts.facts : undefined;
  const stopped = await checkGateFile(ctx, host, state.base, head.headSha, state.when, known);
  return stopped ? end(stopped) : go('gate');
}
