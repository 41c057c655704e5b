import { resolve } from 'node:path';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Client } from '@temporalio/client';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { FailureCode } from '../../core/failures';
import { budgetUpdate } from '../../core/messages';
import { isLocalPathText, parseRepoLocation } from '../../core/repo-location';
import { searchAttributes } from '../../core/search-attributes';
import { filterValueProblem, runListQuery } from '../../core/visibility-query';
import { ApiError, invalid } from '../errors';
import { BudgetAnswerSchema, BudgetCommandSchema, ErrorSchema, LandingIdParams, listedRunKinds, RunListQuery, RunListSchema, RunViewSchema } from '../schemas';

const errors = { 400: ErrorSchema, 401: ErrorSchema, 404: ErrorSchema, 500: ErrorSchema };

function notFound(id: string, error: unknown): never {
  if (error instanceof WorkflowNotFoundError) throw new ApiError(FailureCode.notFound, `no run ${id}`);
  throw error;
}

/** Any run (landing, session, panel…): its status query, and its budget update. */
export const runRoutes: FastifyPluginAsyncTypebox<{ client: Client }> = async (app, { client }) => {
  app.get(
    '/runs',
    {
      schema: {
        summary: 'List runs of every kind (newest first): landings, review panels, fix loops and nightlies, filtered like GET /v1/landings and by kind',
        querystring: RunListQuery,
        response: { 200: RunListSchema, 431: ErrorSchema, ...errors },
      },
    },
    async (request) => {
      const { limit = 50, kind, repo, ...rest } = request.query;
      for (const [field, value] of Object.entries({ repo, ...rest })) {
        const problem = typeof value === 'string' ? filterValueProblem(value) : undefined;
        if (problem) throw invalid(field, problem);
      }
      let canonicalRepo: string | undefined;
      if (repo !== undefined) {
        const parsed = parseRepoLocation(isLocalPathText(repo) ? resolve(repo) : repo);
        if (!parsed.ok) throw invalid('repo', parsed.problem);
        canonicalRepo = parsed.canonical;
      }
      const filter = { kind: kind ?? listedRunKinds, ...rest, ...(canonicalRepo === undefined ? {} : { repo: canonicalRepo }) };
      const runs = [];
      for await (const execution of client.workflow.list({ query: runListQuery(filter) })) {
        const attributes = execution.typedSearchAttributes;
        const parent = (execution.memo as { parent?: unknown } | undefined)?.parent;
        runs.push({
          id: execution.workflowId,
          kind: attributes.get(searchAttributes.kind) ?? execution.type,
          workflowStatus: execution.status.name,
          startTime: execution.startTime.toISOString(),
          ...(execution.closeTime ? { closeTime: execution.closeTime.toISOString() } : {}),
          ...(attributes.get(searchAttributes.repo) ? { repo: attributes.get(searchAttributes.repo) } : {}),
          ...(attributes.get(searchAttributes.target) ? { target: attributes.get(searchAttributes.target) } : {}),
          ...(attributes.get(searchAttributes.branch) ? { branches: [...attributes.get(searchAttributes.branch)!] } : {}),
          ...(attributes.get(searchAttributes.phase) ? { phase: attributes.get(searchAttributes.phase) } : {}),
          ...(attributes.get(searchAttributes.outcome) ? { outcome: attributes.get(searchAttributes.outcome) } : {}),
          ...(typeof parent === 'string' ? { parent } : {}),
        });
        if (runs.length >= limit) break;
      }
      return { runs };
    },
  );

  app.get(
    '/runs/:id',
    {
      schema: {
        summary: "Status of any run (the workflow's `status` query)",
        params: LandingIdParams,
        response: {
          200: RunViewSchema,
          ...errors,
        },
      },
    },
    async (request) => {
      const handle = client.workflow.getHandle(request.params.id);
      const description = await handle.describe().catch((error: unknown) => notFound(request.params.id, error));
      const status: unknown = await handle.query('status').catch(() => undefined);
      const result: unknown = description.status.name === 'COMPLETED' ? await handle.result() : undefined;
      return { id: request.params.id, type: description.type, workflowStatus: description.status.name, status: status ?? null, ...(result === undefined ? {} : { result }) };
    },
  );

  app.post(
    '/runs/:id/budget',
    {
      schema: {
        summary: 'Extend the budget of a run paused for it, or stop the run',
        params: LandingIdParams,
        body: BudgetCommandSchema,
        response: { 200: BudgetAnswerSchema, 409: ErrorSchema, 413: ErrorSchema, ...errors },
      },
    },
    async (request) => {
      const handle = client.workflow.getHandle(request.params.id);
      const description = await handle.describe().catch((error: unknown) => notFound(request.params.id, error));
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
    },
  );
};
