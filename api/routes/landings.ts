import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import type { Config } from '../../core/node/config';
import { FailureCode } from '../../core/failures';
import { answerUpdate } from '../../core/messages';
import { branchNameProblem } from '../../core/refs';
import { ApiError, invalid } from '../errors';
import {
  AnswerAcceptedSchema,
  AnswerSchema,
  CancelRequestedSchema,
  ErrorSchema,
  LandingCreatedSchema,
  LandingCreateSchema,
  LandingIdParams,
  LandingListQuery,
  LandingListSchema,
  LandingViewSchema,
  type LandingCreate,
} from '../schemas';
import { landingView, queuedFor } from '../services/landing-view';
import { listRuns, readerFilter, runSummary } from '../services/run-list';
import { startLanding } from '../services/start-landing';

interface LandingRouteOptions {
  client: Client;
  config: Config;
}

const errors = { 400: ErrorSchema, 401: ErrorSchema, 404: ErrorSchema, 500: ErrorSchema };

const createSchema = {
  summary: 'Start a landing (idempotent on repo, target and branch heads)',
  body: LandingCreateSchema,
  response: { 201: LandingCreatedSchema, 200: LandingCreatedSchema, 413: ErrorSchema, ...errors },
};
const listSchema = {
  summary: 'List landings (newest first), filtered by repo, target, branch, phase, outcome or workflow status (Temporal visibility)',
  querystring: LandingListQuery,
  response: { 200: LandingListSchema, 431: ErrorSchema, ...errors },
};
const showSchema = { summary: 'Phase, steps, meters and outcome of a landing', params: LandingIdParams, response: { 200: LandingViewSchema, ...errors } };

/** The branches of a new landing: valid names, none twice, none the target. */
function checkBranches({ branches, target }: Pick<LandingCreate, 'branches' | 'target'>): void {
  const targetProblem = branchNameProblem(target);
  if (targetProblem) throw invalid('target', targetProblem);
  branches.forEach((branch, index) => {
    const problem = branchNameProblem(branch);
    if (problem) throw invalid(`branches[${index}]`, problem);
    if (branch === target) throw invalid(`branches[${index}]`, 'must differ from target');
  });
  if (new Set(branches).size !== branches.length) throw invalid('branches', 'must not name a branch twice');
}

/** POST /v1/landings, GET /v1/landings, GET /v1/landings/:id. */
export const landingRoutes: FastifyPluginAsyncTypebox<LandingRouteOptions> = async (app, { client, config }) => {
  app.post('/landings', { schema: createSchema }, async function createLanding(request, reply) {
    const { repo, branches, target, agents, priority } = request.body;
    checkBranches(request.body);
    const started = await startLanding(client, config, {
      repo,
      target,
      source: { branches },
      ...(agents ? { agents } : {}),
      // The landing's budget is resolved now, so the run keeps what was in force when it was asked for.
      budget: (recipeBudget) => ({ ...recipeBudget, ...request.body.budget }),
      ...(priority ? { priority } : {}),
    });
    const { id, duplicate } = started;
    request.log.info({ runId: id, duplicate }, 'landing requested');
    return reply
      .status(duplicate ? 200 : 201)
      .send({ id, duplicate, repo: started.repo, target, targetSha: started.targetSha, heads: started.heads, links: { self: `/v1/landings/${id}` } });
  });

  app.get('/landings', { schema: listSchema }, async function listLandings(request) {
    const { limit = 50, ...query } = request.query;
    const landings = await listRuns(client, { kind: 'landing', ...readerFilter(query) }, limit, (execution) => ({
      ...runSummary(execution),
      ...queuedFor(execution.memo),
    }));
    return { landings };
  });

  app.get('/landings/:id', { schema: showSchema, config: { names: 'landing' } }, async function showLanding(request) {
    return await landingView(client, request.params.id);
  });
};

const answerSchema = (path: string) => ({
  summary:
    path === '/runs/:id/answers'
      ? "Answer a run's pending question (a landing's, a fix loop's or a standalone review panel's: its own or its agents'); an empty text is a decision not to go on (needs-decision)"
      : "Answer the landing's pending question (only approve, approved or yes approve a gate-file change; an agent's question gets the text as its answer; an empty text stops it with needs-decision)",
  params: LandingIdParams,
  body: AnswerSchema,
  response: { 200: AnswerAcceptedSchema, 409: ErrorSchema, ...errors },
});
const cancelSchema = {
  summary: 'Cancel a landing: its containers stop, cleanup runs, the outcome is cancelled',
  params: LandingIdParams,
  response: { 202: CancelRequestedSchema, 409: ErrorSchema, ...errors },
};

/** Answers to a run's questions, and a landing's cancel. */
export const landingControlRoutes: FastifyPluginAsyncTypebox<{ client: Client }> = async (app, { client }) => {
  // One answer route for every run that asks (landings, fix loops, standalone review panels); the
  // landing's path is kept as it was.
  for (const path of ['/landings/:id/answers', '/runs/:id/answers']) {
    const what = path === '/runs/:id/answers' ? 'run' : 'landing';
    app.post(path, { schema: answerSchema(path), config: { names: what } }, async function answer(request) {
      const handle = client.workflow.getHandle(request.params.id);
      const status = (await handle.describe()).status.name;
      if (status !== 'RUNNING') throw new ApiError(FailureCode.conflict, `${what} ${request.params.id} is not running (${status}); nothing to answer`);
      try {
        return await handle.executeUpdate(answerUpdate, {
          args: [{ text: request.body.text, ...(request.body.questionId ? { questionId: request.body.questionId } : {}) }],
        });
      } catch (error) {
        if (!(error instanceof WorkflowUpdateFailedError)) throw error;
        const cause = error.cause instanceof Error ? error.cause.message : '';
        // A run that takes no answers at all (a nightly, an agent session): nothing of it waits on one.
        if (/no registered handler for update|unknown update/i.test(cause))
          throw new ApiError(FailureCode.conflict, `${what} ${request.params.id} takes no answers; nothing to answer`);
        throw new ApiError(FailureCode.validation, `text: ${cause || 'the answer was rejected'}`, { field: 'text' });
      }
    });
  }

  app.post('/landings/:id/cancel', { schema: cancelSchema, config: { names: 'landing' } }, async function cancelLanding(request, reply) {
    const handle = client.workflow.getHandle(request.params.id);
    const status = (await handle.describe()).status.name;
    if (status !== 'RUNNING') throw new ApiError(FailureCode.conflict, `landing ${request.params.id} is not running (${status})`);
    await handle.cancel();
    return reply.status(202).send({ id: request.params.id, cancelRequested: true });
  });
};
