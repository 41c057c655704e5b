import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { Client } from '@temporalio/client';
import type { RetentionReport } from '../../activities/janitor/retention';
import { ErrorSchema } from '../schemas';

/** The most removals one sweep lists here (the host's retention.jsonl has them all). */
const maxListed = 200;

const RemovalSchema = Type.Object({
  kind: Type.Union([Type.Literal('run'), Type.Literal('mirror'), Type.Literal('review-cache'), Type.Literal('gate-cache'), Type.Literal('environment')]),
  path: Type.String({ description: 'relative to the host’s data dir' }),
  runId: Type.Optional(Type.String()),
  status: Type.Optional(Type.String({ description: 'the run’s final workflow status (not-found: Temporal no longer knows it)' })),
  finishedAt: Type.String({ description: 'when the run finished, or the mirror or cache entry was last used' }),
  bytes: Type.Integer(),
  reason: Type.String(),
});

const SweepSchema = Type.Object({
  workflowId: Type.String(),
  scheduledAt: Type.String(),
  takenAt: Type.String(),
  workflowStatus: Type.String(),
  report: Type.Optional(
    Type.Object({
      startedAt: Type.String(),
      endedAt: Type.String(),
      removedCount: Type.Integer(),
      bytesFreed: Type.Integer(),
      removed: Type.Array(RemovalSchema, { description: `at most ${maxListed}; the host's retention.jsonl lists every removal` }),
      keptRuns: Type.Array(Type.Object({ runId: Type.String(), reason: Type.String() })),
      problems: Type.Array(Type.Object({ path: Type.String(), problem: Type.String() })),
    }),
  ),
});

const RetentionViewSchema = Type.Object({
  hosts: Type.Array(
    Type.Object({
      hostId: Type.String(),
      scheduleId: Type.String(),
      retentionMs: Type.Integer(),
      everyMs: Type.Integer(),
      paused: Type.Boolean(),
      nextRuns: Type.Array(Type.String()),
      running: Type.Array(Type.String()),
      recentSweeps: Type.Array(SweepSchema, { description: 'newest first' }),
    }),
  ),
});

/**
 * What retention did on each worker host: its schedule (`tarmac.retention.<host>`, made by the
 * host's worker), its settings, when it sweeps next, and its recent sweeps with what each removed
 * and kept. Read from Temporal, so it answers for every host whatever disk the API is on.
 */
export const retentionRoutes: FastifyPluginAsyncTypebox<{ client: Client }> = async (app, { client }) => {
  app.get(
    '/retention',
    {
      schema: {
        summary: "Each worker host's retention schedule and its recent sweeps: what was removed, when and why",
        response: { 200: RetentionViewSchema, 401: ErrorSchema, 500: ErrorSchema },
      },
    },
    async function showRetention() {
      const hosts = [];
      for await (const summary of client.schedule.list()) {
        if (!summary.scheduleId.startsWith('tarmac.retention.') || summary.action?.workflowType !== 'retentionSweep') continue;
        const description = await client.schedule.getHandle(summary.scheduleId).describe();
        // The settings as the schedule has them now (the host's worker updates them at each start).
        const request = (description.action.type === 'startWorkflow' ? description.action.args?.[0] : undefined) as
          { hostId?: string; retentionMs?: number } | undefined;
        const every = description.spec.intervals?.[0]?.every;
        const recentSweeps = [];
        for (const action of [...description.info.recentActions].reverse()) {
          const { workflowId, firstExecutionRunId } = action.action.workflow;
          const run = client.workflow.getHandle(workflowId, firstExecutionRunId);
          const workflowStatus = await run
            .describe()
            .then((info) => info.status.name)
            .catch(() => 'UNKNOWN');
          const report = workflowStatus === 'COMPLETED' ? ((await run.result()) as RetentionReport) : undefined;
          recentSweeps.push({
            workflowId,
            scheduledAt: action.scheduledAt.toISOString(),
            takenAt: action.takenAt.toISOString(),
            workflowStatus,
            ...(report
              ? {
                  report: {
                    startedAt: report.startedAt,
                    endedAt: report.endedAt,
                    removedCount: report.removed.length,
                    bytesFreed: report.bytesFreed,
                    removed: report.removed.slice(0, maxListed),
                    keptRuns: report.keptRuns,
                    problems: report.problems,
                  },
                }
              : {}),
          });
        }
        hosts.push({
          hostId: request?.hostId ?? summary.scheduleId.slice('tarmac.retention.'.length),
          scheduleId: summary.scheduleId,
          retentionMs: request?.retentionMs ?? 0,
          everyMs: typeof every === 'number' ? every : 0,
          paused: description.state.paused,
          nextRuns: description.info.nextActionTimes.map((date) => date.toISOString()),
          running: description.info.runningActions.map((running) => running.workflow.workflowId),
          recentSweeps,
        });
      }
      return { hosts };
    },
  );
};
