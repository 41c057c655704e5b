import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Client } from '@temporalio/client';
import type { Config } from '../../core/node/config';
import type { FixRequest } from '../../core/fix-types';
import { loadRecipes } from '../../core/node/recipes';
import { branchNameProblem } from '../../core/refs';
import { runId } from '../../core/node/run-id';
import { searchAttributes } from '../../core/search-attributes';
import { startRun } from '../start-run';
import { assertAgentsRunnable } from '../agents';
import { invalid } from '../errors';
import { normaliseRepo, resolveHeads } from '../repo';
import { ErrorSchema, FixCreateSchema, RunCreatedSchema } from '../schemas';

/** POST /v1/fix-loops: a fix loop on a branch; its fixes land on a run-owned branch. */
export const fixLoopRoutes: FastifyPluginAsyncTypebox<{ client: Client; config: Config }> = async (app, { client, config }) => {
  app.post(
    '/fix-loops',
    {
      schema: {
        summary: 'Start a fix loop (idempotent on repo, branch head, request and repro command)',
        body: FixCreateSchema,
        response: { 201: RunCreatedSchema, 200: RunCreatedSchema, 400: ErrorSchema, 401: ErrorSchema, 413: ErrorSchema, 500: ErrorSchema },
      },
    },
    async function createFixLoop(request, reply) {
      const body = request.body;
      const problem = branchNameProblem(body.branch);
      if (problem) throw invalid('branch', problem);
      // The run's recipes: resolved once, here; the loop and its sessions use this snapshot to the end.
      const recipes = loadRecipes(config.recipesDir);
      if (body.agents) {
        await assertAgentsRunnable(
          [
            { field: 'agents.implementer', spec: body.agents.implementer },
            { field: 'agents.architect', spec: body.agents.architect },
            ...(body.agents.ladder ?? []).map((spec, index) => ({ field: `agents.ladder[${index}]`, spec })),
          ],
          recipes.harnesses,
          client,
        );
      }
      const repo = await normaliseRepo(body.repo, config.repoAllow);
      const { targetSha: headSha } = await resolveHeads(repo, body.branch, [], { target: 'branch', branch: () => 'branch' });
      const id = runId('fix', repo, [repo, headSha, body.request, body.reproCommand ?? null]);
      const fix: FixRequest = {
        runId: id,
        repo,
        branch: body.branch,
        request: body.request,
        ...(body.reproCommand ? { reproCommand: body.reproCommand } : {}),
        ...(body.maxRepairs !== undefined ? { maxRepairs: body.maxRepairs } : {}),
        ...(body.agents ? { agents: body.agents } : {}),
        recipes,
      };
      const { duplicate } = await startRun(client, 'fixLoop', {
        workflowId: id,
        taskQueue: config.taskQueue,
        args: [fix],
        typedSearchAttributes: [
          { key: searchAttributes.kind, value: 'fix-loop' },
          { key: searchAttributes.repo, value: repo },
          { key: searchAttributes.branch, value: [body.branch] },
        ],
        memo: { request: { repo, branch: body.branch, request: body.request.slice(0, 500) }, recipeVersion: recipes.version, tarmacVersion: '0.1.0' },
      });
      return reply.status(duplicate ? 200 : 201).send({ id, duplicate, links: { self: `/v1/runs/${id}` } });
    },
  );
};
