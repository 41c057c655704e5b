import { resolve } from 'node:path';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { WorkflowNotFoundError } from '@temporalio/common';
import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import type { Config } from '../../core/node/config';
import { startRun } from '../start-run';
import { FailureCode } from '../../core/failures';
import { landingId } from '../../core/node/landing-id';
import { loadRecipes } from '../../core/node/recipes';
import { branchNameProblem } from '../../core/refs';
import { isLocalPathText, parseRepoLocation } from '../../core/repo-location';
import { filterValueProblem, runListQuery } from '../../core/visibility-query';
import type { LandingOutcome, LandingRequest, LandingStatusView } from '../../core/types';
import { answerUpdate, landingStatusQuery } from '../../core/messages';
import { landingRecord, searchAttributes } from '../../core/search-attributes';
import { assertAgentsRunnable } from '../agents';
import { ApiError, invalid } from '../errors';
import { normaliseRepo, resolveHeads } from '../repo';
import { AnswerAcceptedSchema, AnswerSchema, CancelRequestedSchema, ErrorSchema, LandingCreatedSchema, LandingCreateSchema, LandingIdParams, LandingListQuery, LandingListSchema, LandingViewSchema } from '../schemas';

export interface LandingRouteOptions {
  client: Client;
  config: Config;
}

const errors = { 400: ErrorSchema, 401: ErrorSchema, 404: ErrorSchema, 500: ErrorSchema };

/** The landing's time in its target queue, from its memo (landings that queued before it was recorded have none). */
function queuedFor(memo: Record<string, unknown> | undefined): { queuedMs?: number } {
  const value = memo?.queuedMs;
  return typeof value === 'number' && Number.isFinite(value) ? { queuedMs: Math.round(value) } : {};
}

