import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rm, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { log } from '@temporalio/activity';
import type Docker from 'dockerode';
import { declarationDigestText, environmentKeyText } from '../../core/environment';
import { baseImageFor, imageIdOf } from './environment-base';
import { defaultRunnerImage } from '../../core/gate-file';
import type { EnvironmentRef } from '../../core/environment-types';
import { containerUser } from '../git/git';
import { dataRef, runPaths } from '../stores/run-store';
import { buildEnvironment } from './environment-build';
import {
  environmentsDir,
  inUseDir,
  keyHex,
  listEnvironments,
  readEnvironment,
  readInputs,
  recordName,
  refOf,
  type PrepareEnvironmentInput,
  type PrepareEnvironmentResult,
} from './environment-records';

export {
  environmentMount,
  environmentRoot,
  environmentsDir,
  linkProducts,
  listEnvironments,
  readEnvironment,
  type EnvironmentRecord,
  type PrepareEnvironmentInput,
  type PrepareEnvironmentResult,
} from './environment-records';

/**
 * Environments (issue 24): what a repository's gates and agents run in — a base image plus the
 * files its setup produced (node_modules, a venv), built once per key and shared by every landing
 * whose inputs are the same.
 *
 * The key is the digest of the declaration, the base image's ID and the declared inputs' blobs in
 * the tree under test (core/environment.ts). The setup sees exactly those inputs — nothing else of
 * the tree — so what it builds is a function of its key, and a landing can never poison another
 * landing's environment with a file outside the key.
 *
 * On the host: `<dataDir>/cache/environments/<key>/` holds `environment.json` (written last) and
 * `root/` (the setup's workspace, inputs included). A directory under that name is complete: a
 * build happens in `<key>.build-<nonce>/` and is renamed into place, so a worker killed mid-build
 * leaves a build directory no one uses; the next build removes it and starts over.
 *
 * Gates mount `root/` read-only at `/tarmac/env`; the tree's snapshot gets a link at each path the
 * setup produced that the tree does not track (`node_modules -> /tarmac/env/node_modules`): the
 * tree under test is exactly as committed, and a setup's output never shadows a tracked file.
 */

export interface EnvironmentDeps {
  dataDir: string;
  hostId: string;
  docker: Docker;
  /** The operator's egress allow-list (`TARMAC_EGRESS_ALLOW`): a declaration may narrow it, never widen it. */
  egressAllow: string[];
  /** Environment entries every setup gets (`TARMAC_SETUP_ENV`: a registry's URL, an index); never the worker's secrets. */
  setupEnv?: Record<string, string>;
  /** The CA bundle a setup trusts (`TARMAC_EGRESS_CA`); default the host's system bundle when there is one. */
  caBundle?: string;
  /** Most bytes an environment's files may take (`TARMAC_ENV_MAX_BYTES`, default 4 GiB). */
  maxBytes?: number;
  /** Most bytes all environments of the host may take before the least recently used go (`TARMAC_ENV_CACHE_MAX`, default 20 GiB). */
  cacheMaxBytes?: number;
  /**
   * Told each time a landing uses an environment the host has (a lookup's hit, a prepare's hit or
   * build): the worker's warm gate pool keeps a container for the most recent keys. Default none.
   */
  onUsed?: (environment: EnvironmentRef) => void;
}

