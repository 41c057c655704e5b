import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Readable } from 'node:stream';
import type Docker from 'dockerode';

/**
 * Default cap of a container's log: of the copy in the run dir, of Docker's own
 * json-file log, and of the stdout a session's result is parsed from. A container is
 * untrusted code; what it prints must not fill the worker's disk or memory.
 */
export const defaultMaxLogBytes = 16 * 1024 * 1024;

/** Room kept under the cap for the truncation line, so the file with it stays within the cap. */
const noteRoom = 256;

/**
 * Splits Docker's multiplexed log stream (8-byte frame headers: stream, 3 zero bytes,
 * payload size) as it arrives. Payloads come out in pieces as their bytes arrive, so
 * a huge frame is never held whole. Pure: no I/O.
 */
export class DockerFrameSplitter {
  private header = Buffer.alloc(0);
  private remaining = 0;
  private stream = 1;

  push(chunk: Buffer): { stream: number; data: Buffer }[] {
    const out: { stream: number; data: Buffer }[] = [];
    let offset = 0;
    while (offset < chunk.length) {
      if (this.remaining === 0) {
        const take = Math.min(8 - this.header.length, chunk.length - offset);
        this.header = Buffer.concat([this.header, chunk.subarray(offset, offset + take)]);
        offset += take;
        if (this.header.length < 8) break;
        this.stream = this.header[0]!;
        this.remaining = this.header.readUInt32BE(4);
        this.header = Buffer.alloc(0);
        continue;
      }
      const take = Math.min(this.remaining, chunk.length - offset);
      out.push({ stream: this.stream, data: chunk.subarray(offset, offset + take) });
      offset += take;
      this.remaining -= take;
    }
    return out;
  }
}

/**
 * How much of `data` fits after `written` bytes under `limit`: all of it, or (when it
 * does not fit) the part up to its last newline within the limit, so the log ends on
 * a whole line. With no newline there, nothing more, unless nothing was written yet
 * (one giant line): then as much as fits. `full` says the limit is reached. Pure.
 */
export function fitWithin(data: Buffer, written: number, limit: number): { keep: Buffer; full: boolean } {
  if (written + data.length <= limit) return { keep: data, full: false };
  const allowed = data.subarray(0, Math.max(0, limit - written));
  const newline = allowed.lastIndexOf(10);
  if (newline >= 0) return { keep: allowed.subarray(0, newline + 1), full: true };
  return { keep: written === 0 ? allowed : allowed.subarray(0, 0), full: true };
}

/** The line that ends a truncated log (on a line of its own). */
export function truncationNote(written: number, endsWithNewline: boolean): string {
  return `${endsWithNewline ? '' : '\n'}[tarmac] log truncated after ${written} bytes: the rest of the container's output was not kept\n`;
}

/**
 * Copies a container's log stream (both streams, in order) to a file, at most
 * `maxBytes` bytes including the truncation line. Each write waits for the file to
 * drain, so a container that floods its output is read only as fast as the disk
 * takes it, never buffered in memory; once the cap is reached the stream is closed
 * and the container's further output is not read at all (Docker's own log of it is
 * capped by the container's LogConfig).
 */
export async function copyCappedLog(
  source: Readable,
  logFile: string,
  maxBytes: number,
  onFirstOutput?: () => void,
): Promise<{ bytes: number; truncated: boolean }> {
  await mkdir(dirname(logFile), { recursive: true });
  const out = createWriteStream(logFile, { flags: 'w' });
  const splitter = new DockerFrameSplitter();
  const limit = Math.max(0, maxBytes - noteRoom);
  let written = 0;
  let truncated = false;
  let endsWithNewline = true;
  let first = true;
  const write = async (data: Buffer) => {
    if (!out.write(data)) await once(out, 'drain');
  };
  try {
    reading: for await (const chunk of source as AsyncIterable<Buffer>) {
      if (first) {
        first = false;
        onFirstOutput?.();
      }
      for (const frame of splitter.push(chunk)) {
        const { keep, full } = fitWithin(frame.data, written, limit);
        if (keep.length > 0) {
          await write(keep);
          written += keep.length;
          endsWithNewline = keep[keep.length - 1] === 10;
        }
        if (full) {
          truncated = true;
          // Leaving the loop closes the stream: nothing past the cap is read.
          break reading;
        }
      }
    }
    if (truncated) await write(Buffer.from(truncationNote(written, endsWithNewline)));
  } finally {
    source.destroy();
    await new Promise<void>((resolve) => out.end(resolve));
  }
  return { bytes: written, truncated };
}

/**
 * The stdout of a finished container, at most `maxBytes` of it (the start), read as a
 * stream that is closed at the cap: the container's output is never held whole.
 */
export async function readCappedStdout(
  docker: Docker,
  containerId: string,
  maxBytes: number = defaultMaxLogBytes,
): Promise<{ text: string; truncated: boolean }> {
  const container = docker.getContainer(containerId);
  // dockerode streams logs only with `follow`, which would wait on a running container;
  // the modem gives the same request (no follow) as a stream.
  const modem = container.modem as {
    dial(options: Record<string, unknown>, callback: (error: Error | null, stream?: Readable) => void): void;
  };
  const source = await new Promise<Readable>((resolve, reject) =>
    modem.dial(
      {
        path: `/containers/${container.id}/logs?`,
        method: 'GET',
        isStream: true,
        statusCodes: { 200: true, 404: 'no such container', 500: 'server error' },
        options: { stdout: true, stderr: false, follow: false },
      },
      (error, stream) => (error || !stream ? reject(error ?? new Error('no log stream')) : resolve(stream)),
    ),
  );
  const splitter = new DockerFrameSplitter();
  const kept: Buffer[] = [];
  let size = 0;
  let truncated = false;
  try {
    reading: for await (const chunk of source as AsyncIterable<Buffer>) {
      for (const frame of splitter.push(chunk)) {
        if (frame.stream === 2) continue;
        const keep = frame.data.subarray(0, Math.max(0, maxBytes - size));
        kept.push(keep);
        size += keep.length;
        if (keep.length < frame.data.length) {
          truncated = true;
          break reading;
        }
      }
    }
  } finally {
    source.destroy();
  }
  return { text: Buffer.concat(kept).toString('utf8'), truncated };
}
