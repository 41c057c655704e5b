/**
 * A Server-Sent Events parser (the WHATWG event-stream format) for a stream read with fetch():
 * EventSource cannot send an Authorization header, so the dashboard reads the stream itself.
 * Pure: text in, messages out.
 */
export interface SseMessage {
  /** The event's type (`message` when the stream names none). */
  event: string;
  data: string;
  /** The id the stream gave this event, if any: the cursor to resume after it. */
  id?: string;
}

export class SseParser {
  /** The last event id the stream set (it carries over to later events, as in EventSource). */
  lastEventId: string | undefined;
  /** The reconnection delay the stream asked for (`retry:`), in ms. */
  retryMs: number | undefined;
  private buffer = '';
  private event = '';
  private data: string[] = [];
  private idInEvent: string | undefined;

  /** Feeds a chunk of text; returns the messages it completed. */
  feed(chunk: string): SseMessage[] {
    this.buffer += chunk;
    const messages: SseMessage[] = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      // A lone \r at the end may be the first half of \r\n: wait for more.
      if (!match || (match[0] === '\r' && match.index === this.buffer.length - 1)) break;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      const message = this.line(line);
      if (message) messages.push(message);
    }
    return messages;
  }

  private line(line: string): SseMessage | undefined {
    if (line === '') {
      const idInEvent = this.idInEvent;
      this.idInEvent = undefined;
      if (this.data.length === 0) {
        this.event = '';
        return undefined;
      }
      const message: SseMessage = { event: this.event || 'message', data: this.data.join('\n'), ...(idInEvent !== undefined ? { id: idInEvent } : {}) };
      this.event = '';
      this.data = [];
      return message;
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
    else if (field === 'id' && !value.includes('\0')) {
      this.lastEventId = value;
      this.idInEvent = value;
    } else if (field === 'retry' && /^\d+$/.test(value)) this.retryMs = Number(value);
    return undefined;
  }
}
