import type { ActivityOptions, LocalActivityOptions } from '@temporalio/workflow';
import { nonRetryableCodes } from '../core/failures';

/** Failure types no retry can fix (the failure table's non-retryable thrown codes): the workflow handles them as outcomes. */
const permanent = [...nonRetryableCodes];

/** Heartbeat period of long activities (the worker sends each one: worker/worker.ts throttles no heartbeat longer). */
export const heartbeatEveryMs = 2_000;

/**
 * A running activity whose heartbeats stop for this long is retried on a live worker: three missed
 * heartbeats. A killed worker's step is retried ~4–6 s after the kill (a worker restarts in about 3),
 * where Temporal's usual 10 s left the run idle for most of that; a slow but live worker gets three
 * periods before a retry runs beside it. Measured by the chaos suite (docs/BENCHMARKS.md).
 */
const heartbeatTimeout = '6s';

/**
 * Capsules: deterministic host-side steps of about a second. Retried a few times for
 * transient trouble (a git lock, a busy daemon); permanent failures are not retried. The worker
 * heartbeats every running capsule (worker/heartbeat.ts), so one whose worker died is retried
 * within the heartbeat timeout, not after the start-to-close timeout (which bounds a slow fetch).
 */
export const capsule: ActivityOptions = {
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout,
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 6, nonRetryableErrorTypes: permanent },
};

/**
 * A capsule run as a local activity (workflows/pinned.ts): the same limits and retries, retried
 * by the worker that runs the workflow; a worker that dies mid-step loses its workflow task and
 * the next worker runs the step again (every capsule is idempotent).
 */
export const localCapsule: LocalActivityOptions = {
  startToCloseTimeout: '5 minutes',
  retry: capsule.retry,
};

/**
 * A gate suite in a container. The activity heartbeats the container id; when the
 * worker dies the heartbeat stops, Temporal retries within seconds and the next
 * attempt reattaches to the running container instead of starting another.
 */
export function gateSuite(suiteTimeoutMs: number): ActivityOptions {
  return {
    startToCloseTimeout: suiteTimeoutMs + 5 * 60_000,
    heartbeatTimeout,
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '20s', maximumAttempts: 20, nonRetryableErrorTypes: permanent },
  };
}

/**
 * An environment's build (activities/environments/environments.ts): its setup's own timeout plus room to
 * unpack what it made. A killed worker's build is retried within the heartbeat timeout and starts
 * over cleanly (the half-built directory is never used).
 */
export function environmentBuild(setupTimeoutMs: number): ActivityOptions {
  return {
    startToCloseTimeout: setupTimeoutMs + 15 * 60_000,
    heartbeatTimeout,
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '20s', maximumAttempts: 10, nonRetryableErrorTypes: permanent },
  };
}

/**
 * One agent session attempt in a container; like a gate suite it heartbeats the
 * container id and a retry reattaches instead of spawning a successor. An attempt
 * (or its retry after a dead worker) that no worker of the host picks up within
 * `hostLostAfterMs` fails with a schedule-to-start timeout: the host is lost.
 */
export function sessionRun(sessionTimeoutMs: number, hostLostAfterMs: number): ActivityOptions {
  return { ...gateSuite(sessionTimeoutMs), scheduleToStartTimeout: hostLostAfterMs };
}
