import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { fieldName } from './gate-file';
import { RecipeError } from './recipe-error';

/** The model APIs the model gateway speaks. */
export const modelProviders = ['anthropic', 'openai'] as const;
export type ModelProvider = (typeof modelProviders)[number];

const dollarsPerMillion = (description: string) => Type.Number({ minimum: 0, maximum: 10_000, description });

const ModelPriceSchema = Type.Object(
  {
    provider: Type.Union(modelProviders.map((name) => Type.Literal(name))),
    input: dollarsPerMillion('USD per million input tokens (not cached)'),
    output: dollarsPerMillion('USD per million output tokens (reasoning included)'),
    cacheWrite: Type.Optional(dollarsPerMillion('USD per million tokens written to the prompt cache (default: input)')),
    cacheRead: Type.Optional(dollarsPerMillion('USD per million tokens read from the prompt cache (default: input)')),
    taken: Type.String({
      pattern: '^\\d{4}-(0[1-9]|1[0-2])(-(0[1-9]|[12]\\d|3[01]))?$',
      description: "when the price was read from the provider's price list (YYYY-MM-DD, or YYYY-MM): a price says how old it is",
    }),
  },
  { additionalProperties: false },
);

export const PricingRecipeSchema = Type.Object(
  {
    version: Type.Literal(1),
    description: Type.Optional(Type.String()),
    models: Type.Record(Type.String({ pattern: '^[A-Za-z0-9._:/-]+$' }), ModelPriceSchema),
  },
  { additionalProperties: false },
);

/** A price as the gateway uses it; `taken` is required in the recipe file (checked at load), optional for tables made in code. */
export type ModelPrice = Omit<Static<typeof ModelPriceSchema>, 'taken'> & { taken?: string };
export type PricingTable = Record<string, ModelPrice>;

/**
 * Token counts of one response, the same for every provider. `inputTokens` is all the
 * input the model read, cached or not (Anthropic reports the cached parts apart; OpenAI
 * includes them): the two cache counts are parts of it. `outputTokens` includes
 * reasoning tokens (`reasoningTokens` is part of it, reported by OpenAI only).
 */
export interface TokenCounts {
  inputTokens: number;
  outputTokens: number;
  cacheCreationInputTokens: number;
  cacheReadInputTokens: number;
  reasoningTokens: number;
}

export const zeroTokens: TokenCounts = { inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, reasoningTokens: 0 };

/** Parses `recipes/pricing.json`; errors name the file and the field. */
export function parsePricing(text: string, file = 'pricing.json'): PricingTable {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new RecipeError(file, '(root)', `is not valid JSON: ${(error as Error).message}`);
  }
  const first = Value.Errors(PricingRecipeSchema, data).First();
  if (first) throw new RecipeError(file, fieldName(first.path), first.message.toLowerCase());
  return (data as Static<typeof PricingRecipeSchema>).models;
}

/**
 * Is a model on the operator's list for this provider? The list is `recipes/pricing.json`: a model
 * the gateway may forward is one it can price (a dated snapshot of a listed model counts as it), so
 * no request is ever metered at an unknown cost. Pure.
 */
export function modelAllowance(table: PricingTable, provider: ModelProvider, model: string): { ok: true } | { ok: false; reason: string } {
  const priced = priceOf(table, model);
  const listed = Object.entries(table)
    .filter(([, price]) => price.provider === provider)
    .map(([name]) => name);
  const known = `${provider} models listed: ${listed.join(', ') || 'none'}`;
  if (!priced) return { ok: false, reason: `model "${model}" is not on the operator's list of ${provider} models (recipes/pricing.json; ${known})` };
  if (priced.price.provider !== provider)
    return { ok: false, reason: `model "${model}" is listed for provider ${priced.price.provider}, not ${provider} (recipes/pricing.json; ${known})` };
  return { ok: true };
}

/** A dated snapshot or `-latest` alias of a base model name (`claude-sonnet-4-5-20250929`, `gpt-5-mini-2025-08-07`). */
const snapshotSuffix = /-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$/;

/**
 * The price of a model: its exact name, else its base name without a snapshot date.
 * Nothing looser (no prefix matching): `gpt-5-mini` must never be priced as `gpt-5`.
 * Pure.
 */
export function priceOf(table: PricingTable, model: string | undefined): { model: string; price: ModelPrice } | undefined {
  if (!model) return undefined;
  if (Object.hasOwn(table, model)) return { model, price: table[model]! };
  const base = model.replace(snapshotSuffix, '');
  if (base !== model && Object.hasOwn(table, base)) return { model: base, price: table[base]! };
  return undefined;
}

/** USD, rounded to a billionth so sums do not drift. Pure. */
export const roundUsd = (value: number): number => Math.round(value * 1e9) / 1e9;

/** The cost of one response's tokens at a price. Pure. */
export function costOf(price: ModelPrice, tokens: TokenCounts): number {
  const uncached = Math.max(0, tokens.inputTokens - tokens.cacheCreationInputTokens - tokens.cacheReadInputTokens);
  const micro =
    uncached * price.input +
    tokens.cacheCreationInputTokens * (price.cacheWrite ?? price.input) +
    tokens.cacheReadInputTokens * (price.cacheRead ?? price.input) +
    tokens.outputTokens * price.output;
  return roundUsd(micro / 1e6);
}
