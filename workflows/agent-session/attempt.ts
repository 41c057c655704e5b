import { TimeoutType } from '@temporalio/common';
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities, DispatchPlan } from '../../activities';
import { parseDuration } from '../../core/duration';
import { hostQueue, placementQueue } from '../../core/queues';
import type { SessionAttemptReport, SessionRequest } from '../../core/session-types';
import { attemptClassOf } from '../../policies/attempt-class';
import { budgetLeft } from '../../policies/budget';
import type { AttemptClass } from '../../policies/session-policy';
import { capsule, sessionRun } from '../activity-options';
import { metrics } from '../metrics';
import type { SessionRecord } from './record';

/** Where the attempts run: the host of the session's workspace, its activities, the base commit. */
export interface Placement {
  hostId: string;
  baseSha: string;
  /** session.run on the host's queue, with the session's timeouts. */
  runner: Activities;
  /** Capsules on the host's queue (cleanup, outcome). */
  host: Activities;
}

/** A workspace of the session's own (on whichever host prepares it), or the run's. */
export async function placeOnHost(record: SessionRecord, plan: DispatchPlan, request: SessionRequest): Promise<Placement> {
  const workspace = request.workspace;
  let hostId: string;
  let baseSha: string;
  if (workspace.kind === 'fresh') {
    record.meters.capsulesRun += 1;
    // Through the placement queue: the worker that prepares it is a host, and the session's host from here on.
    const placing = proxyActivities<Activities>({ ...capsule, taskQueue: placementQueue(workflowInfo().taskQueue) });
    ({ hostId, baseSha } = await placing['capsule.prepareSessionWorkspace']({ runId: request.runId, repo: workspace.repo, ref: workspace.ref }));
  } else {
    ({ hostId, baseSha } = workspace);
  }
  const hostLostAfterMs = parseDuration(plan.limits.hostLostAfter ?? '5m') ?? 5 * 60_000;
  return {
    hostId,
    baseSha,
    runner: proxyActivities<Activities>({ ...sessionRun(parseDuration(plan.limits.timeout) ?? 30 * 60_000, hostLostAfterMs), taskQueue: hostQueue(hostId) }),
    host: proxyActivities<Activities>({ ...capsule, taskQueue: hostQueue(hostId) }),
  };
}

/** The activity was never picked up by a worker of its queue (the attempt's schedule-to-start timeout). */
function scheduleToStartTimedOut(error: unknown): boolean {
  const cause = (error as { cause?: { timeoutType?: unknown } }).cause;
  return cause?.timeoutType === TimeoutType.SCHEDULE_TO_START;
}

/** What is known of an attempt whose host never ran it: nothing but that. */
function lostHostReport(attempt: number, harnessModel: string, hostId: string, durationMs: number): SessionAttemptReport {
  return {
    attempt,
    harnessModel,
    hostId,
    containerId: '',
    exitCode: null,
    oomKilled: false,
    timedOut: false,
    reattached: false,
    foundFinished: false,
    durationMs,
    sawFirstTurn: false,
    commitsAdded: 0,
    headSha: '',
    logRef: '',
  };
}

/**
 * One attempt: a container on the placement's host (or the one found from an earlier try), what it
 * reported, its usage in the meters, its class. Recorded in the session's record and reported.
 */
export async function runAttempt(
  record: SessionRecord,
  plan: DispatchPlan,
  request: SessionRequest,
  place: Placement,
): Promise<{ seen: SessionAttemptReport; attemptClass: AttemptClass }> {
  const { meters } = record;
  const harnessModel = record.harnessModel;
  const attemptStarted = Date.now();
  const report: SessionAttemptReport | undefined = await place.runner['session.run']({
    runId: request.runId,
    sessionId: request.sessionId,
    attempt: record.attempts.length + 1,
    role: request.role,
    harnessModel,
    harness: plan.harnesses[harnessModel.split('#')[0]!]!,
    task: request.task,
    limits: plan.limits,
    repo: request.workspace.repo,
    baseSha: place.baseSha,
    ...(request.reportTo ? { reportTo: request.reportTo } : {}),
    ...(request.continues ? { continues: request.continues } : {}),
    ...(request.recipes ? { recipes: request.recipes } : {}),
    ...(request.environment ? { environment: request.environment } : {}),
    // What the attempt's model gateway lets through: what is left of the run budget.
    modelBudget: (({ tokens, costUsd }) => ({ tokens, costUsd }))(budgetLeft(meters, record.budget!)),
  }).catch((error: unknown) => {
    // No worker of the host picked the attempt up in time: the host is lost (an answer, not an error).
    if (scheduleToStartTimedOut(error)) return undefined;
    throw error;
  });
  // A session counts once its worker took the attempt on (one it could not start spawned nothing).
  if (report?.unavailable === undefined) meters.sessionsSpawned += 1;
  const seen: SessionAttemptReport = report ?? lostHostReport(record.attempts.length + 1, harnessModel, place.hostId, Date.now() - attemptStarted);
  if (seen.reattached) meters.reattachments += 1;
  // Usage metered by the model gateway wins over what the CLI reports of itself.
  const usage = seen.modelUsage ?? seen.result?.usage;
  if (usage) {
    meters.inputTokens += usage.inputTokens;
    meters.outputTokens += usage.outputTokens;
    meters.costUsd += usage.costUsd;
  }
  const attemptClass = attemptClassOf(seen, request.role, report === undefined);
  if (seen.foundFinished) {
    record.decisions.push({ afterAttempt: seen.attempt, action: 'collect', reason: 'found the session finished (done-undelivered) and collected its result' });
  }
  record.attempts.push({ ...seen, class: attemptClass });
  metrics.sessionAttempt(attemptClass, request.role);
  if (usage) metrics.tokens(request.role, usage.inputTokens, usage.outputTokens);
  await record.report({ type: 'classified', attempt: seen.attempt, harnessModel, class: attemptClass });
  return { seen, attemptClass };
}