export const landingRoutes: FastifyPluginAsyncTypebox<LandingRouteOptions> = async (app, { client, config }) => {
  app.post(
    '/landings',
    {
      schema: {
        summary: 'Start a landing (idempotent on repo, target and branch heads)',
        body: LandingCreateSchema,
        response: { 201: LandingCreatedSchema, 200: LandingCreatedSchema, 413: ErrorSchema, ...errors },
      },
    },
    async (request, reply) => {
      const { branches, target } = request.body;
      const targetProblem = branchNameProblem(target);
      if (targetProblem) throw invalid('target', targetProblem);
      branches.forEach((branch, index) => {
        const problem = branchNameProblem(branch);
        if (problem) throw invalid(`branches[${index}]`, problem);
        if (branch === target) throw invalid(`branches[${index}]`, 'must differ from target');
      });
      if (new Set(branches).size !== branches.length) throw invalid('branches', 'must not name a branch twice');
      const agents = request.body.agents;
      // The run's recipes: resolved once, here; the run and its children use this snapshot to the end.
      const recipes = loadRecipes(config.recipesDir);
      if (agents) {
        await assertAgentsRunnable(
          [
            { field: 'agents.resolver', spec: agents.resolver },
            { field: 'agents.fixer', spec: agents.fixer },
            ...(agents.ladder ?? []).map((spec, index) => ({ field: `agents.ladder[${index}]`, spec })),
          ],
          recipes.harnesses,
          client,
        );
      }
      const repo = await normaliseRepo(request.body.repo, config.repoAllow);
      const { targetSha, heads } = await resolveHeads(repo, target, branches);
      const id = landingId(repo, target, heads);
      // The landing's budget is resolved now, so the run keeps what was in force when it was asked for.
      const budget = { ...recipes.limits.budget, ...request.body.budget };
      const { priority } = request.body;
      const landing: LandingRequest = { repo, target, heads, requestedTargetSha: targetSha, ...(agents ? { agents } : {}), budget, recipes, ...(priority ? { priority } : {}) };
      const { duplicate } = await startRun(client, 'landing', {
        workflowId: id,
        taskQueue: config.taskQueue,
        args: [landing],
        ...landingRecord(landing, { recipeVersion: recipes.version, ...(agents ? { agents: { resolver: agents.resolver, fixer: agents.fixer } } : {}) }),
      });
      request.log.info({ runId: id, duplicate }, 'landing requested');
      return reply.status(duplicate ? 200 : 201).send({ id, duplicate, repo, target, targetSha, heads, links: { self: `/v1/landings/${id}` } });
    },
  );

  app.get(
    '/landings',
    {
      schema: {
        summary: 'List landings (newest first), filtered by repo, target, branch, phase, outcome or workflow status (Temporal visibility)',
        querystring: LandingListQuery,
        response: { 200: LandingListSchema, 431: ErrorSchema, ...errors },
      },
    },
    async (request) => {
      const { limit = 50, repo, ...rest } = request.query;
      for (const [field, value] of Object.entries({ repo, ...rest })) {
        const problem = typeof value === 'string' ? filterValueProblem(value) : undefined;
        if (problem) throw invalid(field, problem);
      }
      // The run records the canonical location, so the filter is read the same way (a relative
      // path is taken from the API's directory, as before; no allow-list: a filter starts nothing).
      let canonicalRepo: string | undefined;
      if (repo !== undefined) {
        const parsed = parseRepoLocation(isLocalPathText(repo) ? resolve(repo) : repo);
        if (!parsed.ok) throw invalid('repo', parsed.problem);
        canonicalRepo = parsed.canonical;
      }
      const filter = { kind: 'landing', ...rest, ...(canonicalRepo === undefined ? {} : { repo: canonicalRepo }) };
      const landings = [];
      for await (const execution of client.workflow.list({ query: runListQuery(filter) })) {
        const attributes = execution.typedSearchAttributes;
        landings.push({
          id: execution.workflowId,
          workflowStatus: execution.status.name,
          startTime: execution.startTime.toISOString(),
          ...(execution.closeTime ? { closeTime: execution.closeTime.toISOString() } : {}),
          ...(attributes.get(searchAttributes.repo) ? { repo: attributes.get(searchAttributes.repo) } : {}),
          ...(attributes.get(searchAttributes.target) ? { target: attributes.get(searchAttributes.target) } : {}),
          ...(attributes.get(searchAttributes.branch) ? { branches: [...attributes.get(searchAttributes.branch)!] } : {}),
          ...(attributes.get(searchAttributes.phase) ? { phase: attributes.get(searchAttributes.phase) } : {}),
          ...(attributes.get(searchAttributes.outcome) ? { outcome: attributes.get(searchAttributes.outcome) } : {}),
          ...queuedFor(execution.memo),
        });
        if (landings.length >= limit) break;
      }
      return { landings };
    },
  );

  app.get(
    '/landings/:id',
    { schema: { summary: 'Phase, steps, meters and outcome of a landing', params: LandingIdParams, response: { 200: LandingViewSchema, ...errors } } },
    async (request) => {
      const handle = client.workflow.getHandle(request.params.id);
      let workflowStatus: string;
      let described: Awaited<ReturnType<typeof handle.describe>>;
      try {
        described = await handle.describe();
        workflowStatus = described.status.name;
      } catch (error) {
        if (error instanceof WorkflowNotFoundError) throw new ApiError(FailureCode.notFound, `no landing ${request.params.id}`);
        throw error;
      }
      let view: LandingStatusView | undefined;
      let unanswered: string | undefined;
      try {
        view = await handle.query(landingStatusQuery);
      } catch (error) {
        // A closed workflow answers queries only while a worker can replay it; the outcome suffices.
        // A running one with no worker to answer (all down, or its host lost) still has its phase
        // in visibility: say so rather than fail the request.
        if (workflowStatus === 'RUNNING') unanswered = `no worker answered the status query (${error instanceof Error ? error.message : String(error)}); the phase is the last one recorded in visibility`;
      }
      let outcome: LandingOutcome | undefined = view?.outcome;
      if (!outcome && workflowStatus === 'COMPLETED') outcome = (await handle.result()) as LandingOutcome;
      return {
        id: request.params.id,
        workflowStatus,
        phase: view?.phase ?? outcome?.endedInPhase ?? described.typedSearchAttributes.get(searchAttributes.phase) ?? 'unknown',
        ...(unanswered ? { statusUnavailable: unanswered } : {}),
        steps: view?.steps ?? [],
        gates: view?.gates ?? outcome?.gates ?? [],
        meters: { ...(view?.meters ?? outcome?.meters ?? {}) },
        pendingQuestions: view?.pendingQuestions ?? [],
        ...(view?.budget ? { budget: { ...view.budget } } : {}),
        ...(view?.pausedFor ? { pausedFor: view.pausedFor } : {}),
        reviews: (view?.reviews ?? outcome?.reviews ?? []).map((review) => ({ ...review })),
        ...(outcome ? { outcome: { ...outcome } } : {}),
      };
    },
  );
};

