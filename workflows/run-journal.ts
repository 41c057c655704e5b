import type { RunEvent, RunEventBody, RunEventsPage } from '../core/events';

/** Most events one `events` query answer carries; a client asks again for the rest. */
export const maxEventsPerPage = 500;

/**
 * The run's event journal: numbered events kept in workflow state. Numbers come from
 * the journal's length, and workflow state is rebuilt by replay, so event 17 is the same
 * event after any number of worker restarts; that is what makes a resumed stream exact.
 * Reported events (from child workflows and activities) carry a key; a key seen before
 * is ignored, so a retried report does not appear twice.
 */
export class RunJournal {
  private readonly events: RunEvent[] = [];
  private readonly keys = new Set<string>();
  finished = false;

  record(body: RunEventBody, key?: string): void {
    if (key !== undefined) {
      if (this.keys.has(key)) return;
      this.keys.add(key);
    }
    this.events.push({ ...body, seq: this.events.length + 1, at: new Date().toISOString() });
  }

  get lastSeq(): number {
    return this.events.length;
  }

  page(after = 0, limit = maxEventsPerPage): RunEventsPage {
    const start = Math.max(0, Math.floor(after));
    const size = Math.min(Math.max(1, Math.floor(limit)), maxEventsPerPage);
    return { events: this.events.slice(start, start + size), lastSeq: this.events.length, finished: this.finished };
  }
}
