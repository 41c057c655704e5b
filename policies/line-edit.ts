/**
 * Line-level edits: what a playbook may do to a file. An edit names the lines it replaces (checked
 * against the file before it is applied) and the lines it puts there, so a playbook's change is the
 * few lines it means and never a rewrite of the file. Pure.
 */

export interface LineEdit {
  path: string;
  /** Index (0-based) of the first line replaced, or where the lines are inserted. */
  at: number;
  /** The lines replaced, exactly as they are (none: an insertion). */
  remove: string[];
  insert: string[];
}

/** The most lines one edit may replace, and put in: a playbook's repair is a line or a short rule. */
const maxRemovedLines = 2;
const maxInsertedLines = 4;
/** The most edits one patch may make. */
export const maxEdits = 3;

/** Is the edit small enough to be a playbook's (never a rewrite)? */
export const isMinimal = (edit: LineEdit): boolean =>
  edit.remove.length <= maxRemovedLines && edit.insert.length <= maxInsertedLines && edit.remove.length + edit.insert.length > 0;

/**
 * The file with the edits applied (bottom up, so indices stay true), or undefined when a line an
 * edit replaces is not what it expects or the edits overlap. In a CRLF file inserted lines get CR too.
 */
export function applyLineEdits(content: string, edits: readonly LineEdit[]): string | undefined {
  const lines = content.split('\n');
  const crlf = content.includes('\r\n');
  const ordered = [...edits].sort((a, b) => b.at - a.at);
  let floor = Number.POSITIVE_INFINITY;
  for (const edit of ordered) {
    if (edit.at < 0 || edit.at + edit.remove.length > lines.length || edit.at + edit.remove.length > floor) return undefined;
    if (edit.remove.some((line, index) => lines[edit.at + index] !== line)) return undefined;
    lines.splice(edit.at, edit.remove.length, ...edit.insert.map((line) => (crlf && !line.endsWith('\r') ? `${line}\r` : line)));
    floor = edit.at;
  }
  return lines.join('\n');
}

/** An edit that adds lines at the end of a file (after its last line, keeping the final newline). */
export function appendLines(path: string, content: string, added: string[]): LineEdit {
  const lines = content.split('\n');
  if (content === '' || content.endsWith('\n')) return { path, at: Math.max(0, lines.length - 1), remove: [], insert: added };
  return { path, at: lines.length, remove: [], insert: [...added, ''] };
}

/** JSON with its object keys sorted: two values are the same data when these are equal. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** package.json's text parsed, when it is a JSON object whose `scripts` (if any) is an object of strings. */
export function parsePackageJson(text: string): { scripts: Record<string, string>; main?: string; data: Record<string, unknown> } | { error: string } {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    return { error: `not valid JSON: ${(error as Error).message}` };
  }
  if (!data || typeof data !== 'object' || Array.isArray(data)) return { error: 'not a JSON object' };
  const record = data as Record<string, unknown>;
  const scripts = record.scripts ?? {};
  if (!scripts || typeof scripts !== 'object' || Array.isArray(scripts) || Object.values(scripts).some((value) => typeof value !== 'string'))
    return { error: '"scripts" is not an object of strings' };
  return { scripts: scripts as Record<string, string>, ...(typeof record.main === 'string' ? { main: record.main } : {}), data: record };
}

/**
 * The one-line edit that adds a script to package.json: a line at the top of a multi-line
 * `"scripts"` object, or the entry put first into a one-line one (or a `"scripts"` line after the
 * opening brace when there is none). Checked by parsing: the result must be the same data plus that
 * script, else undefined (a layout this cannot edit line by line is left alone).
 */
export function addPackageScript(path: string, text: string, name: string, command: string): LineEdit | undefined {
  const parsed = parsePackageJson(text);
  if ('error' in parsed || Object.hasOwn(parsed.scripts, name)) return undefined;
  const lines = text.split('\n');
  const entry = `${JSON.stringify(name)}: ${JSON.stringify(command)}`;
  const empty = Object.keys(parsed.scripts).length === 0;
  const keyLine = lines.findIndex((line) => /"scripts"\s*:\s*\{/.test(line));
  let edit: LineEdit;
  if (keyLine >= 0) {
    const line = lines[keyLine]!;
    const open = line.indexOf('{', line.search(/"scripts"\s*:/));
    const rest = line.slice(open + 1);
    if (rest.trim() === '') {
      const indent = empty ? `${/^\s*/.exec(line)![0]}  ` : /^\s*/.exec(lines[keyLine + 1] ?? '')![0];
      edit = { path, at: keyLine + 1, remove: [], insert: [`${indent}${entry}${empty ? '' : ','}`] };
    } else {
      const inserted = /^\s*\}/.test(rest) ? ` ${entry} ${rest.trimStart()}` : ` ${entry},${rest.startsWith(' ') ? rest : ` ${rest}`}`;
      edit = { path, at: keyLine, remove: [line], insert: [`${line.slice(0, open + 1)}${inserted}`] };
    }
  } else if (parsed.data.scripts === undefined) {
    const top = lines.findIndex((line) => line.trim() !== '');
    if (top < 0 || lines[top]!.trim() !== '{') return undefined;
    const indent = /^\s*/.exec(lines[top + 1] ?? '')![0] || '  ';
    edit = { path, at: top + 1, remove: [], insert: [`${indent}"scripts": { ${entry} }${Object.keys(parsed.data).length > 0 ? ',' : ''}`] };
  } else {
    return undefined;
  }
  const after = applyLineEdits(text, [edit]);
  if (after === undefined) return undefined;
  const expected = { ...parsed.data, scripts: { ...parsed.scripts, [name]: command } };
  try {
    return canonical(JSON.parse(after)) === canonical(expected) ? edit : undefined;
  } catch {
    return undefined;
  }
}
