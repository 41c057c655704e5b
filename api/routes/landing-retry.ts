import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { Config } from '../../core/node/config';
import { FailureCode } from '../../core/failures';
import type { LandingOutcome, LandingRequest } from '../../core/types';
import { ApiError, NotFound } from '../errors';
import { ErrorSchema, LandingIdParams, LandingRetriedSchema } from '../schemas';
import { startLanding } from '../services/start-landing';

const errors = { 400: ErrorSchema, 401: ErrorSchema, 404: ErrorSchema, 409: ErrorSchema, 500: ErrorSchema };

/** The request a landing was started with: the input of the first event of its history. */
async function startedWith(handle: WorkflowHandle, id: string): Promise<LandingRequest> {
  const history = await handle.fetchHistory();
  const payload = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  if (!payload) throw new Error(`landing ${id}: its history has no start input`);
  // The API and the workers use Temporal's default data converter (no payload codec).
  return defaultPayloadConverter.fromPayload<LandingRequest>(payload);
}

/** The landing to retry, if it may be: it exists, is a landing, and has ended without landing. */
async function retriable(client: Client, retried: string): Promise<WorkflowHandle> {
  const handle = client.workflow.getHandle(retried);
  const description = await handle.describe();
  if (description.type !== 'landing') throw new NotFound(`no landing ${retried} (${retried} is a ${description.type} run; only landings are retried)`);
  const status = description.status.name;
  if (status === 'RUNNING') {
    throw new ApiError(FailureCode.conflict, `landing ${retried} is still running: a retry starts once it has ended (cancel it to end it now)`, {
      id: retried,
      workflowStatus: status,
    });
  }
  if (status === 'COMPLETED') {
    const outcome = (await handle.result()) as LandingOutcome;
    if (outcome.status === 'landed') {
      throw new ApiError(
        FailureCode.conflict,
        `landing ${retried} landed (${outcome.target} at ${outcome.mergedSha?.slice(0, 12) ?? 'its head'}); there is nothing to retry`,
        { id: retried, workflowStatus: status, outcome: outcome.status },
      );
    }
  }
  return handle;
}

const retrySchema = {
  summary: 'Retry a landing that did not land: a new run on the same heads (the old run keeps its history); 409 while it runs or once it landed',
  params: LandingIdParams,
  response: { 201: LandingRetriedSchema, 200: LandingRetriedSchema, 413: ErrorSchema, ...errors },
};

/**
 * POST /v1/landings/:id/retry: a landing that did not land, started again on the same pinned heads
 * under a new run id (`<first id>.retry-<n>`), so the run it retries keeps its id, its history and
 * its outcome. A route of its own rather than a field of POST /v1/landings: that route pins the
 * branches' heads as they are now and answers "duplicate" for heads that already have a run; a
 * retry names the run it retries and takes that run's exact heads, agents and budget, with the
 * recipes in force now (a new snapshot: the cause of the failure may have been a recipe). Refused
 * (409) while the run is still running or when it landed. Asking twice finds the same retry.
 */
export const landingRetryRoutes: FastifyPluginAsyncTypebox<{ client: Client; config: Config }> = async (app, { client, config }) => {
  app.post('/landings/:id/retry', { schema: retrySchema, config: { names: 'landing' } }, async function retryLanding(request, reply) {
    const retried = request.params.id;
    const previous = await startedWith(await retriable(client, retried), retried);
    // Checked again as for a new landing: the allow-list, the agents and the target as they are now.
    const started = await startLanding(client, config, {
      repo: previous.repo,
      target: previous.target,
      source: { heads: previous.heads, retryOf: retried },
      ...(previous.agents ? { agents: previous.agents } : {}),
      budget: () => previous.budget,
      ...(previous.priority ? { priority: previous.priority } : {}),
    });
    const { id, duplicate, retry } = started;
    request.log.info({ runId: id, retryOf: retried, duplicate }, 'landing retry requested');
    return reply.status(duplicate ? 200 : 201).send({
      id,
      duplicate,
      retryOf: retried,
      attempt: retry!.attempt,
      repo: started.repo,
      target: started.target,
      targetSha: started.targetSha,
      heads: started.heads,
      links: { self: `/v1/landings/${id}` },
    });
  });
};
