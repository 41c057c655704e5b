import { defineQuery, proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities, RetentionReport } from '../activities';
import { hostQueue } from '../core/queues';

export interface RetentionSweepRequest {
  hostId: string;
  /** Finished runs, unused mirrors and cache entries older than this go (TARMAC_RETENTION of that host's worker). */
  retentionMs: number;
}

/** What a sweep is doing: waiting for its host, or done (with its report). */
const retentionStatusQuery = defineQuery<{ hostId: string; state: 'sweeping' | 'done'; report?: RetentionReport }>('status');

/**
 * retentionSweep: one sweep of one host's data dir, started by that host's schedule
 * (`tarmac.retention.<host>`, made by the host's worker) — the sweep itself runs on the host's
 * queue, where its files are. Its result is the report: what was removed (also in the host's
 * `retention.jsonl` and worker log), every run kept and why. A host that is gone for good picks
 * nothing up: the sweep fails after its schedule-to-start timeout, and the next one tries again.
 */
export async function retentionSweep(request: RetentionSweepRequest): Promise<RetentionReport> {
  const done: { report?: RetentionReport } = {};
  setHandler(retentionStatusQuery, () => ({
    hostId: request.hostId,
    state: done.report ? 'done' : 'sweeping',
    ...(done.report ? { report: done.report } : {}),
  }));
  const host = proxyActivities<Activities>({
    taskQueue: hostQueue(request.hostId),
    scheduleToStartTimeout: '10 minutes',
    startToCloseTimeout: '30 minutes',
    heartbeatTimeout: '30s',
    retry: { initialInterval: '5s', maximumAttempts: 3 },
  });
  done.report = await host['retention.sweep']({ retentionMs: request.retentionMs });
  return done.report;
}
