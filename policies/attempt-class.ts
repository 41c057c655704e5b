import { rolesThatMustCommit, type SessionAttemptReport, type SessionRole } from '../core/session-types';
import { classifySession } from './session-classifier';
import type { AttemptClass } from './session-policy';

/**
 * The class of one attempt, from what its activity reported: how it ended (the classifier),
 * then the evidence gate — trust the evidence, not the claim: code roles must have added commits,
 * a resolver that left its rebase unfinished has not resolved the conflict, whatever it commits, and
 * a reviewer whose result is not `ok` has not reviewed.
 * An agent whose result asks questions has `asked`: it waits for the run's answer.
 */
export function attemptClassOf(seen: SessionAttemptReport, role: SessionRole, hostLost: boolean): AttemptClass {
  const ended = classifySession({
    exitCode: seen.exitCode,
    oomKilled: seen.oomKilled,
    timedOut: seen.timedOut,
    hostLost,
    sawFirstTurn: seen.sawFirstTurn,
    result: seen.result ? 'valid' : seen.resultProblem === 'result.json is missing' ? 'missing' : 'invalid',
    // The activity read the result, so it is collected even when the container had finished unseen.
    collected: true,
    // The model gateway refused a request: the run's budget, not the agent, ended the attempt.
    budgetExceeded: (seen.modelUsage?.budgetRefusals ?? 0) > 0,
    unavailable: seen.unavailable !== undefined,
    modelRefused: seen.modelUsage?.refusedModel !== undefined,
  });
  // Questions first: an agent that asks is waiting for an answer, whatever else it did; the run answers
  // before any more agent time is spent (never a failure to respawn, never a delivery to trust).
  if (ended === 'delivered' && (seen.result?.questions?.length ?? 0) > 0) return 'asked';
  if (ended === 'delivered' && rolesThatMustCommit.includes(role) && (seen.commitsAdded < 1 || seen.workspaceState === 'rebasing')) return 'no-evidence';
  // A reviewer's evidence is a review: a result that says error (the CLI failed) or blocked is none,
  // so the policy respawns it like any failed attempt — never a delivery of "no findings".
  if (ended === 'delivered' && role === 'reviewer' && seen.result?.status !== 'ok') return 'no-evidence';
  return ended;
}
