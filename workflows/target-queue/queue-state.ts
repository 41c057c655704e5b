import { getExternalWorkflowHandle, setHandler, workflowInfo } from '@temporalio/workflow';
import type { QueueTicket } from '../../core/batch-types';
import { admissionRequestSignal, admitUpdate, batchMemberGoneSignal, queueStatusQuery, releaseSignal, type AdmitRequest } from '../../core/messages';
import { ticketPosition } from '../../policies/batch';

export interface TargetQueueState {
  /** Landing ids in line order (what queues before lanes carried; kept for their continue-as-new). */
  waiting: string[];
  admitted: number;
  /** The line with lanes, places and batch tickets (absent in a queue started before lanes). */
  tickets?: QueueTicket[];
  /** The next arrival's place. */
  seq?: number;
  batches?: number;
  /** How long the last turns took (a landing's hold, or a whole batch), newest last: the view's ETA. */
  recentTurnMs?: number[];
}

/** Turns whose duration the queue keeps for its ETA. */
const recentTurns = 20;

/** Admissions per run before the queue continues as new (keeps history small). */
const admissionsPerRun = 200;

/** A speculative batch in flight: its workflow id and its members' landing ids. */
export interface RunningBatch {
  id: string;
  members: string[];
}

/**
 * A target queue's state: the line (by lane, then by place), who holds the target (a landing, or
 * a batch), the admissions of this run, and the recent turns' durations (the view's ETA). It
 * answers the queue's messages (`admit`, `admissionRequest`, `release`, `status`); the workflow
 * (target-queue.ts) only takes turns.
 */
export class QueueState {
  readonly line: QueueTicket[];
  seq: number;
  /** Admissions in this run (the carried count is `carried.admitted`). */
  admitted = 0;
  batches: number;
  /** The landing that holds the target. */
  current: string | undefined;
  batch: RunningBatch | undefined;
  readonly recent: number[];
  turnStartedAt: number | undefined;
  readonly released = new Set<string>();
  /** Set when the `admit` update handed the free target over directly (the loop then only waits for its release). */
  handedOver = false;

  constructor(private readonly carried: TargetQueueState) {
    this.line = carried.tickets ? [...carried.tickets] : carried.waiting.map((landingId, index) => ({ landingId, lane: 0, seq: index }));
    this.seq = carried.seq ?? this.line.length;
    this.batches = carried.batches ?? 0;
    this.recent = [...(carried.recentTurnMs ?? [])];
  }

  /** This run has admitted its share, or the server suggests a new run: continue as new once the target is free. */
  closing(): boolean {
    return this.admitted >= admissionsPerRun || workflowInfo().continueAsNewSuggested;
  }

  /** Something for the loop to do: a handed-over holder, a line, or a run to close. */
  hasWork(): boolean {
    return this.handedOver || this.line.length > 0 || (this.admitted >= admissionsPerRun && this.line.length === 0) || workflowInfo().continueAsNewSuggested;
  }

  waitingIds(): string[] {
    return this.line.map((ticket) => ticket.landingId);
  }

  /** What the next run takes on (continue-as-new). */
  carry(): TargetQueueState {
    return {
      waiting: this.waitingIds(),
      admitted: this.carried.admitted + this.admitted,
      tickets: this.line,
      seq: this.seq,
      batches: this.batches,
      recentTurnMs: this.recent,
    };
  }

  /** A turn ended: its duration joins the recent ones. */
  turnDone(): void {
    if (this.turnStartedAt !== undefined) this.recent.push(Date.now() - this.turnStartedAt);
    if (this.recent.length > recentTurns) this.recent.splice(0, this.recent.length - recentTurns);
    this.turnStartedAt = undefined;
  }

  /** Puts a landing in line (by lane, then place); one already there keeps its place. */
  enqueue({ landingId, lane, seq: place, batch: batchTicket }: AdmitRequest): number {
    const known = this.line.find((ticket) => ticket.landingId === landingId);
    if (known) return known.seq;
    const ticket: QueueTicket = { landingId, lane: lane ?? 0, seq: place ?? this.seq++, ...(batchTicket ? { batch: batchTicket } : {}) };
    if (landingId !== this.current || this.released.has(landingId)) this.line.splice(ticketPosition(this.line, ticket), 0, ticket);
    return ticket.seq;
  }

  /** The `admit` update: the free target at once when nobody waits, else a place in line. */
  admit(request: AdmitRequest): { admitted: boolean; seq?: number } {
    const { landingId } = request;
    // The holder asks again after giving the target back (its merge found the target moved): it queues.
    if (landingId === this.current && !this.released.has(landingId)) return { admitted: true };
    if (!request.moved && this.current === undefined && this.batch === undefined && this.line.length === 0 && !this.closing()) {
      this.current = landingId;
      this.handedOver = true;
      this.turnStartedAt = Date.now();
      this.released.delete(landingId);
      return { admitted: true, seq: request.seq ?? this.seq++ };
    }
    return { admitted: false, seq: this.enqueue(request) };
  }

  /** The `release` signal: the landing is done with the target, or leaves the line. */
  release(landingId: string): void {
    this.released.add(landingId);
    // A member of the batch in flight that ends (cancelled, failed) must not be merged by it.
    if (this.batch?.members.includes(landingId)) {
      void getExternalWorkflowHandle(this.batch.id)
        .signal(batchMemberGoneSignal, { landingId })
        .catch(() => undefined);
    }
    const index = this.line.findIndex((ticket) => ticket.landingId === landingId);
    if (index >= 0) this.line.splice(index, 1);
  }

  view() {
    const { current, batch, turnStartedAt } = this;
    return {
      ...(current ? { current } : {}),
      waiting: this.waitingIds(),
      admitted: this.carried.admitted + this.admitted,
      tickets: this.line.map(({ landingId, lane, seq: place, batch: ticket }) => ({
        landingId,
        lane,
        seq: place,
        batchable: ticket !== undefined,
        ...(ticket ? { batchSize: ticket.size } : {}),
      })),
      ...(batch ? { batch: { ...batch, members: [...batch.members] } } : {}),
      batches: this.batches,
      ...(turnStartedAt !== undefined ? { turnStartedAt } : {}),
      recentTurnMs: [...this.recent],
    };
  }

  /** Answers the queue's messages from this state. */
  install(): void {
    setHandler(admissionRequestSignal, ({ landingId }) => void this.enqueue({ landingId }));
    setHandler(admitUpdate, (request) => this.admit(request));
    setHandler(releaseSignal, ({ landingId }) => this.release(landingId));
    setHandler(queueStatusQuery, () => this.view());
  }
}
