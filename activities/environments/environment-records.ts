import { existsSync } from 'node:fs';
import { lstat, readdir, readFile, stat, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { EnvironmentDeclaration } from '../../core/environment';
import type { EgressEntry, EnvironmentFailure, EnvironmentRef } from '../../core/environment-types';
import type { EgressConnection } from '../gateways/egress-gateway';
import { gitArgs } from '../git/git';
import { leanRun } from '../git/lean-spawn';
import { runPaths } from '../stores/run-store';

/** An environment on the host (environments.ts): where it lives, its record, its inputs and products. */

export interface PrepareEnvironmentInput {
  runId: string;
  repo: string;
  /** The commit whose tree is under test: the inputs are read from it. */
  commitSha: string;
  /** The commit the tree is rebased onto: a failed build says whether the branch changed the inputs. */
  baseSha: string;
  declaration: EnvironmentDeclaration;
  /** The image when the declaration names none: the gate file's, else the runner. */
  fallbackImage?: string;
}

export type PrepareEnvironmentResult = { ok: true; environment: EnvironmentRef } | { ok: false; failure: EnvironmentFailure };

/** Where the host keeps its environments. */
export const environmentsDir = (dataDir: string) => join(dataDir, 'cache', 'environments');
/** The mount point of an environment's files in gate and command containers. */
export const environmentMount = '/tarmac/env';
/** The host directory of an environment's files: what gate and command containers mount at `environmentMount`. */
export const environmentRoot = (dataDir: string, key: string) => join(environmentsDir(dataDir), key.replace(/^sha256:/, ''), 'root');
/** The file an environment directory is complete with. */
export const recordName = 'environment.json';
/** A run marks the environments it uses here (`runs/<id>/environments/<key>`): the collection keeps them while the run's directory exists. */
export const inUseDir = (dataDir: string, runId: string) => join(runPaths(dataDir, runId).runDir, 'environments');

export interface EnvironmentRecord {
  version: 1;
  key: string;
  repo: string;
  baseImage: string;
  baseImageId: string;
  declaration: EnvironmentDeclaration;
  inputs: Array<{ path: string; oid: string; mode: string } | { path: string; absent: true }>;
  products: string[];
  sizeBytes: number;
  builtAt: string;
  builtBy: { runId: string; hostId: string };
  buildMs: number;
  egress: EgressConnection[];
}

/** The blobs of the declared inputs in a commit's tree (a path absent there counts as absent). */
export async function readInputs(worktree: string, commitSha: string, inputs: string[]): Promise<EnvironmentRecord['inputs']> {
  // Through the spawn helper: this runs beside a landing's rebase, where a fork of the worker would stall it.
  const listed = await leanRun({ command: 'git', args: gitArgs(worktree, 'ls-tree', '-r', '-z', '--full-tree', commitSha, '--', ...inputs) });
  if (listed.code !== 0) throw new Error(`git ls-tree ${commitSha} exited ${listed.code}: ${listed.stderr.toString('utf8').trim()}`);
  const out = listed.stdout.toString('utf8');
  const entries = out
    .split('\0')
    .filter(Boolean)
    .map((line) => {
      const [meta, path] = line.split('\t') as [string, string];
      const [mode, , oid] = meta.split(' ') as [string, string, string];
      return { path, oid, mode };
    });
  const found: EnvironmentRecord['inputs'] = [];
  for (const input of inputs) {
    const under = entries.filter((entry) => entry.path === input || entry.path.startsWith(`${input}/`));
    if (under.length === 0) found.push({ path: input, absent: true });
    else found.push(...under);
  }
  return found;
}

/** The paths the setup produced: every entry of the root that is not an input, collapsed to the highest directory that holds no input. */
export async function listProducts(root: string, inputFiles: Set<string>, prefix = ''): Promise<string[]> {
  const products: string[] = [];
  for (const name of (await readdir(join(root, prefix))).sort()) {
    const path = prefix ? `${prefix}/${name}` : name;
    if (inputFiles.has(path)) continue;
    const info = await lstat(join(root, path));
    const holdsInput = [...inputFiles].some((input) => input.startsWith(`${path}/`));
    // A directory that holds an input is walked into (never a link: lstat says what it is itself).
    if (holdsInput && info.isDirectory()) products.push(...(await listProducts(root, inputFiles, path)));
    else if (!holdsInput) products.push(path);
  }
  return products;
}

/**
 * Links each product into a tree's snapshot, where the tree has nothing at that path and every
 * directory on the way is a real directory of the tree (lstat: a link the branch committed is never
 * followed on the host). Returns the paths linked.
 */
export async function linkProducts(snapshot: string, products: string[]): Promise<string[]> {
  const linked: string[] = [];
  for (const product of products) {
    const parts = product.split('/');
    let real = true;
    for (let depth = 1; depth < parts.length && real; depth += 1) {
      const info = await lstat(join(snapshot, ...parts.slice(0, depth))).catch(() => undefined);
      real = info?.isDirectory() === true;
    }
    if (!real) continue;
    const at = join(snapshot, product);
    if (await lstat(at).catch(() => undefined)) continue;
    await symlink(`${environmentMount}/${product}`, at);
    linked.push(product);
  }
  return linked;
}

export const keyHex = (key: string) => key.replace(/^sha256:/, '');

/** A connection as the run's outcome records it (the full record stays in the run's logs and the environment's record). */
export const egressEntry = ({ host, port, allowed, bytesUp, bytesDown, reason, error }: EgressConnection): EgressEntry => ({
  host,
  port,
  allowed,
  bytesUp,
  bytesDown,
  ...(reason ? { reason } : {}),
  ...(error ? { error } : {}),
});

/** An environment's record, when its directory is complete and says what its name says. */
export async function readEnvironment(dataDir: string, key: string): Promise<EnvironmentRecord | undefined> {
  const dir = join(environmentsDir(dataDir), keyHex(key));
  const text = await readFile(join(dir, recordName), 'utf8').catch(() => undefined);
  if (!text) return undefined;
  try {
    const record = JSON.parse(text) as EnvironmentRecord;
    if (record.version !== 1 || record.key !== key || !Array.isArray(record.products) || !existsSync(join(dir, 'root'))) return undefined;
    return record;
  } catch {
    return undefined;
  }
}

/** Every complete environment of the host, with when it was last used. */
export async function listEnvironments(dataDir: string): Promise<Array<EnvironmentRecord & { lastUsedAt: string; usedBy: string[] }>> {
  const root = environmentsDir(dataDir);
  const names = await readdir(root).catch(() => [] as string[]);
  const inUse = await runsUsing(dataDir);
  const found = await Promise.all(
    names
      .filter((name) => /^[0-9a-f]{64}$/.test(name))
      .map(async (name) => {
        const record = await readEnvironment(dataDir, `sha256:${name}`);
        if (!record) return undefined;
        // Collected between the two reads (the worker's LRU, while the API lists): not listed.
        const used = await stat(join(root, name, recordName)).catch(() => undefined);
        if (!used) return undefined;
        return { ...record, lastUsedAt: used.mtime.toISOString(), usedBy: inUse.get(record.key) ?? [] };
      }),
  );
  return found.filter((entry): entry is NonNullable<typeof entry> => entry !== undefined);
}

/** The environments runs on this host still hold (their directories exist), by key. */
async function runsUsing(dataDir: string): Promise<Map<string, string[]>> {
  const using = new Map<string, string[]>();
  const runs = await readdir(join(dataDir, 'runs')).catch(() => [] as string[]);
  await Promise.all(
    runs.map(async (runId) => {
      for (const name of await readdir(inUseDir(dataDir, runId)).catch(() => [] as string[])) {
        const key = `sha256:${name}`;
        using.set(key, [...(using.get(key) ?? []), runId]);
      }
    }),
  );
  return using;
}

/** The environment a landing is given: its key, base image, products, env and egress. */
export function refOf(record: EnvironmentRecord, cache: 'hit' | 'miss'): EnvironmentRef {
  return {
    key: record.key,
    image: record.baseImage,
    products: record.products,
    env: record.declaration.env,
    cache,
    buildMs: record.buildMs,
    egress: record.egress.map(egressEntry),
  };
}
