import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { parseDuration } from '../duration';
import { fieldName } from '../gate-file';
import { checkHarnessModel } from '../harness-models';
import {
  HarnessesRecipeSchema,
  LadderRecipeSchema,
  LimitsRecipeSchema,
  PanelsRecipeSchema,
  PlaybooksSnapshotSchema,
  RecipeError,
  type PlaybooksSnapshot,
  type RecipeSnapshot,
  type Recipes,
} from '../recipe-schemas';
import { parsePricing, type PricingTable } from '../model-pricing';

export { RecipeError };

/** The recipes that ship with Tarmac. */
export const defaultRecipesDir = resolve(__dirname, '..', '..', 'recipes');

/** The texts of the recipe files, by the name of the field they fill. */
interface RecipeTexts {
  harnesses: string;
  ladder: string;
  limits: string;
  panels: string;
  playbooks: string;
  pricing: string;
}

/** Every recipe file by its field, in the order the version hashes them. */
const recipeFiles: Readonly<Record<keyof RecipeTexts, string>> = {
  harnesses: 'harnesses.json',
  ladder: 'ladder.json',
  limits: 'limits.json',
  panels: 'panels.json',
  playbooks: 'playbooks.json',
  pricing: 'pricing.json',
};

function validated<T>(file: string, text: string, schema: TSchema): T {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new RecipeError(file, '(root)', `is not valid JSON: ${(error as Error).message}`);
  }
  const first = Value.Errors(schema, data).First();
  if (first) {
    // A choice among fixed words is named by its words, not by the schema's "expected union value".
    const words = (first.schema as { anyOf?: { const?: unknown }[] }).anyOf?.map((entry) => entry.const);
    const oneOf =
      words && words.length > 0 && words.every((word) => typeof word === 'string')
        ? `must be one of ${words.map((word) => JSON.stringify(word)).join(', ')}`
        : undefined;
    throw new RecipeError(file, fieldName(first.path), oneOf ?? first.message.toLowerCase());
  }
  return data as T;
}

/** A copy without the `description` field: text for people, not carried in every run's input. */
function undescribed<T extends { description?: string }>(entry: T): Omit<T, 'description'> {
  const { description: _description, ...rest } = entry;
  return rest;
}

/**
 * Parses the recipe texts into one snapshot: every file and every cross-reference checked, the
 * version a hash of every file's text (a change to any recipe is a new version).
 */
export function parseRecipes(texts: RecipeTexts): RecipeSnapshot {
  const harnessesRecipe = validated<{ harnesses: Recipes['harnesses'] }>('harnesses.json', texts.harnesses, HarnessesRecipeSchema).harnesses;
  const { ladder } = validated<{ ladder: string[] }>('ladder.json', texts.ladder, LadderRecipeSchema);
  const limits = validated<Recipes['limits']>('limits.json', texts.limits, LimitsRecipeSchema);
  const quarantineFor = limits.gate?.quarantineFor;
  if (quarantineFor !== undefined && (parseDuration(quarantineFor) ?? 0) < 1000)
    throw new RecipeError('limits.json', 'gate.quarantineFor', `is ${quarantineFor}; a quarantine lasts at least 1s`);
  ladder.forEach((entry, index) => {
    const check = checkHarnessModel(entry, harnessesRecipe);
    if (!check.ok) throw new RecipeError('ladder.json', `ladder[${index}]`, check.message);
  });
  const panelsRecipe = validated<{ panels: Recipes['panels'] }>('panels.json', texts.panels, PanelsRecipeSchema).panels;
  for (const [name, panel] of Object.entries(panelsRecipe)) {
    panel.reviewers.forEach((reviewer, index) => {
      const check = checkHarnessModel(reviewer, harnessesRecipe);
      if (!check.ok) throw new RecipeError('panels.json', `panels.${name}.reviewers[${index}]`, check.message);
    });
    if (panel.quorum > panel.reviewers.length)
      throw new RecipeError('panels.json', `panels.${name}.quorum`, `is ${panel.quorum} but the panel has ${panel.reviewers.length} reviewer(s)`);
    if (new Set(panel.reviewers).size !== panel.reviewers.length)
      throw new RecipeError('panels.json', `panels.${name}.reviewers`, 'must not name a reviewer twice (the cache is keyed by harness#model)');
  }
  const playbooks = validated<PlaybooksSnapshot>('playbooks.json', texts.playbooks, PlaybooksSnapshotSchema);
  const pricing: PricingTable = parsePricing(texts.pricing);
  const hash = createHash('sha256');
  for (const [field, file] of Object.entries(recipeFiles)) hash.update(`${file}\0${texts[field as keyof RecipeTexts]}\0`);
  const version = hash.digest('hex').slice(0, 12);
  const harnesses = Object.fromEntries(Object.entries(harnessesRecipe).map(([name, harness]) => [name, undescribed(harness)]));
  const panels = Object.fromEntries(Object.entries(panelsRecipe).map(([name, panel]) => [name, undescribed(panel)]));
  return { version, harnesses, ladder, limits, panels, pricing, playbooks };
}

/**
 * Loads and validates every recipe of a directory (default: the repository's `recipes/`; a
 * deployment names its own with `TARMAC_RECIPES_DIR`): the snapshot a run starts with.
 */
export function loadRecipes(dir: string = defaultRecipesDir): RecipeSnapshot {
  const read = (file: string) => {
    try {
      return readFileSync(join(dir, file), 'utf8');
    } catch (error) {
      throw new RecipeError(file, '(file)', `cannot be read from ${dir}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  };
  const texts = Object.fromEntries(Object.entries(recipeFiles).map(([field, file]) => [field, read(file)]));
  return parseRecipes(texts as unknown as RecipeTexts);
}

/**
 * The recipes a run works with: the snapshot it started with. A run started before runs carried
 * snapshots has none in its input; for it (and only for it) the live files are read, as every
 * run did then — `legacyLiveRecipes`.
 */
export function runRecipes(snapshot: RecipeSnapshot | undefined, dir: string = defaultRecipesDir): RecipeSnapshot {
  return snapshot ?? legacyLiveRecipes(dir);
}

/** The live recipe files, for a run that started before snapshots (see runRecipes). */
function legacyLiveRecipes(dir: string): RecipeSnapshot {
  return loadRecipes(dir);
}

/** Loads the pricing table of a recipes directory (default: the repository's `recipes/`). */
export function loadPricing(dir: string = defaultRecipesDir): PricingTable {
  return parsePricing(readFileSync(join(dir, 'pricing.json'), 'utf8'));
}
