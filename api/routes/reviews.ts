import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Client } from '@temporalio/client';
import type { Config } from '../../core/node/config';
import { loadRecipes } from '../../core/node/recipes';
import { branchNameProblem } from '../../core/refs';
import { runId } from '../../core/node/run-id';
import type { PanelRequest } from '../../core/review-types';
import { searchAttributes } from '../../core/search-attributes';
import { assertPanelRunnable } from '../agents';
import { invalid } from '../errors';
import { normaliseRepo, resolveHeads } from '../repo';
import { ErrorSchema, ReviewCreateSchema, RunCreatedSchema } from '../schemas';
import { startRun } from '../start-run';

const errors = { 400: ErrorSchema, 401: ErrorSchema, 413: ErrorSchema, 500: ErrorSchema };

/** POST /v1/reviews: a review panel on its own, over base...head. Idempotent on (repo, base, head, panel). */
export const reviewRoutes: FastifyPluginAsyncTypebox<{ client: Client; config: Config }> = async (app, { client, config }) => {
  app.post(
    '/reviews',
    {
      schema: {
        summary: 'Start a review panel over base...head (the findings cache makes a reviewed tree free)',
        body: ReviewCreateSchema,
        response: { 201: RunCreatedSchema, 200: RunCreatedSchema, ...errors },
      },
    },
    async function createReview(request, reply) {
      const { base, head, panel, quorum } = request.body;
      for (const [field, name] of [
        ['base', base],
        ['head', head],
      ] as const) {
        const problem = branchNameProblem(name);
        if (problem) throw invalid(field, problem);
      }
      // The run's recipes: resolved once, here; the panel and its reviewers use this snapshot to the end.
      const recipes = loadRecipes(config.recipesDir);
      const definition = recipes.panels[panel];
      if (!definition) throw invalid('panel', `is not a known panel (known: ${Object.keys(recipes.panels).join(', ')})`);
      if (quorum !== undefined && quorum > definition.reviewers.length)
        throw invalid('quorum', `is more than the ${definition.reviewers.length} reviewer(s) of panel "${panel}"`);
      // Every reviewer counts (unless the panel skips the ones that cannot run): a panel no worker can
      // give a verdict with is refused now, naming the reviewer and what to set (docs/decisions/0036).
      await assertPanelRunnable(panel, definition, quorum, recipes.harnesses, client);
      const repo = await normaliseRepo(request.body.repo, config.repoAllow);
      const { targetSha: baseSha, heads } = await resolveHeads(repo, base, [head], { target: 'base', branch: () => 'head' });
      const id = runId('review', repo, [repo, baseSha, heads[0]!.sha, panel, quorum ?? null]);
      const { duplicate } = await startRun(client, 'reviewPanel', {
        workflowId: id,
        taskQueue: config.taskQueue,
        args: [{ runId: id, repo, panel, ...(quorum ? { quorum } : {}), fresh: { head, base, baseSha }, recipes } satisfies PanelRequest],
        typedSearchAttributes: [
          { key: searchAttributes.kind, value: 'review-panel' },
          { key: searchAttributes.repo, value: repo },
          { key: searchAttributes.branch, value: [head] },
        ],
        memo: { request: { repo, base, head, panel }, recipeVersion: recipes.version },
      });
      return reply.status(duplicate ? 200 : 201).send({ id, duplicate, links: { self: `/v1/runs/${id}` } });
    },
  );
};
