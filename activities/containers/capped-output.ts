/**
 * Output of a command an agent chose, kept within a fixed size while it is read: the
 * first `headBytes` and the last `tailBytes`, everything between counted and dropped.
 * A command that prints 200 MB costs the worker this much memory, not 200 MB.
 */
export class CappedOutput {
  private readonly head: Buffer[] = [];
  private headLength = 0;
  private tail: Buffer[] = [];
  private tailLength = 0;
  /** Bytes seen in all. */
  total = 0;

  constructor(
    private readonly headBytes: number,
    private readonly tailBytes: number,
  ) {}

  push(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.headLength < this.headBytes) {
      const taken = chunk.subarray(0, this.headBytes - this.headLength);
      this.head.push(taken);
      this.headLength += taken.length;
      chunk = chunk.subarray(taken.length);
    }
    if (chunk.length === 0) return;
    // Copied: a slice would keep the whole (possibly large) chunk it came from alive.
    this.tail.push(Buffer.from(chunk.subarray(Math.max(0, chunk.length - this.tailBytes))));
    this.tailLength += Math.min(chunk.length, this.tailBytes);
    while (this.tail.length > 1 && this.tailLength - this.tail[0]!.length >= this.tailBytes) this.tailLength -= this.tail.shift()!.length;
    if (this.tailLength > this.tailBytes) {
      const excess = this.tailLength - this.tailBytes;
      this.tail[0] = this.tail[0]!.subarray(excess);
      this.tailLength -= excess;
    }
  }

  /** Bytes seen but not kept. */
  get dropped(): number {
    return this.total - this.headLength - this.tailLength;
  }

  /** The kept output; where bytes were dropped, a line says how many. */
  text(): string {
    const head = Buffer.concat(this.head).toString('utf8');
    const tail = Buffer.concat(this.tail).toString('utf8');
    return this.dropped > 0 ? `${head}\n[… output truncated: ${this.dropped} bytes dropped …]\n${tail}` : `${head}${tail}`;
  }
}

/**
 * Splits Docker's multiplexed attach stream (8-byte header: stream type, 3 zero bytes,
 * big-endian payload length) into payloads as chunks arrive, holding at most one
 * header between chunks — never the whole stream.
 */
export class DockerFrameReader {
  private header = Buffer.alloc(0);
  private remaining = 0;
  private kind = 1;

  /** `kind`: 1 stdout, 2 stderr (0 stdin). */
  constructor(private readonly onPayload: (kind: number, payload: Buffer) => void) {}

  push(chunk: Buffer): void {
    while (chunk.length > 0) {
      if (this.remaining > 0) {
        const payload = chunk.subarray(0, this.remaining);
        this.onPayload(this.kind, payload);
        this.remaining -= payload.length;
        chunk = chunk.subarray(payload.length);
        continue;
      }
      const needed = 8 - this.header.length;
      this.header = Buffer.concat([this.header, chunk.subarray(0, needed)]);
      chunk = chunk.subarray(needed);
      if (this.header.length < 8) return;
      this.kind = this.header.readUInt8(0);
      this.remaining = this.header.readUInt32BE(4);
      this.header = Buffer.alloc(0);
    }
  }
}
