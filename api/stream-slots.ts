import { createHash } from 'node:crypto';

/**
 * Counts the event streams open per bearer token, so one client (or a leaked token)
 * cannot hold an unbounded number of long-lived connections, each polling the
 * workflow and reading log files. Tokens are kept only as SHA-256 digests.
 */
export class StreamSlots {
  private readonly open = new Map<string, number>();

  constructor(readonly maxPerToken: number) {}

  /** The key of a request's token (its `Authorization` header; `/v1` already checked it). */
  static keyOf(authorization: string | undefined): string {
    const token = /^Bearer ([^\s]+)$/i.exec(authorization ?? '')?.[1] ?? '';
    return createHash('sha256').update(token).digest('hex');
  }

  /**
   * Takes a slot for `key`; `undefined` when all of its slots are taken. The returned
   * release gives the slot back, once, however often it is called.
   */
  take(key: string): (() => void) | undefined {
    const count = this.open.get(key) ?? 0;
    if (count >= this.maxPerToken) return undefined;
    this.open.set(key, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(key) ?? 1) - 1;
      if (left <= 0) this.open.delete(key);
      else this.open.set(key, left);
    };
  }

  /** Streams open for `key` now. */
  count(key: string): number {
    return this.open.get(key) ?? 0;
  }
}
