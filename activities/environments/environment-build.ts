import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { log } from '@temporalio/activity';
import type Docker from 'dockerode';
import type { EnvironmentDeclaration } from '../../core/environment';
import { defaultRunnerImage } from '../../core/gate-file';
import { narrowAllow } from '../../policies/egress';
import { labelKeys, runStepContainer } from '../containers/containers';
import { startEgressGateway, type EgressConnection } from '../gateways/egress-gateway';
import { gitArgs, handToContainerUser } from '../git/git';
import { leanPipe, leanRun } from '../git/lean-spawn';
import { dataRef, runPaths, writeFileAtomic } from '../stores/run-store';
import { egressMount, egressPort, egressToolsMount, runSetupContainer, setupMount, writeSetupFiles } from './environment-setup';
import {
  egressEntry,
  environmentsDir,
  keyHex,
  listProducts,
  readEnvironment,
  readInputs,
  recordName,
  refOf,
  type EnvironmentRecord,
  type PrepareEnvironmentInput,
  type PrepareEnvironmentResult,
} from './environment-records';

/** What a build needs of the environment activities' dependencies (environments.ts), defaults taken. */
interface BuildContext {
  dataDir: string;
  hostId: string;
  docker: Docker;
  user: { uid: number; gid: number };
  maxBytes: number;
  caBundle: string | undefined;
  egressAllow: string[];
  setupEnv?: Record<string, string>;
}

/** What the key names: the key, the base image and the inputs' blobs. */
interface Keyed {
  key: string;
  baseImage: string;
  baseImageId: string;
  inputs: EnvironmentRecord['inputs'];
}

/**
 * Builds the key's environment under the host's build lock: the setup runs in its container on the
 * inputs only, behind the egress gateway; its files are unpacked by a runner container and renamed
 * into place with their record. A failed setup is data, not an error.
 */
export async function buildEnvironment(ctx: BuildContext, input: PrepareEnvironmentInput, keyed: Keyed): Promise<PrepareEnvironmentResult> {
  const { dataDir } = ctx;
  const { key } = keyed;
  const hex = keyHex(key);
  const root = environmentsDir(dataDir);
  await mkdir(root, { recursive: true });
  const release = await takeBuildLock(root, ctx.hostId, hex);
  try {
    // Someone finished it while this build waited for the lock.
    const done = await readEnvironment(dataDir, key);
    if (done) return { ok: true, environment: refOf(done, 'hit') };
    // A build directory of this key left by a killed worker is nobody's: it goes.
    for (const name of await readdir(root)) if (name.startsWith(`${hex}.build-`)) await rm(join(root, name), { recursive: true, force: true });
    const work = join(root, `${hex}.build-${randomBytes(4).toString('hex')}`);
    const present = await writeSetupDir(ctx, input, work, keyed.inputs);
    const logs = runPaths(dataDir, input.runId).logs;
    await mkdir(logs, { recursive: true });
    const logFile = join(logs, `environment-${hex.slice(0, 12)}.log`);
    const ran = await runSetup(ctx, input, { key, hex, baseImage: keyed.baseImage, work, logs, logFile });
    const { setup, egress, allow } = ran;
    const refused = [...new Set(egress.filter((entry) => !entry.allowed && entry.host).map((entry) => `${entry.host}:${entry.port}`))];
    const baseInputs = await readInputs(runPaths(dataDir, input.runId).worktree, input.baseSha, input.declaration.inputs).catch(() => undefined);
    const branchChangedInputs = JSON.stringify(baseInputs) !== JSON.stringify(keyed.inputs);
    const failed = (why: string): PrepareEnvironmentResult => ({
      ok: false,
      failure: {
        key,
        why,
        branchChangedInputs,
        exitCode: setup.exitCode,
        logRef: dataRef(dataDir, logFile),
        logTail: '',
        refused,
        egress: egress.map(egressEntry),
        ...(allow.refusedDeclared.length ? { refusedDeclared: allow.refusedDeclared } : {}),
      },
    });
    if (setup.exitCode !== 0) {
      const result = await setupFailure(ctx, input.declaration, setup, logFile, failed);
      await rm(work, { recursive: true, force: true });
      return result;
    }
    const unpacked = await unpackResult(ctx, { runId: input.runId, hex, work, logs });
    if (unpacked.exitCode !== 0) {
      await rm(work, { recursive: true, force: true });
      return failed(`the setup's files could not be unpacked (tar exited ${unpacked.exitCode}; see ${dataRef(dataDir, unpacked.logFile)})`);
    }
    const record = await storeRecord(ctx, input, keyed, { work, root, hex, present, startedAt: ran.startedAt, egress });
    return { ok: true, environment: refOf(record, 'miss') };
  } finally {
    await release();
  }
}

