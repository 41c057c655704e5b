/**
 * Where a pass lost time to faults, read from the histories of every workflow it ran: workflow
 * tasks and activities that timed out (by kind of timeout: a sticky task no worker took, a task or
 * a step whose worker died), retried activities and the longest pauses between two events of a run.
 */
import type { Stack } from '../helpers/stack';

export interface Recovery {
  workflows: number;
  /** `workflowTask <timeout type>` / `activity <name> <timeout type>` → how many. */
  timeouts: Record<string, number>;
  /** Activities retried, by name and the failure before the retry. */
  retries: Record<string, number>;
  /**
   * Time runs waited on timeouts, summed over runs (they overlap): from a task's scheduling to its
   * timeout, and for a workflow task on to the next task recorded (retries of a lost workflow task
   * are not written to the history until one completes).
   */
  waitedMs: number;
  /** The longest of those waits. */
  longestWaits: { workflowId: string; ms: number; what: string }[];
}

const timeoutTypes: Record<number, string> = { 1: 'start-to-close', 2: 'schedule-to-start', 3: 'schedule-to-close', 4: 'heartbeat' };

function kindOf(event: Record<string, unknown>): string {
  for (const key of Object.keys(event)) if (key.endsWith('EventAttributes') && event[key]) return key.slice(0, -'EventAttributes'.length);
  return 'unknown';
}

function millis(time: unknown): number {
  const { seconds, nanos } = (time ?? {}) as { seconds?: { toNumber(): number } | number; nanos?: number };
  const whole = typeof seconds === 'number' ? seconds : (seconds?.toNumber() ?? 0);
  return whole * 1000 + Math.floor((nanos ?? 0) / 1e6);
}

/** Reads every workflow that started since `sinceMs` (epoch ms), and before `untilMs` when given. */
export async function recoveryOf(stack: Stack, sinceMs: number, untilMs?: number): Promise<Recovery> {
  const recovery: Recovery = { workflows: 0, timeouts: {}, retries: {}, waitedMs: 0, longestWaits: [] };
  const since = new Date(sinceMs).toISOString();
  const until = untilMs ? ` AND StartTime < '${new Date(untilMs).toISOString()}'` : '';
  const waits: Recovery['longestWaits'] = [];
  for await (const execution of stack.client.workflow.list({ query: `StartTime >= '${since}'${until}` })) {
    recovery.workflows += 1;
    const history = await stack.client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
    const activityOf = new Map<string, string>();
    const scheduledAt = new Map<string, number>();
    let taskScheduledAt = 0;
    let lostTask: { at: number; what: string } | undefined;
    for (const event of history.events ?? []) {
      const kind = kindOf(event as unknown as Record<string, unknown>);
      const at = millis(event.eventTime);
      if (event.activityTaskScheduledEventAttributes) {
        activityOf.set(String(event.eventId), event.activityTaskScheduledEventAttributes.activityType?.name ?? '?');
        scheduledAt.set(String(event.eventId), at);
      }
      if (lostTask && kind !== 'workflowTaskTimedOut') {
        waits.push({ workflowId: execution.workflowId, ms: at - lostTask.at, what: `${lostTask.what}: retried until ${kind}` });
        lostTask = undefined;
      }
      if (event.workflowTaskScheduledEventAttributes) taskScheduledAt = at;
      const taskTimeout = event.workflowTaskTimedOutEventAttributes;
      if (taskTimeout) {
        const key = `workflow task ${timeoutTypes[taskTimeout.timeoutType ?? 0] ?? taskTimeout.timeoutType}`;
        recovery.timeouts[key] = (recovery.timeouts[key] ?? 0) + 1;
        waits.push({ workflowId: execution.workflowId, ms: at - taskScheduledAt, what: key });
        lostTask = { at, what: key };
      }
      const activityTimeout = event.activityTaskTimedOutEventAttributes;
      if (activityTimeout) {
        const type = activityTimeout.failure?.timeoutFailureInfo?.timeoutType ?? 0;
        const key = `activity ${activityOf.get(String(activityTimeout.scheduledEventId)) ?? '?'} ${timeoutTypes[type] ?? type}`;
        recovery.timeouts[key] = (recovery.timeouts[key] ?? 0) + 1;
      }
      const started = event.activityTaskStartedEventAttributes;
      if (started && (started.attempt ?? 1) > 1) {
        const failure = started.lastFailure;
        const why = failure?.timeoutFailureInfo
          ? `${timeoutTypes[failure.timeoutFailureInfo.timeoutType ?? 0] ?? 'timeout'} timeout`
          : (failure?.applicationFailureInfo?.type ?? failure?.message ?? '?');
        const key = `${activityOf.get(String(started.scheduledEventId)) ?? '?'} after ${why}`;
        recovery.retries[key] = (recovery.retries[key] ?? 0) + 1;
      }
    }
  }
  recovery.waitedMs = waits.reduce((sum, wait) => sum + wait.ms, 0);
  recovery.longestWaits = waits.sort((a, b) => b.ms - a.ms).slice(0, 10);
  return recovery;
}

