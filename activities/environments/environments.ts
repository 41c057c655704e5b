import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { lstat, mkdir, open, readdir, readFile, rename, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { log } from '@temporalio/activity';
import type Docker from 'dockerode';
import { declarationDigestText, environmentKeyText, type EnvironmentDeclaration } from '../../core/environment';
import { baseImageFor, imageIdOf } from './environment-base';
import { defaultRunnerImage } from '../../core/gate-file';
import type { EgressEntry, EnvironmentFailure, EnvironmentRef } from '../../core/environment-types';
import { narrowAllow } from '../../policies/egress';
import { labelKeys, runStepContainer } from '../containers/containers';
import { startEgressGateway, type EgressConnection } from '../gateways/egress-gateway';
import { egressMount, egressPort, egressToolsMount, runSetupContainer, setupMount, writeSetupFiles } from './environment-setup';
import { containerUser, gitArgs, handToContainerUser } from '../git/git';
import { leanPipe, leanRun } from '../git/lean-spawn';
import { dataRef, runPaths, writeFileAtomic } from '../stores/run-store';

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
const recordName = 'environment.json';
/** A run marks the environments it uses here (`runs/<id>/environments/<key>`): the collection keeps them while the run's directory exists. */
const inUseDir = (dataDir: string, runId: string) => join(runPaths(dataDir, runId).runDir, 'environments');

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

const keyHex = (key: string) => key.replace(/^sha256:/, '');

/** A connection as the run's outcome records it (the full record stays in the run's logs and the environment's record). */
export const egressEntry = ({ host, port, allowed, bytesUp, bytesDown, reason, error }: EgressConnection): EgressEntry => ({ host, port, allowed, bytesUp, bytesDown, ...(reason ? { reason } : {}), ...(error ? { error } : {}) });

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

/** Disk use of a directory in bytes (du: it does not follow links). */
async function diskBytes(path: string): Promise<number> {
  const du = await leanRun({ command: 'du', args: ['-s', '-B1', path] });
  return Number(du.stdout.toString('utf8').split('\t')[0]) || 0;
}

/** The last lines of a log, for a failure's message. */
async function logTail(path: string, lines = 20): Promise<string> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).slice(-lines).join('\n');
}

