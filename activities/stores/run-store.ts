import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { repoName } from '../../core/node/landing-id';

/** Where a run keeps its files on the host that prepared it. */
export interface RunPaths {
  runDir: string;
  worktree: string;
  logs: string;
  snapshots: string;
  manifest: string;
  outcome: string;
}

export function runPaths(dataDir: string, runId: string): RunPaths {
  const runDir = join(dataDir, 'runs', runId);
  return {
    runDir,
    worktree: join(runDir, 'worktree'),
    logs: join(runDir, 'logs'),
    snapshots: join(runDir, 'snapshots'),
    manifest: join(runDir, 'manifest.json'),
    outcome: join(runDir, 'outcome.json'),
  };
}

/** The bare mirror of a repository: one per repo location, shared by runs on this host. */
export function mirrorPath(dataDir: string, repo: string): string {
  const digest = createHash('sha256').update(repo).digest('hex').slice(0, 10);
  return join(dataDir, 'mirrors', `${repoName(repo).replace(/[^A-Za-z0-9._-]/g, '_')}-${digest}.git`);
}

/** A path inside the data dir as recorded in history: relative, so it survives a moved data dir. */
export function dataRef(dataDir: string, path: string): string {
  return relative(dataDir, path);
}

/**
 * Everything a run created that cleanup may remove. Cleanup reads this and nothing
 * else: it never globs refs, prunes worktrees or removes containers by name.
 */
export interface Manifest {
  runId: string;
  repo: string;
  mirror: string;
  hostId: string;
  createdAt: string;
  /** Worktrees added to the mirror for this run. */
  worktrees: string[];
  /** Directories the run created (gate snapshots). */
  dirs: string[];
  /** Containers are ours when they carry this label value for `tarmac.run`. */
  containerRunLabel: string;
}

/**
 * Writes a file atomically: temp file, fsync, rename. A reader sees the old or the new content.
 * Each write has a temp file of its own: two writes of one path in the same millisecond (parallel
 * reviewer sessions recording in one manifest) must never share one and interleave their bytes.
 */
export async function writeFileAtomic(path: string, content: string | Uint8Array, { durable = true }: { durable?: boolean } = {}): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const handle = await open(temp, 'w');
  try {
    await handle.writeFile(content);
    // Durable: on disk before it replaces the old file (survives a power loss, not only a crash).
    if (durable) await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, path);
}

export async function readManifest(path: string): Promise<Manifest | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as Manifest;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** The manifest updates of this process, one after the other per path (read, merge, write is not atomic). */
const manifestUpdates = new Map<string, Promise<unknown>>();

/**
 * Adds entries to a run's manifest, creating it if needed; entries are recorded once. Updates of one
 * manifest in this process run one at a time, so parallel sessions of a run never lose each other's entries.
 */
export async function recordInManifest(
  path: string,
  base: Omit<Manifest, 'worktrees' | 'dirs'>,
  add: { worktrees?: string[]; dirs?: string[] },
): Promise<Manifest> {
  const previous = manifestUpdates.get(path) ?? Promise.resolve();
  const update = previous.catch(() => undefined).then(() => mergeIntoManifest(path, base, add));
  manifestUpdates.set(path, update);
  try {
    return await update;
  } finally {
    if (manifestUpdates.get(path) === update) manifestUpdates.delete(path);
  }
}

async function mergeIntoManifest(path: string, base: Omit<Manifest, 'worktrees' | 'dirs'>, add: { worktrees?: string[]; dirs?: string[] }): Promise<Manifest> {
  const current = (await readManifest(path)) ?? { ...base, worktrees: [], dirs: [] };
  const merged: Manifest = {
    ...current,
    worktrees: [...new Set([...current.worktrees, ...(add.worktrees ?? [])])],
    dirs: [...new Set([...current.dirs, ...(add.dirs ?? [])])],
  };
  await writeFileAtomic(path, `${JSON.stringify(merged, null, 2)}\n`);
  return merged;
}
