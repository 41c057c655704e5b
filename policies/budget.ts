import type { BudgetCommand, SessionMeters } from '../core/session-types';

export interface BudgetLimits {
  tokens: number;
  costUsd: number;
  sessions: number;
  wallMs: number;
}

/**
 * Is the run's budget spent? Checked before every new session: the answer names the
 * limit that was crossed, or is undefined while there is budget left. Pure.
 */
export function budgetExhausted(
  meters: Pick<SessionMeters, 'inputTokens' | 'outputTokens' | 'costUsd' | 'sessionsSpawned' | 'wallTimeMs'>,
  budget: BudgetLimits,
): string | undefined {
  const tokens = meters.inputTokens + meters.outputTokens;
  if (tokens > budget.tokens) return `tokens: ${tokens} used of ${budget.tokens}`;
  if (meters.costUsd > budget.costUsd) return `cost: $${meters.costUsd.toFixed(4)} spent of $${budget.costUsd}`;
  if (meters.sessionsSpawned >= budget.sessions) return `sessions: ${meters.sessionsSpawned} spawned of ${budget.sessions}`;
  if (meters.wallTimeMs > budget.wallMs) return `wall time: ${Math.round(meters.wallTimeMs / 1000)} s of ${Math.round(budget.wallMs / 1000)} s`;
  return undefined;
}

/**
 * What is left of a run's budget for its next child (a session, a fix loop, a panel),
 * in the form a session request takes; never below zero. Pure.
 */
export function budgetLeft(
  meters: Pick<SessionMeters, 'inputTokens' | 'outputTokens' | 'costUsd' | 'sessionsSpawned' | 'wallTimeMs'>,
  budget: BudgetLimits,
): { tokens: number; costUsd: number; sessions: number; wall: string } {
  return {
    tokens: Math.max(0, budget.tokens - meters.inputTokens - meters.outputTokens),
    costUsd: Math.max(0, Math.round((budget.costUsd - meters.costUsd) * 1e6) / 1e6),
    sessions: Math.max(1, budget.sessions - meters.sessionsSpawned),
    wall: `${Math.max(1, Math.ceil((budget.wallMs - meters.wallTimeMs) / 1000))}s`,
  };
}

/** One parallel child's share of what is left (a panel's reviewers split it). Pure. */
export function budgetShare(left: ReturnType<typeof budgetLeft>, children: number): ReturnType<typeof budgetLeft> {
  const count = Math.max(1, children);
  return {
    tokens: Math.floor(left.tokens / count),
    costUsd: Math.floor((left.costUsd / count) * 1e6) / 1e6,
    sessions: Math.max(1, Math.floor(left.sessions / count)),
    wall: left.wall,
  };
}

/** Why an operator's budget command cannot be taken (the update's validator says so), or undefined. Pure. */
export function budgetCommandProblem(command: BudgetCommand | undefined, paused: boolean): string | undefined {
  if (command?.action === 'stop') return undefined;
  if (command?.action !== 'extend') return 'action must be "extend" or "stop"';
  const amounts = [command.tokens, command.costUsd, command.sessions, command.wallMs];
  if (amounts.every((value) => value === undefined)) return 'extend needs at least one of tokens, costUsd, sessions, wallMs';
  if (amounts.some((value) => value !== undefined && !(typeof value === 'number' && value > 0))) return 'extensions must be positive numbers';
  if (!paused) return 'the run is not paused for its budget';
  return undefined;
}

/** A budget after an operator's `extend`. Pure. */
export function extendBudget<T extends BudgetLimits>(budget: T, command: Extract<BudgetCommand, { action: 'extend' }>): T {
  return {
    ...budget,
    tokens: budget.tokens + (command.tokens ?? 0),
    costUsd: budget.costUsd + (command.costUsd ?? 0),
    sessions: budget.sessions + (command.sessions ?? 0),
    wallMs: budget.wallMs + (command.wallMs ?? 0),
  };
}
