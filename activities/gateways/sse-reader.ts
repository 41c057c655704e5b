import { StringDecoder } from 'node:string_decoder';

export interface SseEvent {
  /** The `event:` field; `message` when the event named none. */
  event: string;
  /** The `data:` lines joined with newlines. */
  data: string;
}

/**
 * Reads a server-sent event stream as its chunks arrive (any chunking: an event, a
 * line, a UTF-8 character or a CRLF may be split across chunks) and hands over each
 * event as soon as its blank line is seen. It holds only the event being read, and at
 * most `maxEventChars` of it: a longer event is dropped and the reader stops
 * (`overflowed`), so a flood costs the worker a fixed amount of memory.
 */
export class SseReader {
  private readonly decoder = new StringDecoder('utf8');
  private buffer = '';
  private data: string[] = [];
  private dataChars = 0;
  private name = '';
  /** Events handed over so far. */
  events = 0;
  /** An event or a line was longer than the limit; nothing after it was read. */
  overflowed = false;

  constructor(
    private readonly onEvent: (event: SseEvent) => void,
    private readonly maxEventChars = 32 * 1024 * 1024,
  ) {}

  push(chunk: Buffer): void {
    if (this.overflowed) return;
    this.buffer += this.decoder.write(chunk);
    this.drain(false);
  }

  /** The stream ended: a last event without its blank line still counts. */
  end(): void {
    if (this.overflowed) return;
    this.buffer += this.decoder.end();
    this.drain(true);
    if (this.buffer.length > 0) this.line(this.buffer);
    this.buffer = '';
    this.dispatch();
  }

  private drain(final: boolean): void {
    let start = 0;
    for (;;) {
      const lf = this.buffer.indexOf('\n', start);
      const cr = this.buffer.indexOf('\r', start);
      const at = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      if (at === -1) break;
      // A CR at the very end may be the first half of a CRLF: wait for the next chunk.
      if (at === cr && at === this.buffer.length - 1 && !final) break;
      const next = at === cr && this.buffer[at + 1] === '\n' ? at + 2 : at + 1;
      this.line(this.buffer.slice(start, at));
      start = next;
      if (this.overflowed) return;
    }
    this.buffer = this.buffer.slice(start);
    if (this.buffer.length > this.maxEventChars) this.overflow();
  }

  private line(line: string): void {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') {
      this.dataChars += value.length + 1;
      if (this.dataChars > this.maxEventChars) return this.overflow();
      this.data.push(value);
    } else if (field === 'event') this.name = value;
  }

  private dispatch(): void {
    if (this.data.length > 0) {
      this.events += 1;
      this.onEvent({ event: this.name || 'message', data: this.data.join('\n') });
    }
    this.data = [];
    this.dataChars = 0;
    this.name = '';
  }

  private overflow(): void {
    this.overflowed = true;
    this.buffer = '';
    this.data = [];
  }
}
