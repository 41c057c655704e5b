/**
 * Live events of a run: the contract of `GET /v1/landings/:id/events` (Server-Sent Events)
 * and of the `events` query every landing answers. Pure data, imported by workflow code.
 *
 * Wire format (one SSE message per event):
 *   id: <cursor>          resume point; send it back as Last-Event-ID to continue after this event
 *   event: <kind>         the event's `kind` (RunEventBody below), or `log` (a runner log line) or `end` (stream closes)
 *   data: <JSON>          the event object below; for `log`: { file, line, at? }; for `end`: { workflowStatus, outcome? }
 * `end` carries no id: it is not a resume point (a client reconnecting after it gets `end` again).
 *
 * Journal events are recorded by the workflow itself, numbered 1, 2, 3… in its durable state,
 * so their numbers survive worker restarts and a resumed stream neither skips nor repeats one.
 */
import type { Meters } from './types';

/** What happened to an agent session, in the order it usually happens. */
export const SessionEventType = {
  spawned: 'spawned',
  reattached: 'reattached',
  firstTurn: 'first-turn',
  classified: 'classified',
  respawned: 'respawned',
  escalated: 'escalated',
  delivered: 'delivered',
  ended: 'ended',
} as const;
export type SessionEventType = (typeof SessionEventType)[keyof typeof SessionEventType];

export type RunEventBody =
  | { kind: 'phase'; /** A landing's phase (`LandingPhase`), or a fix loop's (discover, playbook, edit, repair, verify, answer). */ phase: string }
  | { kind: 'step'; name: string; status: 'started' | 'done' | 'failed'; detail?: string }
  | {
      kind: 'gate';
      suiteId: string;
      status: string;
      exitCode: number | null;
      treeSha: string;
      round: number;
      logRef: string;
      durationMs: number;
      /** `hit`: reused from the gate cache (no container ran); absent in runs recorded before the cache. */
      cache?: 'hit' | 'miss';
      /** A run that settles a red result (the round's own result has none): again on the same tree, or on the base (a `gate.settle` step follows). */
      evidence?: 'same-tree' | 'base';
    }
  | {
      kind: 'session';
      sessionId: string;
      type: SessionEventType;
      role?: string;
      attempt?: number;
      harnessModel?: string;
      /** The attempt's class (`delivered`, `crashed`, `oom`…) on `classified`. */
      class?: string;
      detail?: string;
    }
  | { kind: 'cache'; treeSha: string; cache: 'hit' | 'partial' | 'miss'; restored: string[] }
  | { kind: 'meters'; meters: Meters }
  | {
      kind: 'question';
      id: string;
      question: string;
      /** Who asked and why (Question). */
      from?: string;
      why?: string;
      answer?: string;
      /** The child that asked ended without this run's answer: nobody waits for it any more. */
      withdrawn?: boolean;
    }
  | { kind: 'budget'; state: 'paused' | 'extended' | 'stopped'; reason: string }
  /** The run's host was lost (no worker of it picked up a step in time): the run places itself on a live host. */
  | { kind: 'host'; state: 'lost'; hostId: string; reason: string }
  | { kind: 'outcome'; status: string; summary: string }
  /**
   * The journal is bounded: `dropped` older events, up to number `throughSeq`, are no longer
   * kept (this event takes the last one's number). Phases and the outcome are never dropped.
   */
  | { kind: 'trimmed'; dropped: number; throughSeq: number; reason: string };

/** One journal event: its number in the run, when it was recorded, and what happened. */
export type RunEvent = RunEventBody & { seq: number; at: string };

/**
 * An event reported to the run's journal from elsewhere (a child workflow or an activity).
 * `key` identifies it: a report delivered twice (a retried activity) is recorded once. A child's
 * question names its `owner`, the workflow that waits for the answer (workflows/questions.ts).
 */
export type ReportedRunEvent = (
  Extract<RunEventBody, { kind: 'session' } | { kind: 'cache' }> | (Extract<RunEventBody, { kind: 'question' }> & { owner: string })
) & { key: string };

/** Answer of the `events` query: journal events after `after` (at most `limit`), and the last number. */
export interface RunEventsPage {
  events: RunEvent[];
  lastSeq: number;
  /** True once the run has its outcome: no journal event will follow the last one. */
  finished: boolean;
  /**
   * The workflow continued as new: events up to `throughSeq` were recorded by an earlier run of
   * it (`runId`), which still answers `events` for them (its worker replays the closed run).
   */
  earlier?: { runId: string; throughSeq: number };
}

/** What a run hands to the run it continues as (continue-as-new): where the numbering goes on, and the report keys it saw. */
export interface JournalHandoff {
  /** The run that recorded events up to `lastSeq`. */
  runId: string;
  lastSeq: number;
  /** The newest report keys: a report retried across the continue-as-new is still recorded once. */
  keys: string[];
}
