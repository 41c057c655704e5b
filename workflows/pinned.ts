import { ActivityFailure, ApplicationFailure, proxyActivities, proxyLocalActivities, TimeoutFailure } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { hostBoundCapsules, type HostBoundCapsule } from '../core/host-bound';
import { FailureCode } from '../core/failures';
import { hostQueue } from '../core/queues';
import { capsule, localCapsule } from './activity-options';

/**
 * The activities of a run pinned to `hostId`. The short host-side capsules run as local
 * activities when the worker running the workflow is that host (one process, or a sticky
 * workflow on it): no task queue, no trip to the server; the local capsule checks the host
 * itself and refuses with TARMAC_WRONG_HOST anywhere else, and then (only then) the step goes
 * through the host's task queue as before. Replay takes the recorded result of the local try,
 * so the choice is deterministic. Long steps (gate suites, sessions) always go through the queue.
 * Never await two local activities side by side: live and replay may deliver their results in
 * different activations, and what the run recorded in between (its journal) would differ.
 */
/** A host-pinned step that no worker of its host picked up in time: the host is lost (not the step's fault). */
export function hostLost(error: unknown): boolean {
  return error instanceof ActivityFailure && error.cause instanceof TimeoutFailure && error.cause.timeoutType === 'SCHEDULE_TO_START';
}

/** The failure type of an activity failure: wrapped in an ActivityFailure, or (a local activity's) bare. */
function failureType(error: unknown): string | undefined {
  if (error instanceof ActivityFailure && error.cause instanceof ApplicationFailure) return error.cause.type ?? undefined;
  return error instanceof ApplicationFailure ? (error.type ?? undefined) : undefined;
}

export function pinnedTo(hostId: string, hostLostAfterMs?: number): Activities {
  // A step no worker of the host picks up within `hostLostAfterMs` fails with a schedule-to-start
  // timeout: the host is lost (hostLost), and the run re-places itself on a live host.
  const remote = proxyActivities<Activities>({
    ...capsule,
    taskQueue: hostQueue(hostId),
    ...(hostLostAfterMs ? { scheduleToStartTimeout: hostLostAfterMs } : {}),
  });
  const local = proxyLocalActivities<Activities>(localCapsule);
  const bound = new Set<string>(hostBoundCapsules);
  return new Proxy(remote, {
    get(target, name, receiver) {
      if (typeof name !== 'string' || !bound.has(name)) return Reflect.get(target, name, receiver) as unknown;
      return async (input: unknown) => {
        try {
          return await local['capsule.onHost']({ hostId, name: name as HostBoundCapsule, input });
        } catch (error) {
          if (failureType(error) !== FailureCode.wrongHost) throw error;
          return await (target[name as HostBoundCapsule] as (input: unknown) => Promise<unknown>)(input);
        }
      };
    },
  });
}
