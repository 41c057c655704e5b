import { existsSync, readFileSync } from 'node:fs';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { fieldName } from '../../core/gate-file';
import { costOf, priceOf, roundUsd, zeroTokens, type ModelProvider, type PricingTable, type TokenCounts } from '../../core/model-pricing';

/**
 * The model gateway's counters: what a session spent through it, per model and in all,
 * and what it refused. Persisted by the gateway after every exchange (`usage.json`) and
 * read back on start, so a worker restart neither loses the spend nor resets the budget.
 */

const CountsSchema = {
  inputTokens: Type.Integer({ minimum: 0 }),
  outputTokens: Type.Integer({ minimum: 0 }),
  cacheCreationInputTokens: Type.Integer({ minimum: 0 }),
  cacheReadInputTokens: Type.Integer({ minimum: 0 }),
  reasoningTokens: Type.Integer({ minimum: 0 }),
  costUsd: Type.Number({ minimum: 0 }),
};

export const ModelGatewayUsageSchema = Type.Object({
  provider: Type.String(),
  ...CountsSchema,
  /** Requests forwarded to the upstream. */
  requests: Type.Integer({ minimum: 0 }),
  /** Responses whose usage was read. */
  metered: Type.Integer({ minimum: 0 }),
  /** Forwarded requests whose response had no usage (errors, token counts, model lists, cut streams). */
  unmetered: Type.Integer({ minimum: 0 }),
  /** Models answered that have no price in recipes/pricing.json: their cost counted as 0. */
  unpricedModels: Type.Array(Type.String()),
  /** Requests the budget refused before they reached the upstream; the last reason. */
  budgetRefusals: Type.Integer({ minimum: 0 }),
  lastBudgetRefusal: Type.Optional(Type.Object({ at: Type.String(), reason: Type.String() })),
  /**
   * Requests refused because their model is not on the operator's list for the provider
   * (recipes/pricing.json); the last one. Absent in counters written before the list.
   */
  modelRefusals: Type.Optional(Type.Integer({ minimum: 0 })),
  lastModelRefusal: Type.Optional(Type.Object({ at: Type.String(), model: Type.String(), reason: Type.String() })),
  /** Requests refused because the gateway does not forward them (path, size). */
  otherRefusals: Type.Integer({ minimum: 0 }),
  /** Exchanges that failed: the upstream unreachable or cut off, or the client gone mid-response. */
  failures: Type.Integer({ minimum: 0 }),
  byModel: Type.Record(Type.String(), Type.Object({ requests: Type.Integer({ minimum: 0 }), ...CountsSchema })),
  updatedAt: Type.String(),
});

export type ModelGatewayUsage = Static<typeof ModelGatewayUsageSchema>;

function emptyUsage(provider: ModelProvider): ModelGatewayUsage {
  return {
    provider,
    ...zeroTokens,
    costUsd: 0,
    requests: 0,
    metered: 0,
    unmetered: 0,
    unpricedModels: [],
    budgetRefusals: 0,
    otherRefusals: 0,
    failures: 0,
    byModel: {},
    updatedAt: new Date().toISOString(),
  };
}

/** The persisted counters, checked: a counter file that does not read back stops the gateway (never a silent reset of what was spent). */
export function loadUsage(path: string, provider: ModelProvider): ModelGatewayUsage {
  if (!existsSync(path)) return emptyUsage(provider);
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`${path}: the model gateway's counters are not valid JSON (${(error as Error).message}); refusing to start from zero`);
  }
  const first = Value.Errors(ModelGatewayUsageSchema, data).First();
  if (first) throw new Error(`${path}: ${fieldName(first.path)} ${first.message.toLowerCase()}; refusing to start from zero`);
  return data as ModelGatewayUsage;
}

function addCounts(into: TokenCounts & { costUsd: number }, tokens: TokenCounts, costUsd: number): void {
  into.inputTokens += tokens.inputTokens;
  into.outputTokens += tokens.outputTokens;
  into.cacheCreationInputTokens += tokens.cacheCreationInputTokens;
  into.cacheReadInputTokens += tokens.cacheReadInputTokens;
  into.reasoningTokens += tokens.reasoningTokens;
  into.costUsd = roundUsd(into.costUsd + costUsd);
}

/**
 * Adds one response's tokens to the counters, priced by the first of `models` (the
 * response's, then the request's) that has a price; none → cost 0 and the model flagged.
 */
export function meterResponse(
  usage: ModelGatewayUsage,
  pricing: PricingTable,
  tokens: TokenCounts,
  models: (string | undefined)[],
): { costUsd: number; pricedAs?: string; unpriced?: string } {
  const named = models.find((model): model is string => typeof model === 'string' && model.length > 0) ?? 'unknown';
  const priced = models.map((model) => priceOf(pricing, model)).find((found) => found !== undefined);
  const costUsd = priced ? costOf(priced.price, tokens) : 0;
  addCounts(usage, tokens, costUsd);
  const entry = (usage.byModel[named] ??= { requests: 0, ...zeroTokens, costUsd: 0 });
  entry.requests += 1;
  addCounts(entry, tokens, costUsd);
  usage.metered += 1;
  if (!priced && !usage.unpricedModels.includes(named)) usage.unpricedModels.push(named);
  return priced ? { costUsd, pricedAs: priced.model } : { costUsd, unpriced: named };
}
