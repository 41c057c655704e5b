/**
 * The resume point of a run's event stream, sent as each SSE event's `id` and read back
 * from `Last-Event-ID`: how many journal events were delivered, and how many bytes of
 * each runner log file. Text form: `12` or `12;gate-unit-r1.log=4096;session-a1.log=120`
 * (file names URI-encoded). Pure: no I/O.
 */
export interface EventCursor {
  journal: number;
  logs: Record<string, number>;
}

export const startCursor = (): EventCursor => ({ journal: 0, logs: {} });

/** Longest cursor accepted from a client (a header); a real one is far shorter. */
const maxCursorLength = 8_192;

export function formatCursor(cursor: EventCursor): string {
  const logs = Object.keys(cursor.logs)
    .sort()
    .map((file) => `;${encodeURIComponent(file)}=${cursor.logs[file]}`);
  return `${cursor.journal}${logs.join('')}`;
}

/** Parses a cursor; `undefined` when the text is not one (the caller names the header). */
export function parseCursor(text: string): EventCursor | undefined {
  if (text.length === 0 || text.length > maxCursorLength) return undefined;
  const [journal, ...files] = text.split(';');
  if (!/^(0|[1-9][0-9]{0,9})$/.test(journal ?? '')) return undefined;
  const cursor: EventCursor = { journal: Number(journal), logs: {} };
  for (const entry of files) {
    const match = /^([^=;]+)=(0|[1-9][0-9]{0,14})$/.exec(entry);
    if (!match) return undefined;
    let file: string;
    try {
      file = decodeURIComponent(match[1]!);
    } catch {
      return undefined;
    }
    // Only plain file names: a cursor must not point the server at another directory.
    if (file.includes('/') || file.includes('\\') || file === '.' || file === '..' || file in cursor.logs) return undefined;
    cursor.logs[file] = Number(match[2]);
  }
  return cursor;
}
