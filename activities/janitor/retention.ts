import { appendFile, lstat, readdir, rm, rmdir, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { Context, log } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { cacheEntryRetention, mirrorRetention, runRetention, type RunWorkflowStatus } from '../../policies/retention';
import { readManifest, type Manifest } from '../stores/run-store';
import { environmentsDir, listEnvironments } from '../environments/environments';

/** One thing a sweep removed (paths relative to the data dir). */
export interface RetentionRemoval {
  kind: 'run' | 'mirror' | 'review-cache' | 'gate-cache' | 'environment';
  path: string;
  /** The run's id and its workflow's final status (`not-found`: Temporal no longer knows it). */
  runId?: string;
  status?: string;
  /** When the run finished, or the mirror / cache entry was last used. */
  finishedAt: string;
  bytes: number;
  reason: string;
}

/** What one sweep of one host did: everything removed, every run kept with why, and what went wrong. */
export interface RetentionReport {
  hostId: string;
  dataDir: string;
  retentionMs: number;
  startedAt: string;
  endedAt: string;
  removed: RetentionRemoval[];
  /** Every run directory kept, with the reason (running, young, not Tarmac's, another host's, status unknown). */
  keptRuns: { runId: string; reason: string }[];
  /** Mirrors kept, with the reason; findings- and gate-cache files kept are only counted. */
  keptMirrors: { path: string; reason: string }[];
  keptCacheEntries: number;
  bytesFreed: number;
  /** A removal that failed (permissions, a file in use): the sweep goes on and the next one tries again. */
  problems: { path: string; problem: string }[];
}

/** The log of removals, one JSON line each, in the data dir: what was removed, when, and why. */
const retentionLogName = 'retention.jsonl';

/** Bytes under a path, without following symbolic links (a link counts as itself). */
async function sizeOf(path: string): Promise<number> {
  const info = await lstat(path).catch(() => undefined);
  if (!info) return 0;
  if (!info.isDirectory()) return info.size;
  const entries = await readdir(path).catch(() => [] as string[]);
  let total = info.size;
  for (const entry of entries) total += await sizeOf(join(path, entry));
  return total;
}

/** The newest modification time of the regular files at the top of a directory (and the directory's own). */
async function lastWrite(dir: string): Promise<number> {
  let newest = (await lstat(dir)).mtimeMs;
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (!entry.isFile()) continue;
    const info = await lstat(join(dir, entry.name)).catch(() => undefined);
    if (info && info.mtimeMs > newest) newest = info.mtimeMs;
  }
  return newest;
}

/** What Temporal says about a run's workflow (by workflow id: a run that continued as new is its latest run). */
async function workflowStatus(client: Client, runId: string): Promise<RunWorkflowStatus> {
  try {
    const description = await client.workflow.getHandle(runId).describe();
    if (description.status.name === 'RUNNING') return { state: 'running' };
    return { state: 'closed', status: description.status.name, closedAt: (description.closeTime ?? description.startTime).getTime() };
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return { state: 'not-found' };
    return { state: 'unknown', problem: error instanceof Error ? error.message : String(error) };
  }
}

interface RetentionDeps {
  dataDir: string;
  hostId: string;
  /** The Temporal client to ask about runs; default the activity's (the worker's) client. */
  client?: () => Client;
}

/** What every phase of one sweep works with: its clock, its report, and the one way it removes. */
interface Sweep {
  dataDir: string;
  hostId: string;
  now: number;
  retentionMs: number;
  report: RetentionReport;
  /** Removes one path, counts and logs it; a removal that fails is a problem of the report, not an error. */
  removeEntry: (path: string, removal: Omit<RetentionRemoval, 'path' | 'bytes'>, remove: () => Promise<void>) => Promise<void>;
}

