import type { Context } from '@temporalio/activity';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { lastHeartbeatDetails } from '../activities/containers/heartbeat-details';
import { heartbeatEveryMs } from '../workflows/activity-options';

/**
 * Recovery in seconds: every running activity (the capsules, the fix loop's steps, the review cache,
 * and the gate suites and sessions between their own heartbeats — while they export a tree or copy a
 * workspace before their container runs) is heartbeated by the worker every `heartbeatEveryMs`,
 * repeating the details the activity last sent (`heartbeatWith`: a container id stays the last
 * details). A worker that dies mid-step is noticed within one heartbeat timeout
 * (workflows/activity-options.ts) and the step retried on a live worker — not after its
 * start-to-close timeout of minutes. Local activities are not heartbeated (their worker is the
 * workflow's: a lost workflow task runs them again).
 */
export const heartbeating: ActivityInterceptorsFactory = (ctx: Context) => ({
  inbound: {
    async execute(input, next) {
      if (ctx.info.isLocal) return await next(input);
      const beat = () => ctx.heartbeat(lastHeartbeatDetails(ctx));
      beat();
      const timer = setInterval(beat, heartbeatEveryMs);
      try {
        return await next(input);
      } finally {
        clearInterval(timer);
      }
    },
  },
});
