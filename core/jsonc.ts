/**
 * JSON with comments (JSONC), as devcontainer.json and editors write it, made into plain JSON.
 * `//` and `/* *\/` comments and trailing commas become spaces (a comment's line breaks stay), so
 * the text keeps its length and JSON.parse's positions still point into the file the user wrote.
 * Strings are copied as they are, escapes and all: a `//` in "http://x" is part of the string.
 * Anything else that is not JSON is left for JSON.parse to report.
 */
type JsoncStrip = { ok: true; json: string } | { ok: false; message: string };

const blank = (text: string) => text.replace(/[^\n]/g, ' ');

/** The index just past the string that opens at `start` (its closing quote), or the text's end. */
function stringEnd(text: string, start: number): number {
  let index = start + 1;
  while (index < text.length) {
    const char = text[index];
    if (char === '\\') index += 2;
    else if (char === '"') return index + 1;
    else index += 1;
  }
  return text.length;
}

function lineAndColumn(text: string, index: number): string {
  const before = text.slice(0, index).split('\n');
  return `line ${before.length}, column ${(before.at(-1)?.length ?? 0) + 1}`;
}

export function stripJsonComments(text: string): JsoncStrip {
  const out: string[] = [];
  // A comma after a value, kept at this index of `out` until the next significant character says
  // whether it was trailing (a closing bracket: it becomes a space) or not (it stays).
  let pendingComma = -1;
  let lastSignificant = '';
  let index = 0;
  if (text.startsWith('\uFEFF')) {
    out.push(' ');
    index = 1;
  }
  while (index < text.length) {
    const char = text[index] as string;
    const next = text[index + 1];
    if (char === '/' && next === '/') {
      const newline = text.indexOf('\n', index);
      const end = newline === -1 ? text.length : newline;
      out.push(blank(text.slice(index, end)));
      index = end;
      continue;
    }
    if (char === '/' && next === '*') {
      const close = text.indexOf('*/', index + 2);
      if (close === -1) return { ok: false, message: `has a /* comment that is not closed (it opens at ${lineAndColumn(text, index)})` };
      out.push(blank(text.slice(index, close + 2)));
      index = close + 2;
      continue;
    }
    if (char === '"') {
      const end = stringEnd(text, index);
      out.push(text.slice(index, end));
      pendingComma = -1;
      lastSignificant = '"';
      index = end;
      continue;
    }
    if (/\s/.test(char)) {
      out.push(char);
      index += 1;
      continue;
    }
    if ((char === '}' || char === ']') && pendingComma !== -1) out[pendingComma] = ' ';
    // Only a comma after a value can be trailing: `[,]` and `[1,,]` stay for JSON.parse to refuse.
    pendingComma = char === ',' && lastSignificant !== '' && !'[{,:'.includes(lastSignificant) ? out.length : -1;
    lastSignificant = char;
    out.push(char);
    index += 1;
  }
  return { ok: true, json: out.join('') };
}