/** A sweep's start: its clock, an empty report, and the remover that fills it. */
function startSweep(dataDir: string, hostId: string, retentionMs: number): Sweep {
  const startedAt = new Date();
  const now = startedAt.getTime();
  const report: RetentionReport = {
    hostId,
    dataDir,
    retentionMs,
    startedAt: startedAt.toISOString(),
    endedAt: '',
    removed: [],
    keptRuns: [],
    keptMirrors: [],
    keptCacheEntries: 0,
    bytesFreed: 0,
    problems: [],
  };
  const logPath = join(dataDir, retentionLogName);
  const removeEntry = async (path: string, removal: Omit<RetentionRemoval, 'path' | 'bytes'>, remove: () => Promise<void>): Promise<void> => {
    const bytes = await sizeOf(path);
    try {
      await remove();
    } catch (error) {
      report.problems.push({ path: relative(dataDir, path), problem: (error as Error).message });
      log.warn('retention: could not remove', { path, error: (error as Error).message });
      return;
    }
    const entry: RetentionRemoval = { ...removal, path: relative(dataDir, path), bytes };
    report.removed.push(entry);
    report.bytesFreed += bytes;
    await appendFile(logPath, `${JSON.stringify({ at: new Date().toISOString(), hostId, ...entry })}\n`);
    log.info('retention: removed', { hostId, ...entry });
  };
  return { dataDir, hostId, now, retentionMs, report, removeEntry };
}

/** Removes the finished runs past the retention; returns the manifests of the runs kept (their mirrors are in use). */
async function sweepRuns({ dataDir, hostId, now, retentionMs, report, removeEntry }: Sweep, client: () => Client): Promise<Manifest[]> {
  const runsDir = join(dataDir, 'runs');
  const kept: Manifest[] = [];
  for (const entry of await readdir(runsDir, { withFileTypes: true }).catch(() => [])) {
    // A link or a file among the runs is not a run directory Tarmac made.
    if (!entry.isDirectory()) {
      report.keptRuns.push({ runId: entry.name, reason: 'not a directory: never removed' });
      continue;
    }
    const dir = join(runsDir, entry.name);
    const manifest = await readManifest(join(dir, 'manifest.json')).catch(() => undefined);
    const workflow =
      manifest && manifest.runId === entry.name ? await workflowStatus(client(), entry.name) : ({ state: 'unknown', problem: 'not asked' } as const);
    const decision = runRetention(
      { dirName: entry.name, ...(manifest ? { manifest } : {}), workflow, lastWriteMs: await lastWrite(dir) },
      { now, retentionMs, hostId },
    );
    if (!decision.remove) {
      report.keptRuns.push({ runId: entry.name, reason: decision.reason });
      if (manifest) kept.push(manifest);
      continue;
    }
    const status = workflow.state === 'closed' ? workflow.status : 'not-found';
    await removeEntry(dir, { kind: 'run', runId: entry.name, status, finishedAt: new Date(decision.finishedAt).toISOString(), reason: decision.reason }, () =>
      rm(dir, { recursive: true, force: true }),
    );
    // A directory that could not be removed whole still holds its workspace: its mirror stays.
    if (report.problems.some((problem) => problem.path === relative(dataDir, dir))) kept.push(manifest!);
  }
  return kept;
}

/** Removes the mirrors no kept run names and nothing fetched into within the retention. */
async function sweepMirrors({ dataDir, now, retentionMs, report, removeEntry }: Sweep, kept: Manifest[]): Promise<void> {
  const mirrorsDir = join(dataDir, 'mirrors');
  for (const entry of await readdir(mirrorsDir, { withFileTypes: true }).catch(() => [])) {
    const path = join(mirrorsDir, entry.name);
    // Only bare repositories Tarmac made (`<name>-<digest>.git` with a HEAD); anything else stays.
    const isMirror =
      entry.isDirectory() &&
      entry.name.endsWith('.git') &&
      (await stat(join(path, 'HEAD'))
        .then((info) => info.isFile())
        .catch(() => false));
    if (!isMirror) {
      report.keptMirrors.push({ path: relative(dataDir, path), reason: 'not a mirror Tarmac made: never removed' });
      continue;
    }
    const usedBy = kept.filter((manifest) => manifest.mirror === path).map((manifest) => manifest.runId);
    const times = await Promise.all(
      ['.', 'FETCH_HEAD', 'HEAD', 'refs/remotes/origin'].map((name) =>
        lstat(join(path, name))
          .then((info) => info.mtimeMs)
          .catch(() => 0),
      ),
    );
    const decision = mirrorRetention({ usedBy, lastUsedMs: Math.max(...times) }, { now, retentionMs });
    if (!decision.remove) report.keptMirrors.push({ path: relative(dataDir, path), reason: decision.reason });
    else
      await removeEntry(path, { kind: 'mirror', finishedAt: new Date(decision.finishedAt).toISOString(), reason: decision.reason }, () =>
        rm(path, { recursive: true, force: true }),
      );
  }
}

