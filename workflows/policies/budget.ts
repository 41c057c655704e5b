import type { SessionMeters } from '../../core/session-types';

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
export function budgetExhausted(meters: SessionMeters, budget: BudgetLimits): string | undefined {
  const tokens = meters.inputTokens + meters.outputTokens;
  if (tokens > budget.tokens) return `tokens: ${tokens} used of ${budget.tokens}`;
  if (meters.costUsd > budget.costUsd) return `cost: $${meters.costUsd.toFixed(4)} spent of $${budget.costUsd}`;
  if (meters.sessionsSpawned >= budget.sessions) return `sessions: ${meters.sessionsSpawned} spawned of ${budget.sessions}`;
  if (meters.wallTimeMs > budget.wallMs) return `wall time: ${Math.round(meters.wallTimeMs / 1000)} s of ${Math.round(budget.wallMs / 1000)} s`;
  return undefined;
}
