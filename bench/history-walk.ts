/**
 * What a workflow history weighs: its events by kind, every payload in it (workflow input and
 * result, activity inputs and results, child inputs and results, signals, updates, markers,
 * memo, search attributes, headers) with where it sits, and the children it started. Pure: it
 * reads a fetched history and nothing else.
 */
import type { WorkflowHandle } from '@temporalio/client';

export type History = Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;
type Event = NonNullable<History['events']>[number];

export interface PayloadSite {
  /** Encoded size of the payload: its data plus its metadata keys and values. */
  bytes: number;
  eventId: number;
  /** The event's kind, e.g. `activityTaskCompleted`. */
  event: string;
  /** The activity, child workflow, signal, update or marker the event is about. */
  about: string;
  /** Where in the event's attributes, e.g. `result.payloads[0]`. */
  path: string;
}

interface HistoryWeight {
  events: number;
  eventsByKind: Record<string, number>;
  /** Signals received, by signal name (a child's journal events arrive as signals). */
  signalsByName: Record<string, number>;
  payloadBytes: number;
  /** All payloads, biggest first. */
  payloads: PayloadSite[];
  children: { workflowId: string; runId: string }[];
}

const attributesSuffix = 'EventAttributes';

/** The event's kind and its attributes: the one `…EventAttributes` field that is set. */
function attributesOf(event: Event): [string, Record<string, unknown>] {
  for (const [key, value] of Object.entries(event)) {
    if (key.endsWith(attributesSuffix) && value !== null && value !== undefined)
      return [key.slice(0, -attributesSuffix.length), value as Record<string, unknown>];
  }
  return ['unknown', {}];
}

function isBytes(value: unknown): value is Uint8Array {
  return value instanceof Uint8Array;
}

/** A payload is `{ metadata: { key: bytes }, data?: bytes }` (data is absent for an empty value). */
function payloadBytes(value: Record<string, unknown>): number | undefined {
  const metadata = value.metadata;
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata)) return undefined;
  const entries = Object.entries(metadata as Record<string, unknown>);
  if (entries.length === 0 || !entries.every(([, bytes]) => isBytes(bytes))) return undefined;
  const data = value.data;
  if (data !== undefined && data !== null && !isBytes(data)) return undefined;
  return (data?.length ?? 0) + entries.reduce((sum, [key, bytes]) => sum + key.length + (bytes as Uint8Array).length, 0);
}

/** Every payload under `value`, with its path. */
function findPayloads(value: unknown, path: string, found: { bytes: number; path: string }[]): void {
  if (value === null || typeof value !== 'object' || isBytes(value)) return;
  if (Array.isArray(value)) {
    value.forEach((item, index) => findPayloads(item, `${path}[${index}]`, found));
    return;
  }
  const record = value as Record<string, unknown>;
  const bytes = payloadBytes(record);
  if (bytes !== undefined) {
    found.push({ bytes, path });
    return;
  }
  for (const [key, child] of Object.entries(record)) findPayloads(child, path ? `${path}.${key}` : key, found);
}

function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  // Event ids arrive as Long objects, whose toString is the number.
  if (typeof value === 'object' && value !== null) return (value as { toString(): string }).toString();
  return undefined;
}
const nameOf = (value: unknown) => text((value as { name?: unknown } | null | undefined)?.name);
const workflowIdOf = (value: unknown) => text((value as { workflowId?: unknown } | null | undefined)?.workflowId);

/** What the event is about, read from its own attributes or from the event that scheduled it. */
function aboutOf(attributes: Record<string, unknown>, scheduled: Map<string, string>): string {
  const own =
    nameOf(attributes.activityType) ??
    (attributes.workflowType && attributes.workflowId ? `${nameOf(attributes.workflowType)} ${text(attributes.workflowId)}` : undefined) ??
    workflowIdOf(attributes.workflowExecution) ??
    nameOf(attributes.workflowType) ??
    text(attributes.signalName) ??
    text(attributes.markerName) ??
    nameOf((attributes.acceptedRequest as { input?: unknown } | undefined)?.input);
  if (own !== undefined) return own;
  const origin = text(attributes.scheduledEventId) ?? text(attributes.acceptedEventId) ?? text(attributes.initiatedEventId);
  return (origin && scheduled.get(origin)) ?? '';
}

/** The workflow's own type, from its first event: what a completion or a memo is about. */
function workflowTypeOf(events: Event[]): string {
  return nameOf(events[0]?.workflowExecutionStartedEventAttributes?.workflowType) ?? '';
}

export function weighHistory(history: History): HistoryWeight {
  const events = history.events ?? [];
  const eventsByKind: Record<string, number> = {};
  const signalsByName: Record<string, number> = {};
  const payloads: PayloadSite[] = [];
  const children: HistoryWeight['children'] = [];
  // Completions name their activity or update only through the id of the event that began it.
  const began = new Map<string, string>();
  const workflowType = workflowTypeOf(events);
  for (const event of events) {
    const [kind, attributes] = attributesOf(event);
    const eventId = text(event.eventId) ?? '0';
    const about = aboutOf(attributes, began) || workflowType;
    eventsByKind[kind] = (eventsByKind[kind] ?? 0) + 1;
    if (kind === 'workflowExecutionSignaled') signalsByName[about] = (signalsByName[about] ?? 0) + 1;
    began.set(eventId, about);
    const found: { bytes: number; path: string }[] = [];
    findPayloads(attributes, '', found);
    for (const site of found) payloads.push({ ...site, eventId: Number(eventId), event: kind, about });
    if (kind === 'childWorkflowExecutionStarted') {
      const execution = attributes.workflowExecution as { workflowId?: string | null; runId?: string | null } | undefined;
      if (execution?.workflowId && execution.runId) children.push({ workflowId: execution.workflowId, runId: execution.runId });
    }
  }
  payloads.sort((a, b) => b.bytes - a.bytes);
  return { events: events.length, eventsByKind, signalsByName, payloadBytes: payloads.reduce((sum, site) => sum + site.bytes, 0), payloads, children };
}

export interface RetriedActivity {
  activity: string;
  /** The attempt that finished (2 or more). */
  attempt: number;
  /** Why the attempt before it ended, as Temporal recorded it (e.g. a start-to-close timeout). */
  lastFailure: string;
}

/**
 * Activities that needed more than one attempt. Temporal writes one started event per activity,
 * with the attempt that ran last and the failure of the attempt before it.
 */
export function retriedActivities(history: History): RetriedActivity[] {
  const scheduled = new Map<string, string>();
  const retried: RetriedActivity[] = [];
  for (const event of history.events ?? []) {
    const scheduling = event.activityTaskScheduledEventAttributes;
    if (scheduling) scheduled.set(text(event.eventId) ?? '', nameOf(scheduling.activityType) ?? '?');
    const started = event.activityTaskStartedEventAttributes;
    if (started && (started.attempt ?? 1) > 1) {
      const failure = started.lastFailure;
      retried.push({
        activity: scheduled.get(text(started.scheduledEventId) ?? '') ?? '?',
        attempt: started.attempt ?? 0,
        lastFailure: [failure?.timeoutFailureInfo ? 'timeout' : failure?.applicationFailureInfo?.type, failure?.message].filter(Boolean).join(': '),
      });
    }
  }
  return retried;
}