/**
 * The findings cache: <tt>/<tree>/<reviewer>@<version>.json files; the gate cache:
 * <tt>/<tree>/<suite>/<digests>.json entries and their .log files (a hit touches both; one
 * without the other is a miss). Emptied directories go too.
 */
async function sweepCache(sweep: Sweep, dir: string, kind: 'review-cache' | 'gate-cache', extensions: string[]): Promise<void> {
  const { now, retentionMs, report, removeEntry } = sweep;
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      await sweepCache(sweep, path, kind, extensions);
      await rmdir(path).catch(() => undefined);
      continue;
    }
    if (!entry.isFile() || !extensions.some((extension) => entry.name.endsWith(extension))) continue;
    const info = await lstat(path).catch(() => undefined);
    if (!info) continue;
    const decision = cacheEntryRetention(info.mtimeMs, { now, retentionMs });
    if (!decision.remove) report.keptCacheEntries += 1;
    else await removeEntry(path, { kind, finishedAt: new Date(decision.finishedAt).toISOString(), reason: decision.reason }, () => rm(path, { force: true }));
  }
}

/** Removes the environments no kept run holds and no landing used within the retention, and builds a killed build left. */
async function sweepEnvironments({ dataDir, now, retentionMs, report, removeEntry }: Sweep): Promise<void> {
  for (const environment of await listEnvironments(dataDir)) {
    const path = join(environmentsDir(dataDir), environment.key.slice('sha256:'.length));
    const decision = cacheEntryRetention(Date.parse(environment.lastUsedAt), { now, retentionMs });
    if (environment.usedBy.length > 0 || !decision.remove) report.keptCacheEntries += 1;
    else
      await removeEntry(path, { kind: 'environment', finishedAt: new Date(decision.finishedAt).toISOString(), reason: decision.reason }, () =>
        rm(path, { recursive: true, force: true }),
      );
  }
  for (const entry of await readdir(environmentsDir(dataDir), { withFileTypes: true }).catch(() => [])) {
    if (!entry.isDirectory() || !/^[0-9a-f]{64}\.build-[0-9a-f]+$/.test(entry.name)) continue;
    const path = join(environmentsDir(dataDir), entry.name);
    const decision = cacheEntryRetention(await lastWrite(path), { now, retentionMs });
    if (decision.remove)
      await removeEntry(
        path,
        { kind: 'environment', finishedAt: new Date(decision.finishedAt).toISOString(), reason: `a build left unfinished: ${decision.reason}` },
        () => rm(path, { recursive: true, force: true }),
      );
  }
}

/**
 * The retention sweep of one host's data dir (it runs on that host's queue: the files are only
 * there). Removes, and logs to `retention.jsonl` and the worker log:
 * - `runs/<id>/` of a finished run older than the retention (the whole directory: workspace,
 *   logs, sessions, outcome) — only a directory whose manifest names that run and this host, and
 *   only when Temporal says its workflow is not running;
 * - a mirror under `mirrors/` that no kept run's manifest names and nothing fetched into within the
 *   retention;
 * - findings-cache entries under `cache/reviews/` and gate-cache entries and logs under
 *   `cache/gates/` not sealed or reused within the retention;
 * - repository environments under `cache/environments/` that no kept run holds and no landing used
 *   within the retention, and build directories a killed build left that old.
 * Nothing outside those directories is ever touched; links are removed as links, never followed.
 */
export function createRetentionActivities({ dataDir, hostId, client = () => Context.current().client }: RetentionDeps) {
  return {
    sweep: async ({ retentionMs }: { retentionMs: number }): Promise<RetentionReport> => {
      const sweep = startSweep(dataDir, hostId, retentionMs);
      const { report } = sweep;
      // Runs first: the mirrors they name are in use while they are kept.
      const kept = await sweepRuns(sweep, client);
      await sweepMirrors(sweep, kept);
      await sweepCache(sweep, join(dataDir, 'cache', 'reviews'), 'review-cache', ['.json']);
      await sweepCache(sweep, join(dataDir, 'cache', 'gates'), 'gate-cache', ['.json', '.log']);
      // Environments after the runs: a removed run holds none any more.
      await sweepEnvironments(sweep);

      report.endedAt = new Date().toISOString();
      log.info('retention: sweep done', {
        hostId,
        removed: report.removed.length,
        bytesFreed: report.bytesFreed,
        keptRuns: report.keptRuns.length,
        problems: report.problems.length,
      });
      return report;
    },
  };
}
