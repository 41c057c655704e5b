import { PassThrough } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { WorkflowNotFoundError } from '@temporalio/common';
import { QueryNotRegisteredError } from '@temporalio/client';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { Config } from '../../core/node/config';
import { FailureCode } from '../../core/failures';
import { formatCursor, parseCursor, startCursor, type EventCursor } from '../../core/event-cursor';
import type { RunEvent } from '../../core/events';
import { eventsQuery } from '../../core/messages';
import { runPaths } from '../../activities/stores/run-store';
import { ApiError } from '../errors';
import { readNewLogLines } from '../run-logs';
import { ErrorSchema, LandingIdParams } from '../schemas';
import { StreamSlots } from '../stream-slots';

/**
 * One Server-Sent Event as a client parses it: before OpenAPI 3.2 the `schema` of a
 * text/event-stream response describes each event, not the stream as one string.
 */
const StreamEventSchema = Type.Object({
  event: Type.String({ description: 'phase, step, gate, session, cache, meters, question, outcome, log, end or error' }),
  data: Type.String({ description: 'the event as JSON' }),
  id: Type.Optional(Type.String({ description: 'cursor: send it back as Last-Event-ID to resume right after this event' })),
  retry: Type.Optional(Type.Integer({ description: 'reconnection delay in ms' })),
});

/** How long closing the app waits for the event streams' loops to finish the read each is in. */
const loopsCloseWaitMs = 3_000;

export interface EventRouteOptions {
  client: Client;
  config: Config;
  /** How often an open stream looks for new events; default 500 ms, backing off to 4× that while nothing happens. */
  pollMs?: number;
  /** Comment lines keep idle connections (and proxies) open; default every 15 s. */
  keepAliveMs?: number;
}

/**
 * GET /v1/landings/:id/events — Server-Sent Events: the landing's journal (phases,
 * steps, gates, sessions, cache, meters, questions, outcome) interleaved with its
 * runner log lines, each with an `id` that resumes exactly after it (Last-Event-ID).
 * The stream ends with an `end` event once the run has finished and everything is sent.
 */