/** A failing setup command's index and text, from the wrapper's markers in the log (a setup can forge them: they only shape its own message). */
function failingCommand(logText: string, declaration: EnvironmentDeclaration): { index?: number; command?: string } {
  const matches = [...logText.matchAll(/\[tarmac\] setup\[(\d+)\] exited (\d+)/g)];
  const last = matches.at(-1);
  if (!last) return {};
  const index = Number(last[1]);
  return { index, command: declaration.setup[index] };
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

  const refOf = (record: EnvironmentRecord, cache: 'hit' | 'miss'): EnvironmentRef => ({
    key: record.key,
    image: record.baseImage,
    products: record.products,
    env: record.declaration.env,
    cache,
    buildMs: record.buildMs,
    egress: record.egress.map(egressEntry),
  });

  /** Takes the key's build lock on the host; a lock left by a dead process (a killed worker) is taken over. */
  const lock = async (hex: string): Promise<() => Promise<void>> => {
    const path = join(environmentsDir(dataDir), `${hex}.lock`);
    for (let tries = 0; ; tries += 1) {
      try {
        const handle = await open(path, 'wx');
        await handle.writeFile(JSON.stringify({ pid: process.pid, hostId, at: new Date().toISOString() }));
        await handle.close();
        return async () => void (await rm(path, { force: true }));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        const held = await readFile(path, 'utf8')
          .then((text) => JSON.parse(text) as { pid: number })
          .catch(() => undefined);
        const alive = held !== undefined && held.pid !== process.pid && (() => {
          try {
            process.kill(held.pid, 0);
            return true;
          } catch {
            return false;
          }
        })();
        if (alive && tries < 600) {
          await new Promise((resolve) => setTimeout(resolve, 1_000));
          continue;
        }
        // Its holder is gone (or is this process, which holds no build of this key here): a stale lock.
        await rm(path, { force: true });
      }
    }
  };

  const build = async (input: PrepareEnvironmentInput, key: string, baseImage: string, baseImageId: string, inputs: EnvironmentRecord['inputs']): Promise<PrepareEnvironmentResult> => {
    const { runId, repo, commitSha, baseSha, declaration } = input;
    const hex = keyHex(key);
    const root = environmentsDir(dataDir);
    await mkdir(root, { recursive: true });
    const release = await lock(hex);
    try {
      // Someone finished it while this build waited for the lock.
      const done = await readEnvironment(dataDir, key);
      if (done) return { ok: true, environment: refOf(done, 'hit') };
      // A build directory of this key left by a killed worker is nobody's: it goes.
      for (const name of await readdir(root)) if (name.startsWith(`${hex}.build-`)) await rm(join(root, name), { recursive: true, force: true });
      const work = join(root, `${hex}.build-${randomBytes(4).toString('hex')}`);
      const setupDir = join(work, 'setup');
      await mkdir(join(setupDir, 'inputs'), { recursive: true });
      await writeSetupFiles(setupDir, declaration.setup);
      const present = inputs.filter((entry): entry is { path: string; oid: string; mode: string } => !('absent' in entry)).map((entry) => entry.path);
      if (present.length > 0) {
        const [archive, tar] = await leanPipe({ command: 'git', args: gitArgs(runPaths(dataDir, runId).worktree, 'archive', '--format=tar', commitSha, '--', ...present) }, { command: 'tar', args: ['-x', '-C', join(setupDir, 'inputs')], stdout: 'ignore' });
        if (archive.code !== 0 || tar.code !== 0) throw new Error(`the environment's inputs could not be exported: ${archive.stderr.toString('utf8').trim()} ${tar.stderr.toString('utf8').trim()}`);
      }
      await handToContainerUser(join(setupDir, 'inputs'));
      const logs = runPaths(dataDir, runId).logs;
      await mkdir(logs, { recursive: true });
      const logFile = join(logs, `environment-${hex.slice(0, 12)}.log`);
      const egressDir = join(work, 'egress');
      await mkdir(egressDir, { recursive: true });
      const allow = narrowAllow(deps.egressAllow, declaration.egress);
      // Every connection in the run's own logs as it ends (and in the environment's record once built).
      const gateway = await startEgressGateway({ dir: egressDir, allow: allow.hosts, recordPath: join(logs, `environment-${hex.slice(0, 12)}-egress.jsonl`) });
      const startedAt = Date.now();
      let setup;
      try {
        const proxy = `http://127.0.0.1:${egressPort}`;
        const env = [
          ...Object.entries(declaration.env).map(([name, value]) => `${name}=${value}`),
          ...Object.entries(deps.setupEnv ?? {}).map(([name, value]) => `${name}=${value}`),
          'HOME=/tmp/home',
          'CI=1',
          `TARMAC_ENVIRONMENT=${key}`,
          ...['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'npm_config_proxy', 'npm_config_https_proxy'].map((name) => `${name}=${proxy}`),
          'NO_PROXY=',
          'no_proxy=',
          ...(caBundle ? ['SSL_CERT_FILE', 'NODE_EXTRA_CA_CERTS', 'npm_config_cafile', 'PIP_CERT', 'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE', 'GIT_SSL_CAINFO'].map((name) => `${name}=${egressToolsMount}/ca.crt`) : []),
        ];
        setup = await runSetupContainer(docker, {
          labels: { [labelKeys.run]: runId, [labelKeys.step]: `environment-${hex.slice(0, 16)}`, [labelKeys.role]: 'environment', 'tarmac.environment': hex, 'tarmac.host': hostId },
          image: baseImage,
          user: `${user.uid}:${user.gid}`,
          env,
          binds: [
            `${setupDir}:${setupMount}:ro`,
            `${dirname(gateway.socketPath)}:${egressMount}:ro`,
            `${process.execPath}:${egressToolsMount}/node:ro`,
            `${forwarderPath()}:${egressToolsMount}/tarmac-forward:ro`,
            ...(caBundle ? [`${caBundle}:${egressToolsMount}/ca.crt:ro`] : []),
          ],
          maxBytes,
          timeoutMs: declaration.timeoutMs,
          memoryBytes: 4 * 1024 ** 3,
          logFile,
          resultFile: join(work, 'result.tar'),
          maxLogBytes: 16 * 1024 * 1024,
        });
      } finally {
        await gateway.close().catch(() => undefined);
      }
      const egress = gateway.record();
      const refused = [...new Set(egress.filter((entry) => !entry.allowed && entry.host).map((entry) => `${entry.host}:${entry.port}`))];
      const baseInputs = await readInputs(runPaths(dataDir, runId).worktree, baseSha, declaration.inputs).catch(() => undefined);
      const branchChangedInputs = JSON.stringify(baseInputs) !== JSON.stringify(inputs);
      const failed = (why: string): PrepareEnvironmentResult => ({ ok: false, failure: { key, why, branchChangedInputs, exitCode: setup.exitCode, logRef: dataRef(dataDir, logFile), logTail: '', refused, egress: egress.map(egressEntry), ...(allow.refusedDeclared.length ? { refusedDeclared: allow.refusedDeclared } : {}) } });
      if (setup.exitCode !== 0) {
        const tail = await logTail(logFile);
        const which = failingCommand(tail, declaration);
        const why = setup.timedOut
          ? `the setup did not finish within its timeout (${Math.round(declaration.timeoutMs / 1000)} s)`
          : setup.tooLarge
            ? `the setup's files passed the environment's limit of ${maxBytes} bytes`
            : setup.oomKilled
              ? 'the setup ran out of memory'
              : which.command !== undefined
                ? `setup[${which.index}] \`${which.command}\` exited ${setup.exitCode}`
                : `the setup exited ${setup.exitCode}`;
        const result = failed(why);
        if (!result.ok) Object.assign(result.failure, { logTail: tail, ...(which.index !== undefined ? { index: which.index, command: which.command } : {}) });
        await rm(work, { recursive: true, force: true });
        return result;
      }
      // The result stream is untrusted: a container of the runner image extracts it (links and
      // names resolve in its own file system, never the host's); only what lands in root/ is kept.
      const rootDir = join(work, 'root');
      await mkdir(rootDir, { recursive: true });
      await handToContainerUser(rootDir);
      await handToContainerUser(join(work, 'result.tar'));
      const unpacked = await runStepContainer(docker, {
        // Named by the build's own directory: a later build of the key never reattaches to this one's container.
        labels: { [labelKeys.run]: runId, [labelKeys.step]: `environment-collect-${basename(work)}`, [labelKeys.role]: 'environment', 'tarmac.environment': hex },
        image: defaultRunnerImage,
        entrypoint: ['tar'],
        cmd: ['-x', '--no-same-owner', '-f', '/in/result.tar', '-C', '/out'],
        user: `${user.uid}:${user.gid}`,
        env: [],
        binds: [`${join(work, 'result.tar')}:/in/result.tar:ro`, `${rootDir}:/out:rw`],
        workingDir: '/out',
        timeoutMs: 10 * 60_000,
        logFile: join(logs, `environment-${hex.slice(0, 12)}-collect.log`),
      });
      await rm(join(work, 'result.tar'), { force: true });
      if (unpacked.exitCode !== 0) {
        await rm(work, { recursive: true, force: true });
        return failed(`the setup's files could not be unpacked (tar exited ${unpacked.exitCode}; see ${dataRef(dataDir, join(logs, `environment-${hex.slice(0, 12)}-collect.log`))})`);
      }
      const inputFiles = new Set(present);
      const products = await listProducts(rootDir, inputFiles);
      const record: EnvironmentRecord = {
        version: 1,
        key,
        repo,
        baseImage,
        baseImageId,
        declaration,
        inputs,
        products,
        sizeBytes: await diskBytes(rootDir),
        builtAt: new Date().toISOString(),
        builtBy: { runId, hostId },
        buildMs: Date.now() - startedAt,
        egress,
      };
      await rm(setupDir, { recursive: true, force: true });
      await rm(egressDir, { recursive: true, force: true });
      await writeFileAtomic(join(work, recordName), JSON.stringify(record, null, 2));
      await rename(work, join(root, hex));
      log.info('environment built', { runId, key, products: products.length, sizeBytes: record.sizeBytes, buildMs: record.buildMs, egress: egress.length });
      return { ok: true, environment: refOf(record, 'miss') };
    } finally {
      await release();
    }
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
        return { ok: false, failure: { key, why: base.why, exitCode: null, logRef: dataRef(dataDir, baseLog), logTail: base.log, refused: [], egress: [], branchChangedInputs: JSON.stringify(baseInputs) !== JSON.stringify(headInputs) } };
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
      const pending = waiting ?? build(input, key, baseImage, baseImageId, inputs).finally(() => building.delete(key));
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
      const [baseImageId, inputs] = await Promise.all([imageIdOf(docker, baseImage), readInputs(runPaths(dataDir, runId).worktree, commitSha, declaration.inputs)]);
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

/** The model forwarder of images/shared, which forwards any TCP connection to a unix socket: the egress one here. */
function forwarderPath(): string {
  return join(__dirname, '..', '..', 'images', 'shared', 'tarmac-forward');
}

export type EnvironmentActivities = ReturnType<typeof createEnvironmentActivities>;