export function createEnvironmentActivities(deps: EnvironmentDeps) {
  const { dataDir, hostId, docker } = deps;
  const user = containerUser();
  const maxBytes = deps.maxBytes ?? 4 * 1024 ** 3;
  const cacheMaxBytes = deps.cacheMaxBytes ?? 20 * 1024 ** 3;
  const caBundle = deps.caBundle ?? ['/etc/ssl/certs/ca-certificates.crt', '/etc/pki/tls/certs/ca-bundle.crt'].find((path) => existsSync(path));
  /** Builds in flight in this process, by key: a second landing that needs the key waits for the first. */
  const building = new Map<string, Promise<PrepareEnvironmentResult>>();

  /** Marks the environment as used by the run (the collection keeps it) and as used now (LRU). */
  const markUsed = async (runId: string, key: string) => {
    const marks = inUseDir(dataDir, runId);
    await mkdir(marks, { recursive: true });
    await writeFile(join(marks, keyHex(key)), `${new Date().toISOString()}\n`);
    const now = new Date();
    await utimes(join(environmentsDir(dataDir), keyHex(key), recordName), now, now).catch(() => undefined);
  };

  /** Tells the host (its gate pool) a landing uses this environment now; never fails the step. */
  const used = (environment: EnvironmentRef): EnvironmentRef => {
    try {
      deps.onUsed?.(environment);
    } catch (error) {
      log.warn('the gate pool was not told of an environment in use', { error: String(error) });
    }
    return environment;
  };

  /** Removes the least recently used environments no run on this host holds, until the rest fit `cacheMaxBytes`. */
  const collect = async (): Promise<string[]> => {
    const all = (await listEnvironments(dataDir)).sort((a, b) => a.lastUsedAt.localeCompare(b.lastUsedAt));
    let total = all.reduce((sum, entry) => sum + entry.sizeBytes, 0);
    const removed: string[] = [];
    for (const entry of all) {
      if (total <= cacheMaxBytes) break;
      if (entry.usedBy.length > 0) continue;
      await rm(join(environmentsDir(dataDir), keyHex(entry.key)), { recursive: true, force: true });
      total -= entry.sizeBytes;
      removed.push(entry.key);
    }
    return removed;
  };

  return {
    /**
     * The environment of a tree: its key from the declaration, the base image and the inputs in
     * that tree; reused when the host has it (ENV_CACHE=hit), else built once (ENV_CACHE=miss).
     * A setup that fails is data (`ok: false`, the command, exit code and log tail), not an
     * activity failure: the landing decides what it means.
     */
    prepareEnvironment: async (input: PrepareEnvironmentInput): Promise<PrepareEnvironmentResult> => {
      const { runId, commitSha, declaration } = input;
      const worktree = runPaths(dataDir, runId).worktree;
      const baseLog = join(runPaths(dataDir, runId).logs, `environment-base-${commitSha.slice(0, 12)}.log`);
      const base = await baseImageFor(docker, worktree, commitSha, declaration, input.fallbackImage, baseLog);
      if (!base.ok) {
        const key = `sha256:${createHash('sha256').update(declarationDigestText(declaration)).digest('hex')}`;
        const baseInputs = await readInputs(worktree, input.baseSha, declaration.inputs).catch(() => undefined);
        const headInputs = await readInputs(worktree, commitSha, declaration.inputs).catch(() => undefined);
        return {
          ok: false,
          failure: {
            key,
            why: base.why,
            exitCode: null,
            logRef: dataRef(dataDir, baseLog),
            logTail: base.log,
            refused: [],
            egress: [],
            branchChangedInputs: JSON.stringify(baseInputs) !== JSON.stringify(headInputs),
          },
        };
      }
      const { image: baseImage, imageId: baseImageId } = base;
      const inputs = await readInputs(runPaths(dataDir, runId).worktree, commitSha, declaration.inputs);
      const key = `sha256:${createHash('sha256').update(environmentKeyText({ declaration, baseImageId, inputs })).digest('hex')}`;
      const found = await readEnvironment(dataDir, key);
      if (found) {
        await markUsed(runId, key);
        return { ok: true, environment: used(refOf(found, 'hit')) };
      }
      // A landing that needs a key another is building waits for that build: one build, and for the waiter a hit.
      const waiting = building.get(key);
      const pending =
        waiting ??
        buildEnvironment(
          { dataDir, hostId, docker, user, maxBytes, caBundle, egressAllow: deps.egressAllow, ...(deps.setupEnv ? { setupEnv: deps.setupEnv } : {}) },
          input,
          { key, baseImage, baseImageId, inputs },
        ).finally(() => building.delete(key));
      if (!waiting) building.set(key, pending);
      const built = await pending;
      const result: PrepareEnvironmentResult = waiting && built.ok ? { ok: true, environment: { ...built.environment, cache: 'hit' } } : built;
      if (result.ok) {
        await markUsed(runId, key);
        await collect().catch((error: unknown) => {
          log.warn('environments not collected', { error: String(error) });
        });
        used(result.environment);
      }
      return result;
    },
    /**
     * The environment of a tree when the host already has it (a hit), else undefined: nothing is
     * built. The landing's placement asks this beside its rebase, so a hit costs the gate no trip.
     * A Dockerfile's base is not built here either (undefined when it is not built yet).
     */
    lookupEnvironment: async (input: Omit<PrepareEnvironmentInput, 'baseSha'>): Promise<EnvironmentRef | undefined> => {
      const { runId, commitSha, declaration } = input;
      if (declaration.dockerfile) return undefined;
      const baseImage = declaration.image ?? input.fallbackImage ?? defaultRunnerImage;
      const [baseImageId, inputs] = await Promise.all([
        imageIdOf(docker, baseImage),
        readInputs(runPaths(dataDir, runId).worktree, commitSha, declaration.inputs),
      ]);
      if (!baseImageId) return undefined;
      const key = `sha256:${createHash('sha256').update(environmentKeyText({ declaration, baseImageId, inputs })).digest('hex')}`;
      const found = await readEnvironment(dataDir, key);
      if (!found) return undefined;
      await markUsed(runId, key);
      return used(refOf(found, 'hit'));
    },
    collectEnvironments: collect,
  };
}

export type EnvironmentActivities = ReturnType<typeof createEnvironmentActivities>;