export const eventRoutes: FastifyPluginAsyncTypebox<EventRouteOptions> = async (app, { client, config, pollMs = 500, keepAliveMs = 15_000 }) => {
  /** Open streams, so that closing the app ends them instead of waiting for clients to leave. */
  const streams = new Set<() => void>();
  /**
   * The streams' loops, still running: a loop ended by the close finishes the read it is in (a
   * query, maybe retried by the connection's retry interceptor a moment later) after its response
   * has ended. Closing the app waits for them (a few seconds at most), so that whoever closes the
   * Temporal connection next never leaves a retry behind to fire on a shut-down channel (it throws
   * outside any caller: an uncaught exception).
   */
  const loops = new Set<Promise<void>>();
  /** Streams open per bearer token, across both paths: at most `config.apiMaxStreamsPerToken`. */
  const slots = new StreamSlots(config.apiMaxStreamsPerToken);
  // preClose runs before the server stops accepting and waits for connections: end ours first.
  app.addHook('preClose', async () => {
    for (const end of [...streams]) end();
  });
  app.addHook('onClose', async () => {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...loops]), new Promise((resolve) => (timer = setTimeout(resolve, loopsCloseWaitMs)))]);
    clearTimeout(timer);
  });

  for (const { path, what } of [
    { path: '/landings/:id/events', what: 'a landing' },
    { path: '/runs/:id/events', what: 'a run (landing, standalone review panel or fix loop)' },
  ]) {
    app.get(
      path,
      {
        schema: {
          summary: `Live events of ${what} (Server-Sent Events), resumable with Last-Event-ID`,
          description:
            'Events: phase, step, gate, session, cache, meters, question, outcome (journal events, JSON in `data`), `log` ({file, line, at}) and a final `end` ({workflowStatus, outcome}). ' +
            'Each event id is a cursor; reconnect with the header Last-Event-ID (or the query parameter `after`) set to the last id received to continue with no gap and no repeat. ' +
            'The journal is bounded: past its cap, older step, meters, session and cache events are replaced by one `trimmed` event ({dropped, throughSeq, reason}); numbers still only rise. ' +
            'A long run continues as new (a fresh Temporal history) with its numbering going on: the stream reads the earlier runs\' events from them, one stream, no gap. ' +
            'One bearer token may hold at most TARMAC_API_MAX_STREAMS_PER_TOKEN (default 8) streams open at once; one more is refused with 429 TARMAC_RATE_LIMITED.',
          params: LandingIdParams,
          querystring: Type.Object({
            after: Type.Optional(Type.String({ minLength: 1, maxLength: 8192, description: 'Resume after this event id (same as Last-Event-ID; the header wins).' })),
            logs: Type.Optional(Type.Boolean({ default: true, description: 'Include runner log lines.' })),
          }),
          headers: Type.Object({ 'last-event-id': Type.Optional(Type.String({ maxLength: 8192 })) }),
          // Only the stream itself is text/event-stream: errors are answered before it opens, as JSON.
          response: {
            200: { description: 'the event stream', content: { 'text/event-stream': { schema: StreamEventSchema } } },
            400: ErrorSchema,
            401: ErrorSchema,
            404: ErrorSchema,
            // Too many streams open with this token right now.
            429: ErrorSchema,
            // A long Last-Event-ID together with a long `after` can exceed Node's 16 KiB request head.
            431: ErrorSchema,
            500: ErrorSchema,
          },
        },
      },
      async (request, reply) => {
        const release = slots.take(StreamSlots.keyOf(request.headers.authorization));
        if (!release) {
          throw new ApiError(FailureCode.rateLimited, `too many open event streams for this token: at most ${slots.maxPerToken} at once; close one and retry`, {
            maxStreamsPerToken: slots.maxPerToken,
          });
        }
        // The slot is held until the response is over: the stream ended (either side), or an
        // error was answered before it opened. A response emits 'close' once, in every case.
        reply.raw.once('close', release);
        const resumeFrom = request.headers['last-event-id'] ?? request.query.after;
        let cursor: EventCursor = startCursor();
        if (resumeFrom !== undefined) {
          const parsed = parseCursor(resumeFrom);
          const field = request.headers['last-event-id'] !== undefined ? 'Last-Event-ID' : 'after';
          if (!parsed) throw new ApiError(FailureCode.validation, `${field} is not an event id of this stream`, { field });
          cursor = parsed;
        }
        const handle = client.workflow.getHandle(request.params.id);
        let running: boolean;
        try {
          running = (await handle.describe()).status.name === 'RUNNING';
        } catch (error) {
          if (error instanceof WorkflowNotFoundError) throw new ApiError(FailureCode.notFound, `no ${path.startsWith('/landings') ? 'landing' : 'run'} ${request.params.id}`);
          throw error;
        }
        // Sessions, nightlies and queues keep no journal: say so before the stream opens.
        if (running) {
          try {
            await handle.query(eventsQuery, { after: cursor.journal, limit: 1 });
          } catch (error) {
            if (error instanceof QueryNotRegisteredError) throw new ApiError(FailureCode.notFound, `run ${request.params.id} has no event stream (only landings, review panels and fix loops do); GET /v1/runs/${request.params.id} shows its status`);
            throw error;
          }
        }

        // The stream goes out through Fastify's reply (not a hijacked socket), so the headers of
        // hooks and plugins (CORS, request ids) reach it like any other response.
        const raw = new PassThrough();
        void reply
          .status(200)
          .headers({ 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', 'x-accel-buffering': 'no' })
          // The 200 schema describes each event, not the stream the reply sends.
          .send(raw as never);
        raw.write(`retry: 2000\n\n`);

        let open = true;
        let wake: (() => void) | undefined;
        const end = () => {
          if (!open) return;
          open = false;
          streams.delete(end);
          wake?.();
          raw.end();
        };
        streams.add(end);
        request.raw.on('close', end);
        const keepAlive = setInterval(() => open && raw.write(': keep-alive\n\n'), keepAliveMs);
        const pause = (ms: number) =>
          new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, ms);
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
        const send = (event: string, data: unknown) => {
          if (open) raw.write(`id: ${formatCursor(cursor)}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
        };

        const logsDir = runPaths(config.dataDir, request.params.id).logs;
        /** The earlier runs of a workflow that continued as new, as this stream learns them. */
        const earlierRuns = new EarlierRuns();
        const withLogs = request.query.logs !== false;
        /** Every complete log line written since the cursor, each as an event that advances it. */
        const sendNewLogLines = async () => {
          if (!withLogs) return;
          for (const line of await readNewLogLines(logsDir, cursor.logs)) {
            cursor = { ...cursor, logs: { ...cursor.logs, [line.file]: line.offsetAfter } };
            send('log', { file: line.file, line: line.line, ...(line.at ? { at: line.at } : {}) });
          }
        };
        // A quiet run (a long gate, a paused budget) is asked less often: each idle round doubles
        // the wait up to 4× pollMs; any event brings it back. Each ask is a query the worker answers.
        let idleRounds = 0;
        let loopDone: () => void = () => undefined;
        const loop = new Promise<void>((resolve) => (loopDone = resolve));
        loops.add(loop);
        try {
          while (open) {
            const before = cursor;
            const state = await readJournal(client, handle, cursor.journal, earlierRuns);
            for (const event of state.events) {
              cursor = { ...cursor, journal: event.seq };
              send(event.kind, event);
            }
            await sendNewLogLines();
            if (state.more) continue;
            if (state.closed) {
              // Logs are complete once the run has ended: one last read so none is left behind.
              await sendNewLogLines();
              // No id: `end` is not a resume point (a client that reconnects after it gets `end` again).
              if (open) raw.write(`event: end\ndata: ${JSON.stringify({ workflowStatus: state.workflowStatus, ...(state.outcome ? { outcome: state.outcome } : {}) })}\n\n`);
              break;
            }
            idleRounds = cursor === before ? idleRounds + 1 : 0;
            await pause(pollMs * 2 ** Math.min(idleRounds, 2));
          }
        } catch (error) {
          request.log.error({ err: error, runId: request.params.id }, 'event stream failed');
          if (open) raw.write(`event: error\ndata: ${JSON.stringify({ code: FailureCode.internal, message: 'the event stream failed; reconnect with Last-Event-ID' })}\n\n`);
        } finally {
          clearInterval(keepAlive);
          end();
          loops.delete(loop);
          loopDone();
        }
      },
    );
  }
};

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
async function readJournal(client: Client, handle: WorkflowHandle, after: number, earlier: EarlierRuns): Promise<JournalState> {
  try {
    // Known to be in an earlier run of this workflow (it continued as new): straight to that run.
    if (earlier.latest && after < earlier.latest.throughSeq) return { events: await readEarlier(client, handle.workflowId, earlier.latest, after, earlier), more: true, closed: false, workflowStatus: 'RUNNING' };
    const page = await handle.query(eventsQuery, { after });
    if (page.earlier) earlier.latest = page.earlier;
    if (page.earlier && after < page.earlier.throughSeq) return { events: await readEarlier(client, handle.workflowId, page.earlier, after, earlier), more: true, closed: false, workflowStatus: 'RUNNING' };
    // Numbers have gaps where the journal was trimmed: more is waiting if the page stops short of the last.
    const more = page.events.length > 0 && page.events.at(-1)!.seq < page.lastSeq;
    if (!page.finished || more) return { events: page.events, more, closed: false, workflowStatus: 'RUNNING' };
    // The journal is complete when the outcome is recorded; the workflow closes a moment later.
    const workflowStatus = (await handle.describe()).status.name;
    const outcome = workflowStatus === 'RUNNING' || workflowStatus === 'COMPLETED' ? ((await handle.result()) as RunOutcome) : undefined;
    return { events: page.events, more: false, closed: true, workflowStatus: workflowStatus === 'RUNNING' ? 'COMPLETED' : workflowStatus, ...(outcome ? { outcome } : {}) };
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
class EarlierRuns {
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
async function readEarlier(client: Client, workflowId: string, pointer: { runId: string; throughSeq: number }, after: number, runs: EarlierRuns, depth = 0): Promise<RunEvent[]> {
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
  return [{ kind: 'trimmed', dropped, throughSeq: earlier.throughSeq, reason: `${dropped} event(s) up to #${earlier.throughSeq} were recorded by run ${earlier.runId} of this workflow, which can no longer be read`, seq: earlier.throughSeq, at: new Date().toISOString() }];
}
