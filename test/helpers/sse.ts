/** One Server-Sent Event as the test reads it off the wire. */
export interface WireEvent {
  id?: string;
  event: string;
  data: any;
}

/**
 * Reads an SSE response until `stop(event)` says so (or the stream ends), then aborts.
 * Deliberately small and separate from the CLI's parser: the test checks the wire, not our client.
 */
export async function readEvents(
  url: string,
  token: string,
  options: { lastEventId?: string; stop?: (event: WireEvent, seen: WireEvent[]) => boolean; timeoutMs?: number } = {},
): Promise<WireEvent[]> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.timeoutMs ?? 180_000);
  const events: WireEvent[] = [];
  try {
    const response = await fetch(url, {
      headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', ...(options.lastEventId ? { 'last-event-id': options.lastEventId } : {}) },
      signal: controller.signal,
    });
    if (response.status !== 200) throw new Error(`events: HTTP ${response.status} ${await response.text()}`);
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let split: number;
      while ((split = buffer.indexOf('\n\n')) !== -1) {
        const block = buffer.slice(0, split);
        buffer = buffer.slice(split + 2);
        const fields: Record<string, string> = {};
        for (const line of block.split('\n')) {
          if (line.startsWith(':') || !line.includes(':')) continue;
          const at = line.indexOf(':');
          fields[line.slice(0, at)] = line.slice(at + 1).replace(/^ /, '');
        }
        if (fields.event === undefined) continue;
        const event: WireEvent = { ...(fields.id !== undefined ? { id: fields.id } : {}), event: fields.event, data: JSON.parse(fields.data ?? 'null') };
        events.push(event);
        if (options.stop?.(event, events)) return events;
      }
    }
    return events;
  } catch (error) {
    if (controller.signal.aborted && events.length > 0 && !options.stop) return events;
    throw error;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}