/**
 * A run's history and its children's, one line an event: seconds since `zeroMs` (the pass's start,
 * so the faults' moments line up), the event, what it is about (activity and attempt, child, signal,
 * timeout). For the report of a run that broke an invariant, or waited long.
 */
export async function timeline(stack: Stack, workflowId: string, zeroMs: number, depth = 0): Promise<string[]> {
  const lines: string[] = [];
  const history = await stack.client.workflow
    .getHandle(workflowId)
    .fetchHistory()
    .catch((error: unknown) => ({ events: [], error }));
  if ('error' in history) return [`${'  '.repeat(depth)}${workflowId}: history unreadable (${String(history.error)})`];
  const events = history.events ?? [];
  const activityOf = new Map<string, string>();
  const children: string[] = [];
  lines.push(`${'  '.repeat(depth)}${workflowId}`);
  for (const event of events) {
    const kind = kindOf(event as unknown as Record<string, unknown>);
    const at = ((millis(event.eventTime) - zeroMs) / 1000).toFixed(1).padStart(6);
    let about = '';
    if (event.activityTaskScheduledEventAttributes) {
      about = event.activityTaskScheduledEventAttributes.activityType?.name ?? '?';
      activityOf.set(String(event.eventId), about);
    }
    const ref =
      event.activityTaskStartedEventAttributes ??
      event.activityTaskCompletedEventAttributes ??
      event.activityTaskFailedEventAttributes ??
      event.activityTaskTimedOutEventAttributes;
    if (ref) about = activityOf.get(String(ref.scheduledEventId)) ?? '?';
    if (event.activityTaskStartedEventAttributes)
      about += ` attempt ${event.activityTaskStartedEventAttributes.attempt}${event.activityTaskStartedEventAttributes.lastFailure ? ` after ${event.activityTaskStartedEventAttributes.lastFailure.message}` : ''}`;
    if (event.markerRecordedEventAttributes) about = event.markerRecordedEventAttributes.markerName ?? '';
    const child = event.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
    if (child) {
      about = child;
      children.push(child);
    }
    if (event.workflowExecutionSignaledEventAttributes) about = event.workflowExecutionSignaledEventAttributes.signalName ?? '';
    if (event.workflowTaskTimedOutEventAttributes) about = timeoutTypes[event.workflowTaskTimedOutEventAttributes.timeoutType ?? 0] ?? '';
    if (event.workflowTaskStartedEventAttributes) about = `${event.workflowTaskStartedEventAttributes.identity ?? ''}`;
    if (event.workflowTaskFailedEventAttributes)
      about = `${event.workflowTaskFailedEventAttributes.cause ?? ''} ${event.workflowTaskFailedEventAttributes.failure?.message ?? ''}`;
    lines.push(`${'  '.repeat(depth)}${at} ${kind} ${about}`);
  }
  for (const child of children) lines.push(...(await timeline(stack, child, zeroMs, depth + 1)));
  return lines;
}
