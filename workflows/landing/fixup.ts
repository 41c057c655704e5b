import { FailureCode } from '../../core/failures';
import type { FixOutcome } from '../../core/fix-types';
import type { ConversationRef, SessionOutcome } from '../../core/session-types';
import { end, go, placed, setHead, type LandingContext, type LandingState, type Next, type Repair } from './context';
import { fixRedGate, session } from './steps';

/**
 * fixup: one round for what the gate or the panel found — a fix loop for failing suites (its
 * repro the suites), a fixer session for blocking findings (in the conversation of the agent that
 * last fixed this landing, when there is one). The gate decides, not the agent: only new commits
 * count, and the new head goes back through the questions to a re-gate.
 */
export async function fixup(ctx: LandingContext, state: LandingState): Promise<Next> {
  const { runId, tracker } = ctx;
  const { host, gate: gateFile, head } = placed(state);
  const repair = state.repair!;
  tracker.enter('fixup');
  state.fixups += 1;
  const round = state.fixups;
  // The agents run their commands (and the fix loop its repro) in the environment the last gate round ran in.
  const repaired: SessionOutcome | FixOutcome =
    repair.kind === 'red'
      ? await fixRedGate(ctx, gateFile, repair.failing, round, state.hostId, head.headSha, state.ready)
      : // A setup that failed on this head has no environment of this head: its fixer works without one.
        await session(
          ctx,
          'fixer',
          `fixer-${round}`,
          head.headSha,
          state.hostId,
          { prompt: fixerPrompt(repair) },
          state.lastAgent,
          repair.kind === 'environment' ? undefined : state.ready,
        );
  state.lastAgent = deliveredAgent(repaired) ?? state.lastAgent;
  const unavailable =
    'outcome' in repaired
      ? repaired.outcome === 'agent-unavailable'
        ? repaired.summary
        : undefined
      : repaired.status === 'agent-unavailable'
        ? repaired.summary
        : undefined;
  if (unavailable !== undefined) {
    return end(
      tracker.fail(FailureCode.agentUnavailable, `${repair.problem}; fixup round ${round} could not start an agent: ${unavailable}; nothing was merged`, {
        message: unavailable,
      }),
    );
  }
  // The fix loop's agent asked and the answer declined (or none came in time): the landing's decision too.
  if ('outcome' in repaired && repaired.outcome === 'needs-decision') {
    return end(tracker.fail(FailureCode.needsDecision, `fixup round ${round}: ${repaired.summary}; nothing was merged`, { message: repaired.summary }));
  }
  const after = await host['capsule.workspaceHead']({ runId, since: head.headSha });
  if (after.commitsSince < 1) {
    return end(
      tracker.fail(FailureCode.fixupFailed, `fixup round ${round} added no commit; ${repair.problem}`, { message: 'the fixup round added no commit' }),
    );
  }
  setHead(ctx, state, await host['capsule.workspaceHead']({ runId, since: state.base }));
  state.when = `After fixup round ${round}`;
  return go('questions');
}

/** What a fixer session is asked: the panel's blocking findings, what verify refused on the head, or why the environment's setup failed. */
function fixerPrompt(repair: Exclude<Repair, { kind: 'red' }>): string {
  if (repair.kind === 'environment') {
    return `The repository's environment could not be built for this branch: its setup (declared in the target's gate file or devcontainer) failed on the branch's own inputs (e.g. its lockfile).\n${repair.failure}\nMake the smallest change to the branch that lets the setup succeed (for example, a dependency version that exists) and commit it.`;
  }
  return repair.kind === 'findings'
    ? `The review panel requested changes. Blocking findings:\n${repair.findings}\nFix them and commit the fix.`
    : `The final verification of this landing refused the merge: ${repair.problems}.\nMake the smallest change that mends it (for leftover conflict markers: resolve the conflict the markers enclose and remove them) and commit it.`;
}

/** The conversation of the agent a fixup round ended with, when it delivered (a follow-up can continue it). */
function deliveredAgent(round: SessionOutcome | FixOutcome): ConversationRef | undefined {
  if ('outcome' in round) {
    const last = round.sessions.at(-1);
    return last && last.status === 'delivered' ? { sessionId: last.sessionId, attempt: last.attempts ?? 1, harnessModel: last.harnessModel } : undefined;
  }
  const attempt = round.attempts.at(-1);
  return round.status === 'delivered' && attempt ? { sessionId: round.sessionId, attempt: attempt.attempt, harnessModel: attempt.harnessModel } : undefined;
}