/** The setup's directory: its scripts, and the declared inputs exported from the tree under test. Returns the inputs present. */
async function writeSetupDir(ctx: BuildContext, input: PrepareEnvironmentInput, work: string, inputs: EnvironmentRecord['inputs']): Promise<string[]> {
  const setupDir = join(work, 'setup');
  await mkdir(join(setupDir, 'inputs'), { recursive: true });
  await writeSetupFiles(setupDir, input.declaration.setup);
  const present = inputs.filter((entry): entry is { path: string; oid: string; mode: string } => !('absent' in entry)).map((entry) => entry.path);
  if (present.length > 0) {
    const [archive, tar] = await leanPipe(
      { command: 'git', args: gitArgs(runPaths(ctx.dataDir, input.runId).worktree, 'archive', '--format=tar', input.commitSha, '--', ...present) },
      { command: 'tar', args: ['-x', '-C', join(setupDir, 'inputs')], stdout: 'ignore' },
    );
    if (archive.code !== 0 || tar.code !== 0)
      throw new Error(`the environment's inputs could not be exported: ${archive.stderr.toString('utf8').trim()} ${tar.stderr.toString('utf8').trim()}`);
  }
  await handToContainerUser(join(setupDir, 'inputs'));
  return present;
}

/** Runs the setup container behind its own egress gateway; every connection lands in the run's logs as it ends. */
async function runSetup(
  ctx: BuildContext,
  input: PrepareEnvironmentInput,
  at: { key: string; hex: string; baseImage: string; work: string; logs: string; logFile: string },
) {
  const { hostId, caBundle, user } = ctx;
  const { runId, declaration } = input;
  const { key, hex, work, logs } = at;
  const egressDir = join(work, 'egress');
  await mkdir(egressDir, { recursive: true });
  const allow = narrowAllow(ctx.egressAllow, declaration.egress);
  // Every connection in the run's own logs as it ends (and in the environment's record once built).
  const gateway = await startEgressGateway({ dir: egressDir, allow: allow.hosts, recordPath: join(logs, `environment-${hex.slice(0, 12)}-egress.jsonl`) });
  const startedAt = Date.now();
  let setup;
  try {
    const proxy = `http://127.0.0.1:${egressPort}`;
    const env = [
      ...Object.entries(declaration.env).map(([name, value]) => `${name}=${value}`),
      ...Object.entries(ctx.setupEnv ?? {}).map(([name, value]) => `${name}=${value}`),
      'HOME=/tmp/home',
      'CI=1',
      `TARMAC_ENVIRONMENT=${key}`,
      ...['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'npm_config_proxy', 'npm_config_https_proxy'].map((name) => `${name}=${proxy}`),
      'NO_PROXY=',
      'no_proxy=',
      ...(caBundle
        ? ['SSL_CERT_FILE', 'NODE_EXTRA_CA_CERTS', 'npm_config_cafile', 'PIP_CERT', 'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE', 'GIT_SSL_CAINFO'].map(
            (name) => `${name}=${egressToolsMount}/ca.crt`,
          )
        : []),
    ];
    setup = await runSetupContainer(ctx.docker, {
      labels: {
        [labelKeys.run]: runId,
        [labelKeys.step]: `environment-${hex.slice(0, 16)}`,
        [labelKeys.role]: 'environment',
        'tarmac.environment': hex,
        'tarmac.host': hostId,
      },
      image: at.baseImage,
      user: `${user.uid}:${user.gid}`,
      env,
      binds: [
        `${join(work, 'setup')}:${setupMount}:ro`,
        `${dirname(gateway.socketPath)}:${egressMount}:ro`,
        `${process.execPath}:${egressToolsMount}/node:ro`,
        `${forwarderPath()}:${egressToolsMount}/tarmac-forward:ro`,
        ...(caBundle ? [`${caBundle}:${egressToolsMount}/ca.crt:ro`] : []),
      ],
      maxBytes: ctx.maxBytes,
      timeoutMs: declaration.timeoutMs,
      memoryBytes: 4 * 1024 ** 3,
      logFile: at.logFile,
      resultFile: join(work, 'result.tar'),
      maxLogBytes: 16 * 1024 * 1024,
    });
  } finally {
    await gateway.close().catch(() => undefined);
  }
  return { setup, egress: gateway.record(), allow, startedAt };
}

type SetupRun = Awaited<ReturnType<typeof runSetup>>['setup'];

/** Why a setup failed, in words, with its log's tail and the failing command when the log names it. */
async function setupFailure(
  ctx: BuildContext,
  declaration: EnvironmentDeclaration,
  setup: SetupRun,
  logFile: string,
  failed: (why: string) => PrepareEnvironmentResult,
): Promise<PrepareEnvironmentResult> {
  const tail = await logTail(logFile);
  const which = failingCommand(tail, declaration);
  const why = setup.timedOut
    ? `the setup did not finish within its timeout (${Math.round(declaration.timeoutMs / 1000)} s)`
    : setup.tooLarge
      ? `the setup's files passed the environment's limit of ${ctx.maxBytes} bytes`
      : setup.oomKilled
        ? 'the setup ran out of memory'
        : which.command !== undefined
          ? `setup[${which.index}] \`${which.command}\` exited ${setup.exitCode}`
          : `the setup exited ${setup.exitCode}`;
  const result = failed(why);
  if (!result.ok) Object.assign(result.failure, { logTail: tail, ...(which.index !== undefined ? { index: which.index, command: which.command } : {}) });
  return result;
}

/**
 * The result stream is untrusted: a container of the runner image extracts it (links and names
 * resolve in its own file system, never the host's); only what lands in root/ is kept.
 */
async function unpackResult(
  ctx: BuildContext,
  at: { runId: string; hex: string; work: string; logs: string },
): Promise<{ exitCode: number | null; logFile: string }> {
  const { user } = ctx;
  const { runId, hex, work, logs } = at;
  const rootDir = join(work, 'root');
  await mkdir(rootDir, { recursive: true });
  await handToContainerUser(rootDir);
  await handToContainerUser(join(work, 'result.tar'));
  const logFile = join(logs, `environment-${hex.slice(0, 12)}-collect.log`);
  const unpacked = await runStepContainer(ctx.docker, {
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
    logFile,
  });
  await rm(join(work, 'result.tar'), { force: true });
  return { exitCode: unpacked.exitCode, logFile };
}

/** The built environment's record, written last; the build directory renamed into place. */
async function storeRecord(
  ctx: BuildContext,
  input: PrepareEnvironmentInput,
  keyed: Keyed,
  at: { work: string; root: string; hex: string; present: string[]; startedAt: number; egress: EgressConnection[] },
): Promise<EnvironmentRecord> {
  const { runId, repo, declaration } = input;
  const { work, egress } = at;
  const rootDir = join(work, 'root');
  const products = await listProducts(rootDir, new Set(at.present));
  const record: EnvironmentRecord = {
    version: 1,
    key: keyed.key,
    repo,
    baseImage: keyed.baseImage,
    baseImageId: keyed.baseImageId,
    declaration,
    inputs: keyed.inputs,
    products,
    sizeBytes: await diskBytes(rootDir),
    builtAt: new Date().toISOString(),
    builtBy: { runId, hostId: ctx.hostId },
    buildMs: Date.now() - at.startedAt,
    egress,
  };
  await rm(join(work, 'setup'), { recursive: true, force: true });
  await rm(join(work, 'egress'), { recursive: true, force: true });
  await writeFileAtomic(join(work, recordName), JSON.stringify(record, null, 2));
  await rename(work, join(at.root, at.hex));
  log.info('environment built', {
    runId,
    key: keyed.key,
    products: products.length,
    sizeBytes: record.sizeBytes,
    buildMs: record.buildMs,
    egress: egress.length,
  });
  return record;
}

/** Takes the key's build lock on the host; a lock left by a dead process (a killed worker) is taken over. */
async function takeBuildLock(root: string, hostId: string, hex: string): Promise<() => Promise<void>> {
  const path = join(root, `${hex}.lock`);
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
      if (held !== undefined && held.pid !== process.pid && processAlive(held.pid) && tries < 600) {
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        continue;
      }
      // Its holder is gone (or is this process, which holds no build of this key here): a stale lock.
      await rm(path, { force: true });
    }
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
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

/** The model forwarder of images/shared, which forwards any TCP connection to a unix socket: the egress one here. */
function forwarderPath(): string {
  return join(__dirname, '..', '..', 'images', 'shared', 'tarmac-forward');
}
