import { ladderIndex, nextRung } from './model-ladder';
import type { SessionClass } from './session-classifier';

/**
 * Classes the evidence gate adds: `no-evidence`, the agent claimed success but the worktree gained
 * no commit (a reviewer: its result is not `ok`, so no review); `asked`, the agent's result asks questions (it waits for an answer, not a successor).
 */
export type AttemptClass = SessionClass | 'no-evidence' | 'asked';

export interface AttemptRecord {
  harnessModel: string;
  class: AttemptClass;
  /** For `agent-unavailable`: what the worker lacks (the image or key), as the attempt said. */
  unavailable?: string;
  /** For `model-refused`: the model gateway's reason, the model named. */
  refused?: string;
}

interface SessionPolicyInput {
  attempts: readonly AttemptRecord[];
  ladder: readonly string[];
  /** Respawns of one harness#model for the same failure class before escalating. */
  maxRespawns: number;
  /** Containers per session in all. */
  maxAttempts: number;
}

export type SessionDecision =
  | { action: 'done' }
  | { action: 'ask'; reason: string }
  | { action: 'collect'; reason: string }
  | { action: 'respawn'; harnessModel: string; reason: string }
  | { action: 'escalate'; harnessModel: string; fromIndex: number; toIndex: number; reason: string }
  | { action: 'give-up'; reason: string };

/**
 * What to do after a session attempt ended. An attempt ends only when its container has: the
 * `session.run` activity reattaches to a live container and waits on it, so there is no live
 * session to decide about here. Reuse first: a done-but-undelivered one is collected, never
 * given a successor. Then
 * respawn the same harness#model (bounded), then escalate one ladder index when the
 * same class of failure repeats. A lost host is not the model's fault: it is
 * respawned without counting toward escalation.
 */
export function decideNext(input: SessionPolicyInput): SessionDecision {
  const last = input.attempts[input.attempts.length - 1];
  if (!last) return { action: 'respawn', harnessModel: input.ladder[0] ?? '', reason: 'no attempt yet' };
  if (last.class === 'done-undelivered') return { action: 'collect', reason: 'the session finished with a result that was not collected' };
  if (last.class === 'delivered') return { action: 'done' };
  if (last.class === 'asked') return { action: 'ask', reason: 'the agent asked: the run answers before more agent time is spent' };
  if (last.class === 'budget-exhausted') return { action: 'give-up', reason: 'the run budget is exhausted' };
  // The operator did not list the model: the same agent would ask for it again, and nothing was charged.
  if (last.class === 'model-refused')
    return { action: 'give-up', reason: `the model gateway refused the model ${last.harnessModel} asked for${last.refused ? `: ${last.refused}` : ''}` };
  // Rungs found unavailable are passed over: each gets one attempt (one step), never a second.
  const unavailable = new Set(input.attempts.filter((attempt) => attempt.class === 'agent-unavailable').map((attempt) => attempt.harnessModel));
  // Nothing ran, so nothing is learned by trying the same rung again: move to the next rung of the
  // ladder (the first one when the model was not on it) that has not been found unavailable.
  if (last.class === 'agent-unavailable') {
    const from = ladderIndex(input.ladder, last.harnessModel);
    const index = input.ladder.findIndex((spec, at) => at > from && !unavailable.has(spec));
    const why = `${last.harnessModel} cannot run on this worker${last.unavailable ? ` (${last.unavailable})` : ''}`;
    if (index < 0) return { action: 'give-up', reason: `${why} and no rung of the ladder after it can be tried` };
    return {
      action: 'escalate',
      harnessModel: input.ladder[index]!,
      fromIndex: from,
      toIndex: index,
      reason: `${why}: skipped, moved to rung ${index} ${input.ladder[index]!}`,
    };
  }
  // The limit is on containers: a rung that could not start ran none.
  const containers = input.attempts.length - input.attempts.filter((attempt) => attempt.class === 'agent-unavailable').length;
  if (containers >= input.maxAttempts) {
    return { action: 'give-up', reason: `${containers} attempts reached the limit of ${input.maxAttempts}` };
  }
  if (last.class === 'lost-host') return { action: 'respawn', harnessModel: last.harnessModel, reason: 'the host was lost' };

  // Failures of this class on this harness#model since the session last changed model.
  let sameClass = 0;
  for (let index = input.attempts.length - 1; index >= 0; index -= 1) {
    const attempt = input.attempts[index]!;
    if (attempt.harnessModel !== last.harnessModel) break;
    if (attempt.class === last.class) sameClass += 1;
  }
  if (sameClass <= input.maxRespawns) {
    return { action: 'respawn', harnessModel: last.harnessModel, reason: `${last.class} (${sameClass} of ${input.maxRespawns + 1} before escalating)` };
  }
  let rung = nextRung(input.ladder, last.harnessModel);
  while (rung && unavailable.has(rung.harnessModel)) rung = nextRung(input.ladder, rung.harnessModel);
  if (!rung) {
    return { action: 'give-up', reason: `${last.class} repeated on ${last.harnessModel}, which has no higher rung on the ladder that can run` };
  }
  return {
    action: 'escalate',
    harnessModel: rung.harnessModel,
    fromIndex: ladderIndex(input.ladder, last.harnessModel),
    toIndex: rung.index,
    reason: `${last.class} repeated ${sameClass} times on ${last.harnessModel}`,
  };
}
