import { open, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** One complete line of a runner log, and the file's byte offset just after it. */
interface LogLine {
  file: string;
  line: string;
  /** Docker's timestamp of the line, when the log has one. */
  at?: string;
  offsetAfter: number;
}

/** Most bytes read from one log file per call; the rest comes on the next call. */
const maxChunk = 256 * 1024;
/** Lines longer than this are cut (the log file keeps them whole). */
const maxLine = 4_096;
const timestamped = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z) (.*)$/s;

/**
 * Complete lines appended to a run's log files since the given offsets, file by file in
 * name order. A line still being written (no newline yet) waits for the next call, so a
 * line is never split across two events. A missing directory means no logs (the API may
 * run on another host than the workers).
 */
export async function readNewLogLines(logsDir: string, offsets: Readonly<Record<string, number>>): Promise<LogLine[]> {
  let files: string[];
  try {
    files = (await readdir(logsDir)).filter((name) => name.endsWith('.log')).sort();
  } catch {
    return [];
  }
  const lines: LogLine[] = [];
  for (const file of files) {
    const start = offsets[file] ?? 0;
    const handle = await open(join(logsDir, file), 'r').catch(() => undefined);
    if (!handle) continue;
    try {
      const buffer = Buffer.alloc(maxChunk);
      const { bytesRead } = await handle.read(buffer, 0, maxChunk, start);
      let offset = start;
      let from = 0;
      for (let index = buffer.indexOf(10, 0); index !== -1 && index < bytesRead; index = buffer.indexOf(10, from)) {
        const raw = buffer.subarray(from, index).toString('utf8').replace(/\r$/, '');
        offset += index - from + 1;
        from = index + 1;
        const match = timestamped.exec(raw);
        const text = match ? match[2]! : raw;
        lines.push({ file, line: text.length > maxLine ? `${text.slice(0, maxLine)}…` : text, ...(match ? { at: match[1]! } : {}), offsetAfter: offset });
      }
      // A line longer than a whole chunk would never complete here: deliver its first chunk.
      if (from === 0 && bytesRead === maxChunk) {
        lines.push({ file, line: `${buffer.subarray(0, maxLine).toString('utf8')}…`, offsetAfter: start + bytesRead });
      }
    } finally {
      await handle.close();
    }
  }
  return lines;
}
