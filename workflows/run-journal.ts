import type { JournalHandoff, RunEvent, RunEventBody, RunEventsPage } from '../core/events';

/** Most events one `events` query answer carries; a client asks again for the rest. */
const maxEventsPerPage = 500;

interface JournalLimits {
  /** Most events kept; past it the journal is trimmed. Default 2000. */
  maxEvents?: number;
  /** The newest events a trim always keeps, whatever their kind. Default half of `maxEvents`. */
  keepNewest?: number;
  /** Most report keys remembered to drop a retried report. Default 4096. */
  maxKeys?: number;
}

/** Events a trim drops first among the old ones: progress detail, summarised by a `trimmed` event. */
const detailKinds: ReadonlySet<RunEvent['kind']> = new Set(['step', 'meters', 'session', 'cache', 'trimmed']);
/** Events a trim never drops: where the run went and how it ended. */
const landmarkKinds: ReadonlySet<RunEvent['kind']> = new Set(['phase', 'outcome']);

/**
 * The run's event journal: numbered events kept in workflow state. Numbers come from
 * a counter in workflow state, which is rebuilt by replay, so event 17 is the same
 * event after any number of worker restarts; that is what makes a resumed stream exact.
 * Reported events (from child workflows and activities) carry a key; a key seen before
 * is ignored, so a retried report does not appear twice.
 *
 * The journal is bounded (a run that loops, or reports without end, must not grow the
 * workflow's memory and its query answers without end): past `maxEvents` the oldest
 * detail events (steps, meters, sessions, cache) are dropped, then if need be other old
 * events, but never phases, the outcome or the newest `keepNewest`. The dropped events
 * are replaced by one `trimmed` event that says how many went, numbered with the last
 * dropped number: a client that had read past it got the originals, a client that had
 * not gets the summary in their place, and numbers never repeat or go back.
 */
export class RunJournal {
  private events: RunEvent[] = [];
  private readonly keys = new Set<string>();
  private recorded = 0;
  private readonly maxEvents: number;
  private readonly keepNewest: number;
  private readonly maxKeys: number;
  finished = false;

  /** Where the events before this run's first are (a workflow that continued as new). */
  private readonly earlier?: { runId: string; throughSeq: number };

  constructor(limits: JournalLimits = {}, continues?: JournalHandoff) {
    this.maxEvents = Math.max(2, limits.maxEvents ?? 2000);
    this.keepNewest = Math.min(this.maxEvents - 1, Math.max(1, limits.keepNewest ?? Math.floor(this.maxEvents / 2)));
    this.maxKeys = limits.maxKeys ?? 4096;
    if (continues) {
      // Numbers go on from the run before: a cursor stays exact across continue-as-new.
      this.recorded = continues.lastSeq;
      this.earlier = { runId: continues.runId, throughSeq: continues.lastSeq };
      for (const key of continues.keys) this.keys.add(key);
    }
  }

  /**
   * What the next run of this workflow needs to go on with the numbering (continue-as-new): the
   * events themselves stay with this run, which answers `events` for them once it is closed.
   */
  handoff(runId: string, maxKeys = 512): JournalHandoff {
    return { runId, lastSeq: this.recorded, keys: [...this.keys].slice(-maxKeys) };
  }

  record(body: RunEventBody, key?: string): void {
    if (key !== undefined) {
      if (this.keys.has(key)) return;
      this.keys.add(key);
      // The oldest key goes first (a Set iterates in insertion order): only a very late retry could repeat.
      if (this.keys.size > this.maxKeys) this.keys.delete(this.keys.values().next().value!);
    }
    this.recorded += 1;
    this.events.push({ ...body, seq: this.recorded, at: new Date().toISOString() });
    if (this.events.length > this.maxEvents) this.trim();
  }

  get lastSeq(): number {
    return this.recorded;
  }

  /** Events kept right now (at most `maxEvents`). */
  get size(): number {
    return this.events.length;
  }

  page(after = 0, limit = maxEventsPerPage): RunEventsPage {
    const start = this.firstAfter(Math.max(0, Math.floor(after)));
    const size = Math.min(Math.max(1, Math.floor(limit)), maxEventsPerPage);
    return {
      events: this.events.slice(start, start + size),
      lastSeq: this.recorded,
      finished: this.finished,
      ...(this.earlier ? { earlier: { ...this.earlier } } : {}),
    };
  }

  /** Index of the first kept event numbered above `seq` (numbers rise along the array; gaps where events were trimmed). */
  private firstAfter(seq: number): number {
    let low = 0;
    let high = this.events.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (this.events[middle]!.seq <= seq) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  private trim(): void {
    const old = this.events.length - this.keepNewest;
    const drop = new Set<number>();
    // Detail first: every old step, meters, session and cache event (at once, so trims are rare).
    for (let index = 0; index < old; index += 1) if (detailKinds.has(this.events[index]!.kind)) drop.add(index);
    // Not enough (the old part is mostly other events): every old event but phases and the outcome.
    if (this.events.length - drop.size + 1 > this.maxEvents) {
      for (let index = 0; index < old; index += 1) if (!landmarkKinds.has(this.events[index]!.kind)) drop.add(index);
    }
    if (drop.size === 0) return;
    const earlier = [...drop].map((index) => this.events[index]!).filter((event): event is Extract<RunEvent, { kind: 'trimmed' }> => event.kind === 'trimmed');
    const count = drop.size - earlier.length + earlier.reduce((sum, event) => sum + event.dropped, 0);
    const last = Math.max(...drop);
    const throughSeq = this.events[last]!.seq;
    const summary: RunEvent = {
      kind: 'trimmed',
      dropped: count,
      throughSeq,
      reason: `the journal keeps at most ${this.maxEvents} events: ${count} event(s) up to #${throughSeq} were dropped (steps, meters, sessions and cache first; phases and the outcome are kept)`,
      seq: throughSeq,
      at: new Date().toISOString(),
    };
    this.events = this.events.flatMap((event, index) => (index === last ? [summary] : drop.has(index) ? [] : [event]));
  }
}
