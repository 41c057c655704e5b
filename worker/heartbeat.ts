import type { Context } from '@temporalio/activity';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { heartbeatEveryMs } from '../workflows/activity-options';

/**
 * Activities that heartbeat on their own, with details their retry reads (the container id it
 * reattaches to): the worker must not heartbeat over them with empty details.
 */
export const selfHeartbeating: ReadonlySet<string> = new Set(['gate.runSuite', 'session.run']);

/**
 * Recovery in seconds: every other activity (the capsules, the fix loop's steps, the review cache)
 * heartbeats while it runs, every `heartbeatEveryMs`, so a worker that dies mid-step is noticed within
 * one heartbeat timeout (workflows/activity-options.ts) and the step retried on a live worker — not
 * after its start-to-close timeout of minutes. Local activities are not heartbeated (their worker is
 * the workflow's: a lost workflow task runs them again).
 */
export const heartbeating: ActivityInterceptorsFactory = (ctx: Context) => ({
  inbound: {
    async execute(input, next) {
      const { info } = ctx;
      if (info.isLocal || selfHeartbeating.has(info.activityType)) return await next(input);
      ctx.heartbeat();
      const beat = setInterval(() => ctx.heartbeat(), heartbeatEveryMs);
      try {
        return await next(input);
      } finally {
        clearInterval(beat);
      }
    },
  },
});
