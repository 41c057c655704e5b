/**
 * Server-Sent Events for `GET /v1/landings/:id/events`: a pure incremental parser
 * (the WHATWG event-stream grammar) and a reader that reconnects with
 * `Last-Event-ID`, so a dropped connection neither skips nor repeats an event.
 */
import { apiError, unreachable, type TarmacClient } from './client';
import { CliError } from './errors';

/** One dispatched message: `event:` (default `message`), joined `data:` lines, and the cursor after it. */
export interface SseMessage {
  event: string;
  data: string;
  /** The last event id as of this message (`id:` here or on an earlier message); '' if none yet. */
  id: string;
}

/**
 * Feed it text in chunks split anywhere (even between CR and LF); it returns the
 * messages completed by each chunk. Comments (`: keep-alive`) are skipped; `retry:`
 * is kept in `retryMs`. A message cut off by the end of the stream is never dispatched.
 */
export class SseParser {
  /** The cursor to resume from: advanced only when a whole message has arrived. */
  lastEventId = '';
  retryMs: number | undefined;
  private partial = '';
  private afterCr = false;
  private started = false;
  private idBuffer = '';
  private eventType = '';
  private dataLines: string[] | undefined;

  push(chunk: string): SseMessage[] {
    let text = chunk;
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.startsWith('\uFEFF')) text = text.slice(1);
    }
    // A CR ending the previous chunk already ended its line; an LF right after it belongs to it.
    if (this.afterCr && text.startsWith('\n')) text = text.slice(1);
    if (text.length > 0) this.afterCr = false;
    const messages: SseMessage[] = [];
    let start = 0;
    for (let index = 0; index < text.length; index += 1) {
      const char = text[index];
      if (char !== '\n' && char !== '\r') continue;
      const line = this.partial + text.slice(start, index);
      this.partial = '';
      if (char === '\r') {
        if (index + 1 < text.length) {
          if (text[index + 1] === '\n') index += 1;
        } else {
          this.afterCr = true;
        }
      }
      start = index + 1;
      const message = this.line(line);
      if (message) messages.push(message);
    }
    this.partial += text.slice(start);
    return messages;
  }

  private line(line: string): SseMessage | undefined {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.eventType = value;
        break;
      case 'data':
        (this.dataLines ??= []).push(value);
        break;
      case 'id':
        if (!value.includes('\0')) this.idBuffer = value;
        break;
      case 'retry':
        if (/^[0-9]+$/.test(value)) this.retryMs = Number(value);
        break;
      default:
        // Unknown fields are ignored, as the grammar says.
        break;
    }
    return undefined;
  }

  private dispatch(): SseMessage | undefined {
    this.lastEventId = this.idBuffer;
    const dataLines = this.dataLines;
    const event = this.eventType || 'message';
    this.dataLines = undefined;
    this.eventType = '';
    if (dataLines === undefined) return undefined;
    return { event, data: dataLines.join('\n'), id: this.lastEventId };
  }
}

interface StreamOptions {
  /** Resume after this cursor (sent as `Last-Event-ID`); default from the start. */
  lastEventId?: string;
  /** Called for every message, in order. Return `'stop'` to end the stream early. */
  onMessage(message: SseMessage): void | 'stop';
  /** Called before each reconnection attempt. */
  onReconnect?(attempt: number, lastEventId: string, reason: string): void;
  /** Consecutive failed connections before giving up; default 8. */
  maxRetries?: number;
  /** Delay before reconnection attempt n (1-based); default 250 ms doubling to 4 s, or the server's `retry:`. */
  backoffMs?: (attempt: number, serverRetryMs: number | undefined) => number;
}

const defaultBackoff = (attempt: number, serverRetryMs: number | undefined) => Math.min(4000, (serverRetryMs ?? 250) * 2 ** (attempt - 1));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Reads a run's event stream until its `end` message (or `onMessage` says stop).
 * A dropped connection, a stream that closes before `end`, or a 5xx answer is
 * retried with `Last-Event-ID` = the last whole message received; the retry count
 * resets whenever a message arrives. 4xx answers fail at once (wrong id, token).
 */
export async function streamRunEvents(client: TarmacClient, path: string, options: StreamOptions): Promise<void> {
  const maxRetries = options.maxRetries ?? 8;
  const backoff = options.backoffMs ?? defaultBackoff;
  let lastEventId = options.lastEventId ?? '';
  let serverRetryMs: number | undefined;
  let failures = 0;
  for (;;) {
    const reason = await readOnce();
    if (reason === undefined) return;
    failures += 1;
    if (failures > maxRetries) {
      throw new CliError(
        `the event stream ${client.url(path)} failed ${failures} times in a row (${reason})${lastEventId ? `; last event id ${lastEventId}` : ''}`,
      );
    }
    options.onReconnect?.(failures, lastEventId, reason);
    await sleep(backoff(failures, serverRetryMs));
  }

  /** One connection: `undefined` after `end`, else why it has to be retried. */
  async function readOnce(): Promise<string | undefined> {
    const abort = new AbortController();
    let response: Response;
    try {
      response = await fetch(client.url(path), {
        headers: client.headers({ accept: 'text/event-stream', ...(lastEventId ? { 'last-event-id': lastEventId } : {}) }),
        signal: abort.signal,
      });
    } catch (error) {
      const refused = unreachable(client.config.apiUrl, error);
      if (failures + 1 > maxRetries) throw refused;
      return refused.message;
    }
    if (!response.ok) {
      const error = await apiError(response, client.config);
      if (response.status < 500) throw error;
      return error.message;
    }
    if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      abort.abort();
      throw new CliError(`${client.url(path)} did not answer with an event stream (content-type ${response.headers.get('content-type') ?? 'none'})`);
    }
    const parser = new SseParser();
    const decoder = new TextDecoder();
    const reader = response.body!.getReader();
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (error) {
        return `connection dropped: ${error instanceof Error ? error.message : String(error)}`;
      }
      if (chunk.done) return 'the stream closed before its end event';
      for (const message of parser.push(decoder.decode(chunk.value as Uint8Array, { stream: true }))) {
        lastEventId = message.id || lastEventId;
        failures = 0;
        serverRetryMs = parser.retryMs ?? serverRetryMs;
        let verdict: void | 'stop';
        try {
          verdict = options.onMessage(message);
        } catch (error) {
          // The handler's errors are the caller's, not the connection's: close and propagate.
          abort.abort();
          throw error;
        }
        if (message.event === 'end' || verdict === 'stop') {
          abort.abort();
          return undefined;
        }
      }
    }
  }
}
