import { appendFile, mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { automationGit } from '../git/git';

/** One file of an attempt's diff, as it is recorded in the session's telemetry. */
interface DiffTelemetryEntry {
  tool: 'diff';
  /** The harness whose edits these are (it has no MCP client, so the tool gateway saw none of them). */
  harness: string;
  attempt: number;
  path: string;
  /** Lines added and removed; null for a binary file. */
  added: number | null;
  removed: number | null;
}

/** `git diff --numstat -z` output: `added\tremoved\tpath\0` per file (`-` counts for a binary file). */
export function parseNumstat(output: string): { path: string; added: number | null; removed: number | null }[] {
  return output
    .split('\0')
    .filter((record) => record.length > 0)
    .flatMap((record) => {
      const match = /^(-|\d+)\t(-|\d+)\t([\s\S]+)$/.exec(record);
      if (!match) return [];
      const count = (value: string) => (value === '-' ? null : Number(value));
      return [{ path: match[3]!, added: count(match[1]!), removed: count(match[2]!) }];
    });
}

/**
 * Records what a harness without an MCP client changed (aider edits the session's copy with its own
 * tools, so the tool gateway's telemetry has nothing of it): one entry per file of the attempt's
 * resulting diff, `baseSha..headSha`, with the lines added and removed, appended to the session's
 * telemetry (the tool gateway's `telemetry.jsonl`). Read in the worker-owned repository after the
 * agent's commits crossed as a bundle; nothing runs in the agent's copy. A retried activity finds
 * its attempt's entries there and adds none. Returns the entries recorded now.
 */
export async function recordDiffTelemetry(input: {
  telemetryPath: string;
  repo: string;
  baseSha: string;
  headSha: string;
  attempt: number;
  harness: string;
}): Promise<DiffTelemetryEntry[]> {
  const { telemetryPath, repo, baseSha, headSha, attempt, harness } = input;
  if (headSha === baseSha) return [];
  const earlier = await readFile(telemetryPath, 'utf8').catch(() => '');
  const recorded = earlier.split('\n').some((line) => {
    try {
      const entry = JSON.parse(line) as Partial<DiffTelemetryEntry>;
      return entry.tool === 'diff' && entry.attempt === attempt;
    } catch {
      return false;
    }
  });
  if (recorded) return [];
  const numstat = await automationGit(repo).raw(['diff', '--numstat', '-z', '--no-renames', baseSha, headSha]);
  const entries: DiffTelemetryEntry[] = parseNumstat(numstat).map((file) => ({ tool: 'diff', harness, attempt, ...file }));
  if (entries.length === 0) return [];
  const at = new Date().toISOString();
  await mkdir(dirname(telemetryPath), { recursive: true });
  await appendFile(telemetryPath, entries.map((entry) => `${JSON.stringify({ at, ...entry })}\n`).join(''));
  return entries;
}
