import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client, type ScheduleDescription, type ScheduleHandle } from '@temporalio/client';
import type { Config } from '../../core/node/config';
import { cronProblem, timezoneProblem } from '../../core/cron';
import { workflowTaskTimeout } from '../../core/timeouts';
import { FailureCode } from '../../core/failures';
import type { NightlyOutcome, NightlyRequest } from '../../core/nightly-types';
import { loadRecipes } from '../../core/node/recipes';
import { branchNameProblem } from '../../core/refs';
import { nightlyScheduleId } from '../../core/node/schedule-id';
import { searchAttributes } from '../../core/search-attributes';
import { assertAgentsRunnable } from '../agents';
import { ApiError, invalid, NotFound } from '../errors';
import { normaliseRepo, resolveHeads } from '../repo';
import {
  ScheduleCreatedSchema,
  ScheduleCreateSchema,
  ScheduleDeletedSchema,
  ScheduleIdParams,
  ScheduleListSchema,
  ScheduleTriggeredSchema,
  ScheduleViewSchema,
  type ScheduleDefinition,
} from '../schedule-schemas';
import { ErrorSchema } from '../schemas';

const errors = { 400: ErrorSchema, 401: ErrorSchema, 404: ErrorSchema, 500: ErrorSchema };

/**
 * A missed run (Temporal was down at 03:00) is still taken when the server is back
 * within this window; later than that it is skipped, and the next night runs.
 */
const catchupWindow = '1 day';

/** The definition a schedule was created with, from its memo (undefined: not a Tarmac nightly). */
function definitionOf(memo: Record<string, unknown> | undefined): ScheduleDefinition | undefined {
  const definition = memo?.definition as ScheduleDefinition | undefined;
  return definition && typeof definition.repo === 'string' && typeof definition.cron === 'string' ? definition : undefined;
}

const iso = (dates: Date[]) => dates.map((date) => date.toISOString());

/**
 * Nightly schedules: a Temporal Schedule per (repo, target) whose action starts the
 * `nightly` workflow (full gate on the target head; red → fix loop → landing).
 */
