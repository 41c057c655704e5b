import type { PassThrough } from 'node:stream';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { FastifyBaseLogger } from 'fastify';
import { formatCursor, type EventCursor } from '../../core/event-cursor';
import { FailureCode } from '../../core/failures';
import { readNewLogLines } from '../run-logs';
import type { RunEvent } from '../schemas';
import { EarlierRuns, readJournal } from './run-journal';

interface EventStreamOptions {
  client: Client;
  handle: WorkflowHandle;
  /** Where the stream resumes (journal number and log offsets); it advances with each event sent. */
  cursor: EventCursor;
  /** The run's log directory; undefined: no log lines. */
  logsDir: string | undefined;
  pollMs: number;
  keepAliveMs: number;
  log: FastifyBaseLogger;
}

/**
 * One open Server-Sent Events stream of a run: journal events and log lines, each with the cursor
 * that resumes right after it, until the run has ended and everything is sent (then `end`), the
 * client leaves, or the app closes the stream (`end()`).
 */
export class EventStream {
  private open = true;
  private wake: (() => void) | undefined;
  private cursor: EventCursor;
  /** The earlier runs of a workflow that continued as new, as this stream learns them. */
  private readonly earlierRuns = new EarlierRuns();

  constructor(
    private readonly raw: PassThrough,
    private readonly options: EventStreamOptions,
  ) {
    this.cursor = options.cursor;
  }

  /** Ends the stream (idempotent); the loop stops at its next step. */
  readonly end = (): void => {
    if (!this.open) return;
    this.open = false;
    this.wake?.();
    this.raw.end();
  };

  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private send(event: string, data: unknown): void {
    if (this.open) this.raw.write(`id: ${formatCursor(this.cursor)}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  /** Every complete log line written since the cursor, each as an event that advances it. */
  private async sendNewLogLines(): Promise<void> {
    if (this.options.logsDir === undefined) return;
    for (const line of await readNewLogLines(this.options.logsDir, this.cursor.logs)) {
      this.cursor = { ...this.cursor, logs: { ...this.cursor.logs, [line.file]: line.offsetAfter } };
      this.send('log', { file: line.file, line: line.line, ...(line.at ? { at: line.at } : {}) });
    }
  }

  /**
   * Sends until the end. A quiet run (a long gate, a paused budget) is asked less often: each idle
   * round doubles the wait up to 4× pollMs; any event brings it back. Each ask is a query the worker answers.
   */
  async run(): Promise<void> {
    const { client, handle, pollMs, keepAliveMs } = this.options;
    const keepAlive = setInterval(() => this.open && this.raw.write(': keep-alive\n\n'), keepAliveMs);
    let idleRounds = 0;
    try {
      while (this.open) {
        const before = this.cursor;
        const state = await readJournal(client, handle, this.cursor.journal, this.earlierRuns);
        for (const event of state.events) {
          this.cursor = { ...this.cursor, journal: event.seq };
          // The journal's events are what the wire contract says (api/schemas.ts RunEventSchema): a
          // change to core/events.ts the schema does not follow fails the build here.
          this.send(event.kind, event satisfies RunEvent);
        }
        await this.sendNewLogLines();
        if (state.more) continue;
        if (state.closed) {
          // Logs are complete once the run has ended: one last read so none is left behind.
          await this.sendNewLogLines();
          // No id: `end` is not a resume point (a client that reconnects after it gets `end` again).
          if (this.open)
            this.raw.write(
              `event: end\ndata: ${JSON.stringify({ workflowStatus: state.workflowStatus, ...(state.outcome ? { outcome: state.outcome } : {}) })}\n\n`,
            );
          break;
        }
        idleRounds = this.cursor === before ? idleRounds + 1 : 0;
        await this.pause(pollMs * 2 ** Math.min(idleRounds, 2));
      }
    } catch (error) {
      this.options.log.error({ err: error, runId: handle.workflowId }, 'event stream failed');
      if (this.open)
        this.raw.write(
          `event: error\ndata: ${JSON.stringify({ code: FailureCode.internal, message: 'the event stream failed; reconnect with Last-Event-ID' })}\n\n`,
        );
    } finally {
      clearInterval(keepAlive);
      this.end();
    }
  }
}
