import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { fieldName } from '../gate-file';
import { checkHarnessModel } from '../harness-models';
import { HarnessesRecipeSchema, LadderRecipeSchema, LimitsRecipeSchema, PanelsRecipeSchema, RecipeError, type Recipes } from '../recipe-schemas';
import { parsePricing, type PricingTable } from '../model-pricing';

export { RecipeError };

/** The recipes that ship with Tarmac. */
export const defaultRecipesDir = resolve(__dirname, '..', '..', 'recipes');


function validated<T>(file: string, text: string, schema: TSchema): T {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new RecipeError(file, '(root)', `is not valid JSON: ${(error as Error).message}`);
  }
  const first = Value.Errors(schema, data).First();
  if (first) throw new RecipeError(file, fieldName(first.path), first.message.toLowerCase());
  return data as T;
}

/** Parses recipe texts (file name → content): every file and every cross-reference checked. */
export function parseRecipes(texts: { harnesses: string; ladder: string; limits: string; panels?: string }): Recipes {
  const harnesses = validated<{ harnesses: Recipes['harnesses'] }>('harnesses.json', texts.harnesses, HarnessesRecipeSchema).harnesses;
  const { ladder } = validated<{ ladder: string[] }>('ladder.json', texts.ladder, LadderRecipeSchema);
  const limits = validated<Recipes['limits']>('limits.json', texts.limits, LimitsRecipeSchema);
  ladder.forEach((entry, index) => {
    const check = checkHarnessModel(entry, harnesses);
    if (!check.ok) throw new RecipeError('ladder.json', `ladder[${index}]`, check.message);
  });
  const panels = texts.panels === undefined ? {} : validated<{ panels: Recipes['panels'] }>('panels.json', texts.panels, PanelsRecipeSchema).panels;
  for (const [name, panel] of Object.entries(panels)) {
    panel.reviewers.forEach((reviewer, index) => {
      const check = checkHarnessModel(reviewer, harnesses);
      if (!check.ok) throw new RecipeError('panels.json', `panels.${name}.reviewers[${index}]`, check.message);
    });
    if (panel.quorum > panel.reviewers.length) throw new RecipeError('panels.json', `panels.${name}.quorum`, `is ${panel.quorum} but the panel has ${panel.reviewers.length} reviewer(s)`);
    if (new Set(panel.reviewers).size !== panel.reviewers.length) throw new RecipeError('panels.json', `panels.${name}.reviewers`, 'must not name a reviewer twice (the cache is keyed by harness#model)');
  }
  const version = createHash('sha256')
    .update([texts.harnesses, texts.ladder, texts.limits, texts.panels ?? ''].join('\0'))
    .digest('hex')
    .slice(0, 12);
  return { version, harnesses, ladder, limits, panels };
}

/** Loads and validates the recipes of a directory (default: the repository's `recipes/`). */
export function loadRecipes(dir: string = defaultRecipesDir): Recipes {
  const read = (file: string) => readFileSync(join(dir, file), 'utf8');
  return parseRecipes({ harnesses: read('harnesses.json'), ladder: read('ladder.json'), limits: read('limits.json'), panels: read('panels.json') });
}

/** Loads the pricing table of a recipes directory (default: the repository's `recipes/`). */
export function loadPricing(dir: string = defaultRecipesDir): PricingTable {
  return parsePricing(readFileSync(join(dir, 'pricing.json'), 'utf8'));
}
