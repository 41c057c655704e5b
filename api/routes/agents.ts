import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Client } from '@temporalio/client';
import { loadRecipes } from '../../core/node/recipes';
import { agentsView, workerReports } from '../agents';
import { AgentsViewSchema, ErrorSchema } from '../schemas';

/** GET /v1/agents: which harness#model each worker can run, for every one the recipes in force name. */
export const agentRoutes: FastifyPluginAsyncTypebox<{ client: Client; recipesDir: string }> = async (app, { client, recipesDir }) => {
  app.get(
    '/agents',
    {
      schema: {
        summary:
          'Per worker, each harness#model of the recipes (harness model lists, ladder, panels): runnable or not and why (image not built, key not set), and a notice when the default panel or ladder cannot run there',
        response: { 200: AgentsViewSchema, 401: ErrorSchema, 500: ErrorSchema },
      },
    },
    // Read on each request, like GET /v1/recipes: the recipes in force now, the workers' last reports.
    async function listAgents() {
      return agentsView(loadRecipes(recipesDir), await workerReports(client), Date.now());
    },
  );
};
