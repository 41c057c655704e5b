import { PassThrough } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { QueryNotRegisteredError } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import type { Config } from '../../core/node/config';
import { FailureCode } from '../../core/failures';
import { parseCursor, startCursor, type EventCursor } from '../../core/event-cursor';
import { eventsQuery } from '../../core/messages';
import { runPaths } from '../../activities/stores/run-store';
import { ApiError, NotFound } from '../errors';
import { ErrorSchema, LandingIdParams } from '../schemas';
import { EventStream } from '../services/event-stream';
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

interface EventRouteOptions {
  client: Client;
  config: Config;
  /** How often an open stream looks for new events; default 500 ms, backing off to 4× that while nothing happens. */
  pollMs?: number;
  /** Comment lines keep idle connections (and proxies) open; default every 15 s. */
  keepAliveMs?: number;
}

const streamSchema = (what: string) => ({
  summary: `Live events of ${what} (Server-Sent Events), resumable with Last-Event-ID`,
  description:
    'Events: phase, step, gate, session, cache, meters, question, outcome (journal events, JSON in `data`), `log` ({file, line, at}) and a final `end` ({workflowStatus, outcome}). ' +
    'Each event id is a cursor; reconnect with the header Last-Event-ID (or the query parameter `after`) set to the last id received to continue with no gap and no repeat. ' +
    'The journal is bounded: past its cap, older step, meters, session and cache events are replaced by one `trimmed` event ({dropped, throughSeq, reason}); numbers still only rise. ' +
    "A long run continues as new (a fresh Temporal history) with its numbering going on: the stream reads the earlier runs' events from them, one stream, no gap. " +
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
});

/** Where a stream resumes: the header Last-Event-ID (it wins) or the query's `after`; the start without either. */
function resumeCursor(lastEventId: string | undefined, after: string | undefined): EventCursor {
  const resumeFrom = lastEventId ?? after;
  if (resumeFrom === undefined) return startCursor();
  const parsed = parseCursor(resumeFrom);
  const field = lastEventId !== undefined ? 'Last-Event-ID' : 'after';
  if (!parsed) throw new ApiError(FailureCode.validation, `${field} is not an event id of this stream`, { field });
  return parsed;
}

/**
 * GET /v1/landings/:id/events — Server-Sent Events: the landing's journal (phases,
 * steps, gates, sessions, cache, meters, questions, outcome) interleaved with its
 * runner log lines, each with an `id` that resumes exactly after it (Last-Event-ID).
 * The stream ends with an `end` event once the run has finished and everything is sent.
 */
export const eventRoutes: FastifyPluginAsyncTypebox<EventRouteOptions> = async (app, { client, config, pollMs = 500, keepAliveMs = 15_000 }) => {
  /** Open streams, so that closing the app ends them instead of waiting for clients to leave. */
  const streams = new Set<EventStream>();
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
    for (const stream of [...streams]) stream.end();
  });
  app.addHook('onClose', async () => {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...loops]), new Promise((resolve) => (timer = setTimeout(resolve, loopsCloseWaitMs)))]);
    clearTimeout(timer);
  });

  for (const { path, what, names } of [
    { path: '/landings/:id/events', what: 'a landing', names: 'landing' },
    { path: '/runs/:id/events', what: 'a run (landing, standalone review panel or fix loop)', names: 'run' },
  ]) {
    app.get(path, { schema: streamSchema(what), config: { names } }, async function followEvents(request, reply) {
      const release = slots.take(StreamSlots.keyOf(request.headers.authorization));
      if (!release) {
        throw new ApiError(FailureCode.rateLimited, `too many open event streams for this token: at most ${slots.maxPerToken} at once; close one and retry`, {
          maxStreamsPerToken: slots.maxPerToken,
        });
      }
      // The slot is held until the response is over: the stream ended (either side), or an
      // error was answered before it opened. A response emits 'close' once, in every case.
      reply.raw.once('close', release);
      const cursor = resumeCursor(request.headers['last-event-id'], request.query.after);
      const handle = client.workflow.getHandle(request.params.id);
      // Sessions, nightlies and queues keep no journal: say so before the stream opens.
      if ((await handle.describe()).status.name === 'RUNNING') {
        try {
          await handle.query(eventsQuery, { after: cursor.journal, limit: 1 });
        } catch (error) {
          if (error instanceof QueryNotRegisteredError)
            throw new NotFound(
              `run ${request.params.id} has no event stream (only landings, review panels and fix loops do); GET /v1/runs/${request.params.id} shows its status`,
            );
          throw error;
        }
      }

      // The stream goes out through Fastify's reply (not a hijacked socket), so the headers of
      // hooks and plugins (CORS, request ids) reach it like any other response.
      const raw = new PassThrough();
      void reply
        .status(200)
        .headers({
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache, no-transform',
          connection: 'keep-alive',
          'x-accel-buffering': 'no',
        })
        // The 200 schema describes each event, not the stream the reply sends.
        .send(raw as never);
      raw.write(`retry: 2000\n\n`);
      const logsDir = request.query.logs !== false ? runPaths(config.dataDir, request.params.id).logs : undefined;
      const stream = new EventStream(raw, { client, handle, cursor, logsDir, pollMs, keepAliveMs, log: request.log });
      streams.add(stream);
      request.raw.on('close', stream.end);
      const loop = stream.run();
      loops.add(loop);
      try {
        await loop;
      } finally {
        streams.delete(stream);
        loops.delete(loop);
      }
    });
  }
};
