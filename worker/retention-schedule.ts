import { ScheduleAlreadyRunning, ScheduleNotFoundError, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../core/node/config';
import { searchAttributes } from '../core/search-attributes';
import type { RetentionSweepRequest } from '../workflows/retention';

/** The retention schedule of one host: one per host, since each host's files are only on that host. */
export const retentionScheduleId = (hostId: string): string => `tarmac.retention.${hostId}`;

/**
 * Makes (or brings up to date) this host's retention schedule: every `TARMAC_RETENTION_EVERY` it
 * starts `retentionSweep` for this host with `TARMAC_RETENTION`; overlapping sweeps are skipped.
 * Called by every worker that serves a host queue, at start, so a changed setting takes effect at
 * the next start; `TARMAC_RETENTION=off` deletes the schedule (nothing is removed any more).
 */
export async function ensureRetentionSchedule(client: Client, config: Config, logger: Logger): Promise<void> {
  const scheduleId = retentionScheduleId(config.hostId);
  const handle = client.schedule.getHandle(scheduleId);
  if (config.retentionMs === undefined) {
    try {
      await handle.delete();
      logger.info({ scheduleId }, 'retention off (TARMAC_RETENTION=off): the retention schedule of this host was deleted');
    } catch (error) {
      if (!(error instanceof ScheduleNotFoundError)) throw error;
    }
    return;
  }
  const request: RetentionSweepRequest = { hostId: config.hostId, retentionMs: config.retentionMs };
  const options = {
    scheduleId,
    spec: { intervals: [{ every: config.retentionEveryMs }] },
    action: {
      type: 'startWorkflow' as const,
      workflowType: 'retentionSweep',
      workflowId: scheduleId,
      taskQueue: config.taskQueue,
      args: [request],
      typedSearchAttributes: [{ key: searchAttributes.kind, value: 'retention' }],
      memo: { hostId: config.hostId },
      workflowExecutionTimeout: 3_600_000,
    },
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: 3_600_000 },
    memo: { hostId: config.hostId, retentionMs: config.retentionMs, everyMs: config.retentionEveryMs },
  };
  try {
    await client.schedule.create(options);
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
    await handle.update((previous) => ({
      ...previous,
      spec: options.spec,
      action: { ...previous.action, ...options.action },
      policies: { ...previous.policies, ...options.policies },
    }));
  }
  logger.info({ scheduleId, retentionMs: config.retentionMs, everyMs: config.retentionEveryMs }, 'retention schedule of this host is in place');
}
