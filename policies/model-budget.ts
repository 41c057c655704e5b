/** What a session may still spend on model requests: its share of the run's budget when it started. */
export interface ModelBudgetLeft {
  tokens: number;
  costUsd: number;
}

/**
 * May the session's next model request go? Checked by the model gateway before every
 * request, against what the session has spent through it so far: the answer names the
 * limit that is reached, or is undefined while there is room. A request can overshoot
 * (its size is known only from its response); the one after it is refused. Pure.
 */
export function modelBudgetRefusal(spent: { inputTokens: number; outputTokens: number; costUsd: number }, left: ModelBudgetLeft): string | undefined {
  const tokens = spent.inputTokens + spent.outputTokens;
  if (tokens >= left.tokens) return `tokens: ${tokens} used of the ${left.tokens} this session may use`;
  if (spent.costUsd >= left.costUsd) return `cost: $${spent.costUsd.toFixed(4)} spent of the $${left.costUsd} this session may spend`;
  return undefined;
}
