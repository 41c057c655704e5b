/**
 * A run's journal as its event stream reads it: pages of the `events` query, across the earlier
 * runs of a workflow that continued as new, and the run's end once every event is read.
 */
import { WorkflowNotFoundError } from '@temporalio/common';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { RunEvent } from '../../core/events';
import { eventsQuery } from '../../core/messages';

interface JournalState {
  events: RunEvent[];
  /** More journal events are waiting right now (the page was full). */
  more: boolean;
  /** The run has finished and every journal event has been read. */
  closed: boolean;
  workflowStatus: string;
  outcome?: RunOutcome;
}

/** What a run returns: a landing's outcome, a panel's verdict, a fix loop's outcome. */
type RunOutcome = Record<string, unknown>;

/**
 * The journal after `after`. While the run is open, a failed query (no worker right now)
 * is not the end: the stream waits and asks again. A closed run whose history no worker
 * can replay ends with its recorded result instead.
 */
export async function readJournal(client: Client, handle: WorkflowHandle, after: number, earlier: EarlierRuns): Promise<JournalState> {
  try {
    // Known to be in an earlier run of this workflow (it continued as new): straight to that run.
    if (earlier.latest && after < earlier.latest.throughSeq)
      return { events: await readEarlier(client, handle.workflowId, earlier.latest, after, earlier), more: true, closed: false, workflowStatus: 'RUNNING' };
    const page = await handle.query(eventsQuery, { after });
    if (page.earlier) earlier.latest = page.earlier;
    if (page.earlier && after < page.earlier.throughSeq)
      return { events: await readEarlier(client, handle.workflowId, page.earlier, after, earlier), more: true, closed: false, workflowStatus: 'RUNNING' };
    // Numbers have gaps where the journal was trimmed: more is waiting if the page stops short of the last.
    const more = page.events.length > 0 && page.events.at(-1)!.seq < page.lastSeq;
    if (!page.finished || more) return { events: page.events, more, closed: false, workflowStatus: 'RUNNING' };
    // The journal is complete when the outcome is recorded; the workflow closes a moment later.
    const workflowStatus = (await handle.describe()).status.name;
    const outcome = workflowStatus === 'RUNNING' || workflowStatus === 'COMPLETED' ? ((await handle.result()) as RunOutcome) : undefined;
    return {
      events: page.events,
      more: false,
      closed: true,
      workflowStatus: workflowStatus === 'RUNNING' ? 'COMPLETED' : workflowStatus,
      ...(outcome ? { outcome } : {}),
    };
  } catch (error) {
    const description = await handle.describe();
    if (description.status.name === 'RUNNING') return { events: [], more: false, closed: false, workflowStatus: 'RUNNING' };
    if (description.status.name === 'COMPLETED') {
      const outcome = (await handle.result()) as RunOutcome;
      return { events: [], more: false, closed: true, workflowStatus: 'COMPLETED', outcome };
    }
    if (['FAILED', 'TERMINATED', 'TIMED_OUT', 'CANCELLED'].includes(description.status.name)) {
      return { events: [], more: false, closed: true, workflowStatus: description.status.name };
    }
    throw error;
  }
}

/**
 * What one stream learned of a workflow's earlier runs (it continued as new): which run recorded
 * which journal numbers. A query on a closed run is a replay of its history on a worker, so each
 * page goes to the one run that holds it instead of walking down from the latest run every time.
 */
export class EarlierRuns {
  /** The latest run's pointer: numbers up to `throughSeq` are in earlier runs. */
  latest?: { runId: string; throughSeq: number };
  private readonly ranges: { runId: string; after: number; throughSeq: number }[] = [];

  /** A run known to hold the numbers just after `seq`. */
  holding(seq: number): { runId: string; throughSeq: number } | undefined {
    return this.ranges.find((range) => range.after <= seq && seq < range.throughSeq);
  }

  /** Run `runId` recorded the numbers after `after` up to `throughSeq`. */
  learn(runId: string, after: number, throughSeq: number): void {
    if (!this.ranges.some((range) => range.runId === runId)) this.ranges.push({ runId, after, throughSeq });
  }
}

/**
 * Events after `after` recorded by an earlier run of a workflow that continued as new: each
 * closed run answers `events` for its own (a worker replays it), and points at the run before it.
 * A run Temporal no longer has (past the namespace's retention) cannot answer: its numbers are
 * skipped with one `trimmed` event, so the stream goes on and numbers still only rise. Any other
 * failure is thrown: the stream waits and asks again.
 */
async function readEarlier(
  client: Client,
  workflowId: string,
  pointer: { runId: string; throughSeq: number },
  after: number,
  runs: EarlierRuns,
  depth = 0,
): Promise<RunEvent[]> {
  // A run this stream already read holds the numbers after the cursor: one query, no walk.
  const earlier = runs.holding(after) ?? pointer;
  try {
    const page = await client.workflow.getHandle(workflowId, earlier.runId).query(eventsQuery, { after });
    runs.learn(earlier.runId, page.earlier?.throughSeq ?? 0, earlier.throughSeq);
    if (page.earlier && after < page.earlier.throughSeq && depth < 1000) return await readEarlier(client, workflowId, page.earlier, after, runs, depth + 1);
    const events = page.events.filter((event) => event.seq <= earlier.throughSeq);
    if (events.length > 0) return events;
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
  }
  const dropped = earlier.throughSeq - after;
  return [
    {
      kind: 'trimmed',
      dropped,
      throughSeq: earlier.throughSeq,
      reason: `${dropped} event(s) up to #${earlier.throughSeq} were recorded by run ${earlier.runId} of this workflow, which can no longer be read`,
      seq: earlier.throughSeq,
      at: new Date().toISOString(),
    },
  ];
}
