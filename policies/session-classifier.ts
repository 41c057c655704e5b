/**
 * How an agent session ended, from mechanical facts only. Pure and table-tested.
 * A valid result counts as a delivery whatever the exit code: the evidence (commits,
 * gates) decides later, never the agent's exit code or its summary.
 */
export const SessionClass = {
  delivered: 'delivered',
  diedBeforeFirstTurn: 'died-before-first-turn',
  crashed: 'crashed',
  oom: 'oom',
  timeout: 'timeout',
  lostHost: 'lost-host',
  budgetExhausted: 'budget-exhausted',
  /** The model gateway refused the model the agent asked for: it is not on the operator's list (recipes/pricing.json). */
  modelRefused: 'model-refused',
  doneUndelivered: 'done-undelivered',
  /** No container was started: this worker lacks the harness's image or its provider's key. */
  agentUnavailable: 'agent-unavailable',
} as const;
export type SessionClass = (typeof SessionClass)[keyof typeof SessionClass];

export interface SessionEndFacts {
  /** Exit code of the container; null when it never exited normally (killed on timeout, host lost). */
  exitCode: number | null;
  oomKilled: boolean;
  timedOut: boolean;
  /** The host (its worker or Docker daemon) stopped answering before the session ended. */
  hostLost: boolean;
  /** The agent printed its first-turn marker (or, for CLI harnesses, any output at all). */
  sawFirstTurn: boolean;
  /** Result file or parsed stdout: valid, present but invalid, or missing. */
  result: 'valid' | 'invalid' | 'missing';
  /** The workflow has the result (false when a finished container was found but not yet read). */
  collected: boolean;
  /** The run's budget was exhausted by this session's usage (its model gateway refused a request). */
  budgetExceeded: boolean;
  /** The worker could not start the agent at all (its image or key is missing); nothing ran. */
  unavailable?: boolean;
  /** The model gateway refused a request for a model off the operator's list. */
  modelRefused?: boolean;
}

export function classifySession(facts: SessionEndFacts): SessionClass {
  if (facts.unavailable) return SessionClass.agentUnavailable;
  if (facts.hostLost) return SessionClass.lostHost;
  if (facts.oomKilled) return SessionClass.oom;
  if (facts.timedOut) return SessionClass.timeout;
  // A model gateway that refused a request for the budget ended the session, whatever the CLI made of it.
  if (facts.budgetExceeded) return SessionClass.budgetExhausted;
  // So did one that refused the model the agent asked for: no respawn or rung of the same model gets it.
  if (facts.modelRefused) return SessionClass.modelRefused;
  if (facts.result === 'valid') {
    if (!facts.collected) return SessionClass.doneUndelivered;
    return SessionClass.delivered;
  }
  if (!facts.sawFirstTurn) return SessionClass.diedBeforeFirstTurn;
  return SessionClass.crashed;
}
