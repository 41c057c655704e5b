/**
 * Where the watch display goes. A terminal gets one block redrawn in place (ANSI,
 * throttled); anything else (a pipe, a file, CI) gets one plain line per event
 * worth a line, so the output reads as a log and tests can check it.
 */
import { eventLine, screenLines, type LineOptions } from './render';
import type { WatchEvent, WatchState } from './watch-state';

/** The bits of a stream the displays use (process.stdout fits). */
export interface Output {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
  rows?: number;
}

export interface Display {
  update(state: WatchState, event: WatchEvent): void;
  /** A remark about the connection (reconnecting…), not about the run. */
  note(text: string): void;
  finish(state: WatchState): void;
}

export class LineDisplay implements Display {
  constructor(
    private readonly out: Output,
    private readonly err: Output,
    private readonly options: LineOptions = {},
  ) {}

  update(state: WatchState, event: WatchEvent): void {
    const line = eventLine(event, state, this.options);
    if (line !== undefined) this.out.write(`${line}\n`);
  }

  note(text: string): void {
    this.err.write(`tarmac: ${text}\n`);
  }

  finish(): void {}
}

/** Shows nothing (a `--json` wait prints only the record at the end). */
export class SilentDisplay implements Display {
  update(): void {}
  note(): void {}
  finish(): void {}
}

interface TtyOptions {
  /** Least time between two redraws; default 100 ms. */
  throttleMs?: number;
  /** The clock (tests pass their own). */
  now?: () => number;
}

export class TtyDisplay implements Display {
  private drawnLines = 0;
  private lastDraw = 0;
  private pending: NodeJS.Timeout | undefined;
  private ticker: NodeJS.Timeout | undefined;
  private state: WatchState | undefined;
  private noteText: string | undefined;
  private readonly throttleMs: number;
  private readonly now: () => number;

  constructor(
    private readonly out: Output,
    options: TtyOptions = {},
  ) {
    this.throttleMs = options.throttleMs ?? 100;
    this.now = options.now ?? Date.now;
  }

  update(state: WatchState): void {
    this.state = state;
    this.noteText = undefined;
    // The wall clock and spinner move even when no event comes.
    this.ticker ??= setInterval(() => this.schedule(), 1000).unref();
    this.schedule();
  }

  note(text: string): void {
    this.noteText = text;
    this.schedule();
  }

  finish(state: WatchState): void {
    this.state = state;
    clearTimeout(this.pending);
    clearInterval(this.ticker);
    this.pending = undefined;
    this.draw();
  }

  private schedule(): void {
    const wait = this.lastDraw + this.throttleMs - this.now();
    if (wait <= 0) return this.draw();
    this.pending ??= setTimeout(() => {
      this.pending = undefined;
      this.draw();
    }, wait).unref();
  }

  private draw(): void {
    if (!this.state) return;
    this.lastDraw = this.now();
    let lines = screenLines(this.state, { now: this.lastDraw, columns: this.out.columns ?? 80, ...(this.noteText ? { note: this.noteText } : {}) });
    // Taller than the terminal, the cursor could not get back to the top: keep the title and the latest lines.
    const rows = Math.max(4, (this.out.rows ?? 40) - 1);
    if (lines.length > rows) lines = [lines[0]!, ...lines.slice(lines.length - rows + 1)];
    const up = this.drawnLines > 0 ? `\x1b[${this.drawnLines}A\r` : '';
    this.out.write(`${up}\x1b[0J${lines.join('\n')}\n`);
    this.drawnLines = lines.length;
  }
}