export const scheduleRoutes: FastifyPluginAsyncTypebox<{ client: Client; config: Config }> = async (app, { client, config }) => {
  /** A Tarmac nightly schedule and its description, or 404. */
  const existing = async (id: string): Promise<{ handle: ScheduleHandle; description: ScheduleDescription; definition: ScheduleDefinition }> => {
    const handle = client.schedule.getHandle(id);
    const description = await handle.describe();
    const definition = definitionOf(description.memo);
    if (!definition || description.action.workflowType !== 'nightly') throw new NotFound(`no schedule ${id}`);
    return { handle, description, definition };
  };

  app.post(
    '/schedules',
    {
      schema: {
        summary: 'Create the nightly schedule of a repo and target (one per pair; the same request again returns it with 200)',
        body: ScheduleCreateSchema,
        response: { 201: ScheduleCreatedSchema, 200: ScheduleCreatedSchema, 409: ErrorSchema, ...errors },
      },
    },
    async (request, reply) => {
      const body = request.body;
      // Everything is checked before Temporal is called: an invalid request creates nothing.
      const targetProblem = branchNameProblem(body.target);
      if (targetProblem) throw invalid('target', targetProblem);
      const cronText = body.cron.trim().split(/\s+/).join(' ');
      const cronIssue = cronProblem(cronText);
      if (cronIssue) throw invalid('cron', cronIssue);
      const timezoneIssue = timezoneProblem(body.timezone);
      if (timezoneIssue) throw invalid('timezone', timezoneIssue);
      const agents = body.agents;
      if (agents) {
        await assertAgentsRunnable(
          [{ field: 'agents.implementer', spec: agents.implementer }, ...(agents.ladder ?? []).map((spec, index) => ({ field: `agents.ladder[${index}]`, spec }))],
          loadRecipes(config.recipesDir).harnesses,
          client,
        );
      }
      const repo = await normaliseRepo(body.repo, config.repoAllow);
      await resolveHeads(repo, body.target, []);

      const id = nightlyScheduleId(repo, body.target);
      const definition: ScheduleDefinition = { repo, target: body.target, cron: cronText, timezone: body.timezone, ...(agents ? { agents } : {}) };
      const nightly: NightlyRequest = { repo, target: body.target, ...(agents ? { agents } : {}) };
      const links = { self: `/v1/schedules/${id}`, trigger: `/v1/schedules/${id}/trigger` };
      try {
        const handle = await client.schedule.create({
          scheduleId: id,
          spec: { cronExpressions: [cronText], timezone: body.timezone },
          action: {
            type: 'startWorkflow',
            workflowType: 'nightly',
            workflowId: id,
            taskQueue: config.taskQueue,
            workflowTaskTimeout,
            args: [nightly],
            typedSearchAttributes: [
              { key: searchAttributes.kind, value: 'nightly' },
              { key: searchAttributes.repo, value: repo },
              { key: searchAttributes.target, value: body.target },
              { key: searchAttributes.phase, value: 'inspect' },
            ],
            memo: { request: { repo, target: body.target }, scheduleId: id, tarmacVersion: '0.1.0' },
          },
          // One nightly per target at a time: a run still going when the next is due skips the next.
          policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow },
          state: { paused: body.paused, ...(body.paused ? { note: 'created paused' } : {}) },
          memo: { definition },
        });
        const description = await handle.describe();
        request.log.info({ scheduleId: id }, 'nightly schedule created');
        return reply.status(201).send({ id, ...definition, paused: description.state.paused, nextRuns: iso(description.info.nextActionTimes), duplicate: false, links });
      } catch (error) {
        if (!(error instanceof ScheduleAlreadyRunning)) throw error;
      }
      // This (repo, target) already has its nightly: the same definition is the same request.
      const { description, definition: current } = await existing(id);
      const same = JSON.stringify(current) === JSON.stringify(definition);
      if (!same) {
        throw new ApiError(FailureCode.conflict, `${repo} ${body.target} already has nightly schedule ${id} with cron "${current.cron}" (${current.timezone}); delete it first to change it`, {
          id,
          existing: { cron: current.cron, timezone: current.timezone, ...(current.agents ? { agents: current.agents } : {}) },
        });
      }
      return reply.status(200).send({ id, ...current, paused: description.state.paused, nextRuns: iso(description.info.nextActionTimes), duplicate: true, links });
    },
  );

  app.get('/schedules', { schema: { summary: 'List the nightly schedules', response: { 200: ScheduleListSchema, ...errors } } }, async () => {
    const schedules = [];
    for await (const summary of client.schedule.list()) {
      const definition = definitionOf(summary.memo);
      if (!definition || summary.action?.workflowType !== 'nightly') continue;
      schedules.push({ id: summary.scheduleId, ...definition, paused: summary.state.paused, nextRuns: iso(summary.info.nextActionTimes) });
    }
    return { schedules };
  });

  app.get(
    '/schedules/:id',
    { schema: { summary: 'A nightly schedule: its definition, next runs, running and recent runs with their outcomes', params: ScheduleIdParams, response: { 200: ScheduleViewSchema, ...errors } } },
    async (request) => {
      const { description, definition } = await existing(request.params.id);
      const recentRuns = [];
      for (const action of [...description.info.recentActions].reverse()) {
        const workflowId = action.action.workflow.workflowId;
        const run = client.workflow.getHandle(workflowId, action.action.workflow.firstExecutionRunId);
        const workflowStatus = await run
          .describe()
          .then((info) => info.status.name)
          .catch(() => 'UNKNOWN');
        const outcome = workflowStatus === 'COMPLETED' ? ((await run.result()) as NightlyOutcome) : undefined;
        recentRuns.push({ workflowId, scheduledAt: action.scheduledAt.toISOString(), takenAt: action.takenAt.toISOString(), workflowStatus, ...(outcome ? { outcome: { ...outcome } } : {}) });
      }
      return {
        id: request.params.id,
        ...definition,
        paused: description.state.paused,
        ...(description.state.note ? { note: description.state.note } : {}),
        nextRuns: iso(description.info.nextActionTimes),
        actionsTaken: description.info.numActionsTaken,
        running: description.info.runningActions.map((action) => action.workflow.workflowId),
        recentRuns,
      };
    },
  );

  app.post(
    '/schedules/:id/trigger',
    {
      schema: {
        summary: 'Run the nightly now (409 while a run of it is still in progress)',
        params: ScheduleIdParams,
        response: { 202: ScheduleTriggeredSchema, 409: ErrorSchema, ...errors },
      },
    },
    async (request, reply) => {
      const { handle, description } = await existing(request.params.id);
      const running = description.info.runningActions.map((action) => action.workflow.workflowId);
      if (running.length > 0) throw new ApiError(FailureCode.conflict, `schedule ${request.params.id} has a run in progress: ${running.join(', ')}`, { running });
      // SKIP again on the server: of two triggers racing past the check above, one runs.
      await handle.trigger(ScheduleOverlapPolicy.SKIP);
      return reply.status(202).send({ id: request.params.id, triggered: true });
    },
  );

  app.delete(
    '/schedules/:id',
    {
      schema: {
        summary: 'Delete a nightly schedule (a run in progress finishes; no new ones start)',
        params: ScheduleIdParams,
        response: { 200: ScheduleDeletedSchema, ...errors },
      },
    },
    async (request) => {
      const { handle } = await existing(request.params.id);
      await handle.delete();
      return { id: request.params.id, deleted: true };
    },
  );
};
