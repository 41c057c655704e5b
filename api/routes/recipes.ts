import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { loadRecipes } from '../../core/node/recipes';
import { ErrorSchema } from '../schemas';

const RecipesSchema = Type.Object({
  version: Type.String({ description: "Hash of every recipe file: the version of the snapshot a run started now carries (its memo's recipeVersion)" }),
  harnesses: Type.Array(
    Type.Object({
      name: Type.String(),
      adapter: Type.String(),
      image: Type.String(),
      models: Type.Array(Type.String()),
      secrets: Type.Array(Type.String({ description: 'names of the environment variables handed to the container (never their values)' })),
    }),
  ),
  ladder: Type.Array(Type.String()),
  panels: Type.Array(
    Type.Object({
      name: Type.String(),
      reviewers: Type.Array(Type.String()),
      quorum: Type.Integer(),
      blockingSeverities: Type.Array(Type.String()),
      promptVersion: Type.String(),
      unavailable: Type.Union([Type.Literal('incomplete'), Type.Literal('skip')], {
        description: 'what a reviewer that cannot run here does: "incomplete" counts it (the panel is refused), "skip" leaves it out of the quorum',
      }),
    }),
  ),
  models: Type.Array(
    Type.Object({
      name: Type.String(),
      provider: Type.String(),
      taken: Type.Optional(Type.String({ description: 'when its price was read' })),
    }),
    { description: "the operator's list (recipes/pricing.json): the only models the model gateway forwards, each priced" },
  ),
  limits: Type.Object({
    session: Type.Record(Type.String(), Type.Unknown()),
    budget: Type.Record(Type.String(), Type.Unknown()),
    landing: Type.Record(Type.String(), Type.Unknown()),
    gate: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: 'what follows a red suite settled by evidence: flaky, preExisting, quarantineFor (defaults: retry, fail, 168h)',
      }),
    ),
  }),
  playbooks: Type.Array(Type.Object({ id: Type.String(), kind: Type.String(), description: Type.Optional(Type.String()) })),
});

/** GET /v1/recipes: what this deployment can dispatch — harnesses and models, ladder, panels, the model list, limits, playbooks. */
export const recipeRoutes: FastifyPluginAsyncTypebox<{ recipesDir: string }> = async (app, { recipesDir }) => {
  app.get(
    '/recipes',
    {
      schema: {
        summary: 'The recipes in force: harnesses and their models, the ladder, review panels, limits and fix playbooks',
        response: { 200: RecipesSchema, 401: ErrorSchema, 500: ErrorSchema },
      },
    },
    async function showRecipes() {
      // Read on each request: recipes are files an operator may edit; a broken edit is a 500 naming the file (logged).
      // The snapshot a run started now would carry (TARMAC_RECIPES_DIR).
      const recipes = loadRecipes(recipesDir);
      const { playbooks } = recipes.playbooks;
      return {
        version: recipes.version,
        harnesses: Object.entries(recipes.harnesses).map(([name, harness]) => ({
          name,
          adapter: harness.adapter,
          image: harness.image,
          models: [...harness.models],
          secrets: [...harness.secrets],
        })),
        ladder: [...recipes.ladder],
        panels: Object.entries(recipes.panels).map(([name, panel]) => ({
          name,
          reviewers: [...panel.reviewers],
          quorum: panel.quorum,
          blockingSeverities: [...panel.blockingSeverities],
          promptVersion: panel.promptVersion,
          unavailable: panel.unavailable ?? 'incomplete',
        })),
        models: Object.entries(recipes.pricing).map(([name, price]) => ({ name, provider: price.provider, ...(price.taken ? { taken: price.taken } : {}) })),
        limits: {
          session: { ...recipes.limits.session },
          budget: { ...recipes.limits.budget },
          landing: { ...recipes.limits.landing },
          ...(recipes.limits.gate ? { gate: { ...recipes.limits.gate } } : {}),
        },
        playbooks: playbooks.map(({ id, kind, description }) => ({ id, kind, ...(description ? { description } : {}) })),
      };
    },
  );
};
