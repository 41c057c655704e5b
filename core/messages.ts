import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { BatchMemberResult, BatchOutcome, BatchTicket } from './batch-types';
import type { ReportedRunEvent, RunEventsPage } from './events';
import type { NightlyStatusView } from './nightly-types';
import type { PanelVerdict } from './review-types';
import type { BudgetCommand, SessionStatusView } from './session-types';
import type { LandingStatusView } from './types';

/** Every signal, query and update of Tarmac's workflows is declared here. */
export const landingStatusQuery = defineQuery<LandingStatusView>('status');

/** Status of an agent session: state, attempt, decisions, meters, budget. */
export const sessionStatusQuery = defineQuery<SessionStatusView>('status');

/** Extends a paused run's budget, or stops it. Rejected (400) when the command is malformed. */
export const budgetUpdate = defineUpdate<{ accepted: true; budget: SessionStatusView['budget'] }, [BudgetCommand]>('budget');

/** Answers a run's pending question (a landing's, or a fix loop's); an empty text is a decision not to go on. */
export const answerUpdate = defineUpdate<{ accepted: true; questionId: string }, [{ questionId?: string; text: string }]>('answer');
/** A run → the child workflow that asked: the answer to its question, given to the run. */
export const answerSignal = defineSignal<[{ questionId: string; text: string }]>('answerQuestion');

/** Target queue: a landing asks to be admitted to merge. */
export const admissionRequestSignal = defineSignal<[{ landingId: string }]>('requestAdmission');
/**
 * Target queue: a landing asks to be admitted (update-with-start): `admitted: true` when the
 * target is free — its turn now, no signal follows; otherwise it waits for `admitted`.
 */
export const admitUpdate = defineUpdate<{ admitted: boolean; seq?: number }, [AdmitRequest]>('admit');
/** A batch → its member landing: landed in the batch, its culprit, or to go on alone (core/batch-types.ts). */
export const batchResultSignal = defineSignal<[BatchMemberResult]>('batchResult');
/** A speculative batch while it runs: what it does now, its members, the rounds gated and merges made so far, the results told. */
export const batchStatusQuery = defineQuery<BatchStatusView>('status');
export interface BatchStatusView {
  state: 'stacking' | 'gating' | 'merging' | 'done';
  members: string[];
  rounds: BatchOutcome['rounds'];
  merges: BatchOutcome['merges'];
  results: BatchOutcome['results'];
}
/** Target queue → its batch in flight: a member ended (cancelled, failed) and must not be merged. */
export const batchMemberGoneSignal = defineSignal<[{ landingId: string }]>('memberGone');
/** Target queue → landing: your turn to merge. */
export const admittedSignal = defineSignal<[{ queueId: string }]>('admitted');
/** Landing → target queue: done merging (or not merging after all). */
export const releaseSignal = defineSignal<[{ landingId: string }]>('release');
/** Target queue: who merges now and who waits. */
export const queueStatusQuery = defineQuery<QueueStatusView>('status');

/**
 * A landing asks the target queue for its turn. `lane`: its priority (higher first, default 0);
 * `seq`: the place the queue gave it on its first request (a landing coming back keeps it);
 * `batch`: set when it may be tested in a batch (its gate file's batch size and its verified head).
 */
export interface AdmitRequest {
  landingId: string;
  lane?: number;
  seq?: number;
  batch?: BatchTicket;
  /** Set by a batchable landing whose merge found the target moved: it waits for a batch (which restacks it), never let in alone. */
  moved?: boolean;
}

export interface QueueStatusView {
  current?: string;
  waiting: string[];
  admitted: number;
  /** The waiting line with lanes and places (queues that ran before lanes report `waiting` only). */
  tickets?: { landingId: string; lane: number; seq: number; batchable: boolean; batchSize?: number }[];
  /** The batch in flight: its workflow id and members. */
  batch?: { id: string; members: string[] };
  /** Batches run so far (this run of the queue and those before it). */
  batches?: number;
  /** When the turn in flight (a landing's hold, or a batch) began (ms since the epoch). */
  turnStartedAt?: number;
  /** How long recent turns took, newest last (the view's ETA). */
  recentTurnMs?: number[];
}

/** Status of a review panel: cache status, restored reviewers, who is still running. */
export const panelStatusQuery = defineQuery<{ state: string; cache?: string; restored: string[]; running: string[]; sealed: string[]; verdict?: PanelVerdict }>(
  'status',
);

/** Status of a fix loop: phase, route, repro exit code, attempts, outcome when done. */
export const fixLoopStatusQuery = defineQuery<Record<string, unknown>>('status');

/** The run's event journal after a given event number (the stream behind GET /v1/landings/:id/events). */
export const eventsQuery = defineQuery<RunEventsPage, [{ after?: number; limit?: number }]>('events');

/** A child workflow or an activity reports an event to the journal of the run it works for. */
export const runEventSignal = defineSignal<[ReportedRunEvent]>('runEvent');

/** Status of a nightly run: phase, gate results, fix loop, repair branch, landing, outcome when done. */
export const nightlyStatusQuery = defineQuery<NightlyStatusView>('status');