export const landingControlRoutes: FastifyPluginAsyncTypebox<{ client: Client }> = async (app, { client }) => {
  const existing = async (id: string) => {
    const handle = client.workflow.getHandle(id);
    try {
      const description = await handle.describe();
      return { handle, status: description.status.name };
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) throw new ApiError(FailureCode.notFound, `no landing ${id}`);
      throw error;
    }
  };

  // One answer route for every run that asks (landings, fix loops, standalone review panels); the
  // landing's path is kept as it was.
  for (const path of ['/landings/:id/answers', '/runs/:id/answers']) {
    app.post(
      path,
      {
        schema: {
          summary:
            path === '/runs/:id/answers'
              ? "Answer a run's pending question (a landing's, a fix loop's or a standalone review panel's: its own or its agents'); an empty text is a decision not to go on (needs-decision)"
              : "Answer the landing's pending question (only approve, approved or yes approve a gate-file change; an agent's question gets the text as its answer; an empty text stops it with needs-decision)",
          params: LandingIdParams,
          body: AnswerSchema,
          response: { 200: AnswerAcceptedSchema, 409: ErrorSchema, ...errors },
        },
      },
      async (request) => {
        const { handle, status } = await existing(request.params.id);
        const what = path === '/runs/:id/answers' ? 'run' : 'landing';
        if (status !== 'RUNNING') throw new ApiError(FailureCode.conflict, `${what} ${request.params.id} is not running (${status}); nothing to answer`);
        try {
          return await handle.executeUpdate(answerUpdate, { args: [{ text: request.body.text, ...(request.body.questionId ? { questionId: request.body.questionId } : {}) }] });
        } catch (error) {
          if (error instanceof WorkflowUpdateFailedError) {
            const cause = error.cause instanceof Error ? error.cause.message : '';
            // A run that takes no answers at all (a nightly, an agent session): nothing of it waits on one.
            if (/no registered handler for update|unknown update/i.test(cause)) throw new ApiError(FailureCode.conflict, `${what} ${request.params.id} takes no answers; nothing to answer`);
            throw new ApiError(FailureCode.validation, `text: ${cause || 'the answer was rejected'}`, { field: 'text' });
          }
          throw error;
        }
      },
    );
  }

  app.post(
    '/landings/:id/cancel',
    {
      schema: {
        summary: 'Cancel a landing: its containers stop, cleanup runs, the outcome is cancelled',
        params: LandingIdParams,
        response: { 202: CancelRequestedSchema, 409: ErrorSchema, ...errors },
      },
    },
    async (request, reply) => {
      const { handle, status } = await existing(request.params.id);
      if (status !== 'RUNNING') throw new ApiError(FailureCode.conflict, `landing ${request.params.id} is not running (${status})`);
      await handle.cancel();
      return reply.status(202).send({ id: request.params.id, cancelRequested: true });
    },
  );
};
