import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Client } from '@temporalio/client';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { FailureCode } from '../../core/failures';
import { budgetUpdate } from '../../core/messages';
import { searchAttributes } from '../../core/search-attributes';
import { ApiError } from '../errors';
import { BudgetAnswerSchema, BudgetCommandSchema, ErrorSchema, LandingIdParams, listedRunKinds, RunListQuery, RunListSchema, RunViewSchema } from '../schemas';
import { listRuns, readerFilter, runSummary } from '../services/run-list';

const errors = { 400: ErrorSchema, 401: ErrorSchema, 404: ErrorSchema, 500: ErrorSchema };

const listSchema = {
  summary: 'List runs of every kind (newest first): landings, review panels, fix loops and nightlies, filtered like GET /v1/landings and by kind',
  querystring: RunListQuery,
  response: { 200: RunListSchema, 431: ErrorSchema, ...errors },
};
const showSchema = { summary: "Status of any run (the workflow's `status` query)", params: LandingIdParams, response: { 200: RunViewSchema, ...errors } };
const budgetSchema = {
  summary: 'Extend the budget of a run paused for it, or stop the run',
  params: LandingIdParams,
  body: BudgetCommandSchema,
  response: { 200: BudgetAnswerSchema, 409: ErrorSchema, 413: ErrorSchema, ...errors },
};

/** Any run (landing, session, panel…): the list, its status query, and its budget update. */
export const runRoutes: FastifyPluginAsyncTypebox<{ client: Client }> = async (app, { client }) => {
  app.get('/runs', { schema: listSchema }, async function listAllRuns(request) {
    const { limit = 50, kind, ...query } = request.query;
    const runs = await listRuns(client, { kind: kind ?? listedRunKinds, ...readerFilter(query) }, limit, (execution) => {
      const { id, ...summary } = runSummary(execution);
      const parent = (execution.memo as { parent?: unknown } | undefined)?.parent;
      return {
        id,
        kind: execution.typedSearchAttributes.get(searchAttributes.kind) ?? execution.type,
        ...summary,
        ...(typeof parent === 'string' ? { parent } : {}),
      };
    });
    return { runs };
  });

  app.get('/runs/:id', { schema: showSchema }, async function showRun(request) {
    const handle = client.workflow.getHandle(request.params.id);
    const description = await handle.describe();
    const status: unknown = await handle.query('status').catch(() => undefined);
    const result: unknown = description.status.name === 'COMPLETED' ? await handle.result() : undefined;
    return {
      id: request.params.id,
      type: description.type,
      workflowStatus: description.status.name,
      status: status ?? null,
      ...(result === undefined ? {} : { result }),
    };
  });

  app.post('/runs/:id/budget', { schema: budgetSchema }, async function changeBudget(request) {
    const handle = client.workflow.getHandle(request.params.id);
    const description = await handle.describe();
    const notRunning = (status: string) => new ApiError(FailureCode.conflict, `run ${request.params.id} is not running (${status}); its budget is final`);
    if (description.status.name !== 'RUNNING') throw notRunning(description.status.name);
    try {
      const result = await handle.executeUpdate(budgetUpdate, { args: [request.body] });
      return { accepted: result.accepted, ...(result.budget ? { budget: { ...result.budget } } : {}) };
    } catch (error) {
      if (error instanceof WorkflowUpdateFailedError) {
        const message = error.cause instanceof Error ? error.cause.message : 'the update was rejected';
        throw new ApiError(FailureCode.validation, `budget: ${message}`, { field: 'body' });
      }
      // The run ended between the check above and the update (Temporal: "workflow execution already completed").
      if (error instanceof WorkflowNotFoundError) throw notRunning('closed');
      throw error;
    }
  });
};
