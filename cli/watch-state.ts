/**
 * What `tarmac watch` knows about a run, folded from its event stream. Pure: the
 * messages come in, a new state goes out; no I/O, no clock.
 */
import type { LandingOutcomeView, RunEvent } from '../api/schemas';
import type { Meters } from '../core/types';
import type { SseMessage } from './sse';

/** A runner log line (`log`) and the stream's last message (`end`), besides the journal events. */
export type LogEvent = { kind: 'log'; file: string; line: string; at?: string };
export type EndEvent = { kind: 'end'; workflowStatus: string; outcome?: OutcomeLike };
export type WatchEvent = RunEvent | LogEvent | EndEvent;

/** The part of an outcome the CLI shows; `end` may carry the whole LandingOutcome. */
export type OutcomeLike = { status: string; summary: string } & Partial<Omit<LandingOutcomeView, 'status' | 'summary'>>;

export interface StepView {
  name: string;
  status: 'started' | 'done' | 'failed';
  detail?: string;
  startedAt?: string;
  endedAt?: string;
}

export interface SessionView {
  sessionId: string;
  role?: string;
  harnessModel?: string;
  attempt?: number;
  last: string;
}

export interface WatchState {
  runId: string;
  /** Time of the first journal event: the run's clock starts there. */
  startedAt?: string;
  /** Time of the latest journal event. */
  lastAt?: string;
  /** Highest journal number applied: a replayed event is recognised and skipped. */
  lastSeq: number;
  phase?: string;
  steps: StepView[];
  gates: Extract<RunEvent, { kind: 'gate' }>[];
  sessions: SessionView[];
  cache: Extract<RunEvent, { kind: 'cache' }>[];
  questions: { id: string; question: string; from?: string; why?: string; answer?: string }[];
  meters?: Meters;
  /** The last `logLimit` runner log lines, oldest first. */
  logs: LogEvent[];
  logLimit: number;
  outcome?: OutcomeLike;
  end?: EndEvent;
}

export function initialWatchState(runId: string, logLimit = 8): WatchState {
  return { runId, lastSeq: 0, steps: [], gates: [], sessions: [], cache: [], questions: [], logs: [], logLimit };
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const isString = (value: unknown): value is string => typeof value === 'string';
const optionalString = (value: unknown) => value === undefined || isString(value);

/** Each journal kind's required string fields: enough to render it without guessing. */
const requiredStrings: Record<RunEvent['kind'], string[]> = {
  phase: ['phase'],
  step: ['name', 'status'],
  gate: ['suiteId', 'status', 'treeSha'],
  session: ['sessionId', 'type'],
  cache: ['treeSha', 'cache'],
  meters: [],
  question: ['id', 'question'],
  budget: ['state', 'reason'],
  host: ['state', 'hostId', 'reason'],
  outcome: ['status', 'summary'],
  trimmed: ['reason'],
};

/**
 * Decodes one SSE message into a watch event; `undefined` for kinds this CLI does not
 * know (a newer server) or a body that does not have the fields the kind needs.
 */
export function decodeEvent(message: SseMessage): WatchEvent | undefined {
  let data: unknown;
  try {
    data = JSON.parse(message.data);
  } catch {
    return undefined;
  }
  if (!isObject(data)) return undefined;
  if (message.event === 'log') {
    if (!isString(data.file) || !isString(data.line) || !optionalString(data.at)) return undefined;
    return { kind: 'log', file: data.file, line: data.line, ...(isString(data.at) ? { at: data.at } : {}) };
  }
  if (message.event === 'end') {
    if (!isString(data.workflowStatus)) return undefined;
    const outcome = isObject(data.outcome) && isString(data.outcome.status) && isString(data.outcome.summary) ? (data.outcome as OutcomeLike) : undefined;
    return { kind: 'end', workflowStatus: data.workflowStatus, ...(outcome ? { outcome } : {}) };
  }
  const kind = message.event as RunEvent['kind'];
  if (!Object.hasOwn(requiredStrings, kind)) return undefined;
  if (typeof data.seq !== 'number' || !isString(data.at)) return undefined;
  if (!requiredStrings[kind].every((field) => isString(data[field]))) return undefined;
  if (kind === 'meters' && !isObject(data.meters)) return undefined;
  return { ...data, kind } as RunEvent;
}

/** True when the event is a journal event already applied (a replay after a reconnect). */
export function isReplay(state: WatchState, event: WatchEvent): boolean {
  return 'seq' in event && event.seq <= state.lastSeq;
}

/** Folds one event into the state (a new object; the old one is left as it was). */
export function applyEvent(state: WatchState, event: WatchEvent): WatchState {
  if (isReplay(state, event)) return state;
  const next: WatchState = { ...state };
  if ('seq' in event) {
    next.lastSeq = event.seq;
    next.startedAt ??= event.at;
    next.lastAt = event.at;
  }
  switch (event.kind) {
    case 'phase':
      next.phase = event.phase;
      break;
    case 'step': {
      const steps = [...state.steps];
      // A step is started once and ended once; the same name again (a retry, a later round) is a new row.
      let open = -1;
      steps.forEach((step, index) => {
        if (step.name === event.name && step.status === 'started') open = index;
      });
      if (event.status === 'started' || open === -1) {
        steps.push({
          name: event.name,
          status: event.status,
          ...(event.detail ? { detail: event.detail } : {}),
          startedAt: event.at,
          ...(event.status === 'started' ? {} : { endedAt: event.at }),
        });
      } else {
        steps[open] = { ...steps[open]!, status: event.status, ...(event.detail ? { detail: event.detail } : {}), endedAt: event.at };
      }
      next.steps = steps;
      break;
    }
    case 'gate':
      next.gates = [...state.gates, event];
      break;
    case 'session': {
      const index = state.sessions.findIndex((session) => session.sessionId === event.sessionId);
      const updated: SessionView = {
        ...state.sessions[index],
        sessionId: event.sessionId,
        last: event.type === 'classified' && event.class ? `classified ${event.class}` : event.type,
      };
      if (event.role) updated.role = event.role;
      if (event.harnessModel) updated.harnessModel = event.harnessModel;
      if (event.attempt !== undefined) updated.attempt = event.attempt;
      // A session keeps its row (first-seen order).
      next.sessions = index === -1 ? [...state.sessions, updated] : state.sessions.map((session, at) => (at === index ? updated : session));
      break;
    }
    case 'cache':
      next.cache = [...state.cache, event];
      break;
    case 'meters':
      next.meters = event.meters;
      break;
    case 'question': {
      const others = state.questions.filter((question) => question.id !== event.id);
      // A withdrawn question waits for nothing any more: it leaves the display.
      if (event.withdrawn) {
        next.questions = others;
        break;
      }
      next.questions = [
        ...others,
        {
          id: event.id,
          question: event.question,
          ...(event.from ? { from: event.from } : {}),
          ...(event.why ? { why: event.why } : {}),
          ...(event.answer !== undefined ? { answer: event.answer } : {}),
        },
      ];
      break;
    }
    case 'budget':
    case 'host':
    case 'trimmed':
      // Shown as a line; the display's state needs nothing more.
      break;
    case 'outcome':
      next.outcome = { ...state.outcome, status: event.status, summary: event.summary };
      break;
    case 'log':
      next.logs = [...state.logs, event].slice(-state.logLimit);
      break;
    case 'end':
      next.end = event;
      if (event.outcome) next.outcome = { ...state.outcome, ...event.outcome };
      break;
  }
  return next;
}
