import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client, type ScheduleDescription, type ScheduleHandle } from '@temporalio/client';
import type { FastifyBaseLogger } from 'fastify';
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
import type { ScheduleCreate, ScheduleCreated, ScheduleDefinition, ScheduleView } from '../schedule-schemas';

/**
 * A missed run (Temporal was down at 03:00) is still taken when the server is back
 * within this window; later than that it is skipped, and the next night runs.
 */
const catchupWindow = '1 day';

/** The definition a schedule was created with, from its memo (undefined: not a Tarmac nightly). */
export function definitionOf(memo: Record<string, unknown> | undefined): ScheduleDefinition | undefined {
  const definition = memo?.definition as ScheduleDefinition | undefined;
  return definition && typeof definition.repo === 'string' && typeof definition.cron === 'string' ? definition : undefined;
}

export const iso = (dates: Date[]) => dates.map((date) => date.toISOString());

/** A Tarmac nightly schedule and its description; a schedule Temporal does not know throws its ScheduleNotFoundError (a 404). */
export async function existingSchedule(
  client: Client,
  id: string,
): Promise<{ handle: ScheduleHandle; description: ScheduleDescription; definition: ScheduleDefinition }> {
  const handle = client.schedule.getHandle(id);
  const description = await handle.describe();
  const definition = definitionOf(description.memo);
  if (!definition || description.action.workflowType !== 'nightly') throw new NotFound(`no schedule ${id}`);
  return { handle, description, definition };
}

/** Everything is checked before Temporal is called: an invalid request creates nothing. Returns the definition to record. */
async function checkedDefinition(client: Client, config: Config, body: ScheduleCreate): Promise<ScheduleDefinition> {
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
  return { repo, target: body.target, cron: cronText, timezone: body.timezone, ...(agents ? { agents } : {}) };
}

/**
 * Creates the nightly schedule of a repo and target: a Temporal Schedule whose action starts the
 * `nightly` workflow. The same request again finds it (`duplicate`); a different one for the same
 * pair is a conflict (delete it first).
 */
export async function createNightlySchedule(client: Client, config: Config, body: ScheduleCreate, log: FastifyBaseLogger): Promise<ScheduleCreated> {
  const definition = await checkedDefinition(client, config, body);
  const { repo, target, agents } = definition;
  const id = nightlyScheduleId(repo, target);
  const nightly: NightlyRequest = { repo, target, ...(agents ? { agents } : {}) };
  const links = { self: `/v1/schedules/${id}`, trigger: `/v1/schedules/${id}/trigger` };
  try {
    const handle = await client.schedule.create({
      scheduleId: id,
      spec: { cronExpressions: [definition.cron], timezone: body.timezone },
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
          { key: searchAttributes.target, value: target },
          { key: searchAttributes.phase, value: 'inspect' },
        ],
        memo: { request: { repo, target }, scheduleId: id, tarmacVersion: '0.1.0' },
      },
      // One nightly per target at a time: a run still going when the next is due skips the next.
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow },
      state: { paused: body.paused, ...(body.paused ? { note: 'created paused' } : {}) },
      memo: { definition },
    });
    const description = await handle.describe();
    log.info({ scheduleId: id }, 'nightly schedule created');
    return { id, ...definition, paused: description.state.paused, nextRuns: iso(description.info.nextActionTimes), duplicate: false, links };
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
  // This (repo, target) already has its nightly: the same definition is the same request.
  const { description, definition: current } = await existingSchedule(client, id);
  if (JSON.stringify(current) !== JSON.stringify(definition)) {
    throw new ApiError(
      FailureCode.conflict,
      `${repo} ${target} already has nightly schedule ${id} with cron "${current.cron}" (${current.timezone}); delete it first to change it`,
      {
        id,
        existing: { cron: current.cron, timezone: current.timezone, ...(current.agents ? { agents: current.agents } : {}) },
      },
    );
  }
  return { id, ...current, paused: description.state.paused, nextRuns: iso(description.info.nextActionTimes), duplicate: true, links };
}

/** A nightly schedule: its definition, next runs, running and recent runs (newest first) with their outcomes. */
export async function scheduleView(client: Client, id: string): Promise<ScheduleView> {
  const { description, definition } = await existingSchedule(client, id);
  const recentRuns = [];
  for (const action of [...description.info.recentActions].reverse()) {
    const workflowId = action.action.workflow.workflowId;
    const run = client.workflow.getHandle(workflowId, action.action.workflow.firstExecutionRunId);
    const workflowStatus = await run
      .describe()
      .then((info) => info.status.name)
      .catch(() => 'UNKNOWN');
    const outcome = workflowStatus === 'COMPLETED' ? ((await run.result()) as NightlyOutcome) : undefined;
    recentRuns.push({
      workflowId,
      scheduledAt: action.scheduledAt.toISOString(),
      takenAt: action.takenAt.toISOString(),
      workflowStatus,
      ...(outcome ? { outcome: { ...outcome } } : {}),
    });
  }
  return {
    id,
    ...definition,
    paused: description.state.paused,
    ...(description.state.note ? { note: description.state.note } : {}),
    nextRuns: iso(description.info.nextActionTimes),
    actionsTaken: description.info.numActionsTaken,
    running: description.info.runningActions.map((action) => action.workflow.workflowId),
    recentRuns,
  };
}
