import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { Config } from '../../core/node/config';
import { FailureCode } from '../../core/failures';
import { ApiError } from '../errors';
import {
  ScheduleCreatedSchema,
  ScheduleCreateSchema,
  ScheduleDeletedSchema,
  ScheduleIdParams,
  ScheduleListSchema,
  ScheduleTriggeredSchema,
  ScheduleViewSchema,
} from '../schedule-schemas';
import { ErrorSchema } from '../schemas';
import { createNightlySchedule, definitionOf, existingSchedule, iso, scheduleView } from '../services/schedules';

const errors = { 400: ErrorSchema, 401: ErrorSchema, 404: ErrorSchema, 500: ErrorSchema };

const createSchema = {
  summary: 'Create the nightly schedule of a repo and target (one per pair; the same request again returns it with 200)',
  body: ScheduleCreateSchema,
  response: { 201: ScheduleCreatedSchema, 200: ScheduleCreatedSchema, 409: ErrorSchema, ...errors },
};
const listSchema = { summary: 'List the nightly schedules', response: { 200: ScheduleListSchema, ...errors } };
const showSchema = {
  summary: 'A nightly schedule: its definition, next runs, running and recent runs with their outcomes',
  params: ScheduleIdParams,
  response: { 200: ScheduleViewSchema, ...errors },
};
const triggerSchema = {
  summary: 'Run the nightly now (409 while a run of it is still in progress)',
  params: ScheduleIdParams,
  response: { 202: ScheduleTriggeredSchema, 409: ErrorSchema, ...errors },
};
const deleteSchema = {
  summary: 'Delete a nightly schedule (a run in progress finishes; no new ones start)',
  params: ScheduleIdParams,
  response: { 200: ScheduleDeletedSchema, ...errors },
};

/**
 * Nightly schedules: a Temporal Schedule per (repo, target) whose action starts the
 * `nightly` workflow (full gate on the target head; red → fix loop → landing).
 */
export const scheduleRoutes: FastifyPluginAsyncTypebox<{ client: Client; config: Config }> = async (app, { client, config }) => {
  app.post('/schedules', { schema: createSchema }, async function createSchedule(request, reply) {
    const created = await createNightlySchedule(client, config, request.body, request.log);
    return reply.status(created.duplicate ? 200 : 201).send(created);
  });

  app.get('/schedules', { schema: listSchema }, async function listSchedules() {
    const schedules = [];
    for await (const summary of client.schedule.list()) {
      const definition = definitionOf(summary.memo);
      if (!definition || summary.action?.workflowType !== 'nightly') continue;
      schedules.push({ id: summary.scheduleId, ...definition, paused: summary.state.paused, nextRuns: iso(summary.info.nextActionTimes) });
    }
    return { schedules };
  });

  app.get('/schedules/:id', { schema: showSchema }, async function showSchedule(request) {
    return await scheduleView(client, request.params.id);
  });

  app.post('/schedules/:id/trigger', { schema: triggerSchema }, async function triggerSchedule(request, reply) {
    const { handle, description } = await existingSchedule(client, request.params.id);
    const running = description.info.runningActions.map((action) => action.workflow.workflowId);
    if (running.length > 0) throw new ApiError(FailureCode.conflict, `schedule ${request.params.id} has a run in progress: ${running.join(', ')}`, { running });
    // SKIP again on the server: of two triggers racing past the check above, one runs.
    await handle.trigger(ScheduleOverlapPolicy.SKIP);
    return reply.status(202).send({ id: request.params.id, triggered: true });
  });

  app.delete('/schedules/:id', { schema: deleteSchema }, async function deleteSchedule(request) {
    const { handle } = await existingSchedule(client, request.params.id);
    await handle.delete();
    return { id: request.params.id, deleted: true };
  });
};
