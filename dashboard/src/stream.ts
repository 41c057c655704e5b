/**
 * Follows a run's event stream (GET /v1/runs/:id/events) with fetch() and a stream reader, so
 * the bearer token goes in the Authorization header (EventSource cannot send one, and a token
 * never goes in a URL). When the connection drops, it reconnects after the stream's `retry`
 * delay with Last-Event-ID set to the last id it received: the stream continues right after
 * it, no gap and no repeat. It stops at the stream's `end` event, on a refusal (4xx), or when
 * closed.
 */
import { SseParser, type SseMessage } from './sse';

export type StreamState = 'connecting' | 'live' | 'reconnecting' | 'ended' | 'closed' | 'failed';

interface StreamHandlers {
  message(message: SseMessage): void;
  state(state: StreamState, detail?: string): void;
}

export function followEvents(path: string, bearer: string, handlers: StreamHandlers): { close(): void; reconnects(): number } {
  const abort = new AbortController();
  let lastEventId: string | undefined;
  let retryMs = 2000;
  let reconnects = 0;
  let finished = false;

  const connectOnce = async (): Promise<'end' | 'dropped' | 'refused'> => {
    const response = await fetch(path, {
      headers: { accept: 'text/event-stream', authorization: `Bearer ${bearer}`, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
      cache: 'no-store',
      credentials: 'omit',
      signal: abort.signal,
    });
    if (!response.ok || !response.body) {
      let message = `HTTP ${response.status}`;
      try {
        message = ((await response.json()) as { error?: { message?: string } }).error?.message ?? message;
      } catch {
        // not JSON: the status says enough
      }
      // 429 (too many streams) and 5xx are worth another try; any other refusal is final.
      if (response.status === 429 || response.status >= 500) {
        handlers.state('reconnecting', message);
        return 'dropped';
      }
      handlers.state(response.status === 401 ? 'closed' : 'failed', message);
      return 'refused';
    }
    handlers.state('live');
    const parser = new SseParser();
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return 'dropped';
      for (const message of parser.feed(value)) {
        if (message.id !== undefined) lastEventId = message.id;
        handlers.message(message);
        if (message.event === 'end') {
          await reader.cancel().catch(() => undefined);
          return 'end';
        }
      }
      if (parser.retryMs !== undefined) retryMs = parser.retryMs;
    }
  };

  const run = async () => {
    handlers.state('connecting');
    while (!finished) {
      let result: 'end' | 'dropped' | 'refused';
      try {
        result = await connectOnce();
      } catch {
        if (abort.signal.aborted) return;
        result = 'dropped';
      }
      if (result === 'end') {
        finished = true;
        handlers.state('ended');
        return;
      }
      if (result === 'refused') return;
      if (abort.signal.aborted) return;
      reconnects += 1;
      handlers.state('reconnecting', lastEventId ? `resuming after event ${lastEventId.slice(0, 24)}` : 'starting over');
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  };
  void run();
  return {
    close() {
      finished = true;
      abort.abort();
    },
    reconnects: () => reconnects,
  };
}
