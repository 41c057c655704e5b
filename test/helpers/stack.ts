import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { Client } from '@temporalio/client';
import Docker from 'dockerode';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import { connectApiToTemporal } from '../../api/temporal-connection';
import { loadConfig, type Config } from '../../core/node/config';
import { scenarioNameProblem, type ScriptScenario } from '../../core/script-scenario';
import { freePort } from '../../infra/ports';
import { findTemporalBin, startDevServer, stopChild, type DevServer, type DevServerOptions } from '../../infra/temporal-server';
import { cleanupMarker, cleanupRecord } from '../../activities/janitor/run-janitor';
import { gatePoolId, poolLabelKeys } from '../../activities/containers/gate-pool';

const root = resolve(__dirname, '../..');
export const testToken = 'test-token-0123456789abcdef';

export interface Stack {
  config: Config;
  dataDir: string;
  server: DevServer;
  client: Client;
  docker: Docker;
  app: FastifyInstance;
  apiUrl: string;
  worker(): ChildProcess;
  /** Where the worker processes' output goes (kept after the test). */
  workerLog: string;
  /** (Re)starts the stack's worker; `overrides` of its environment (e.g. `TARMAC_WORKER_QUEUES`) last until the next start. */
  startWorker(overrides?: Record<string, string>): Promise<void>;
  /** Another worker process, e.g. a second host (`TARMAC_HOST_ID`); stopped with the stack. */
  startExtraWorker(overrides: Record<string, string>): Promise<ChildProcess>;
  killWorker(signal?: NodeJS.Signals): Promise<void>;
  /** SIGKILLs the Temporal dev server; its SQLite db survives for `startTemporal`. */
  killTemporal(): Promise<void>;
  /** Starts the dev server again on the same port and db file (runs resume from it). */
  startTemporal(): Promise<void>;
  /** Closes the API (its streams end) and serves a new one on the same port. */
  restartApi(): Promise<void>;
  /**
   * Writes a scenario of the script harness into the workers' scenarios directory
   * (`TARMAC_SCRIPT_SCENARIOS`) and returns its name; a model names it as `script#<behaviour>:<name>`.
   */
  scriptScenario(name: string, scenario: ScriptScenario): string;
  /** Authenticated JSON request to the real HTTP API. */
  api(method: string, path: string, body?: unknown, token?: string | null): Promise<{ status: number; body: any }>;
  stop(): Promise<void>;
}

export interface StackOptions {
  /** Serve the Temporal Web UI on a free loopback port (`server.uiUrl`); default false (headless). */
  webUi?: boolean;
  /**
   * `TARMAC_REPO_ALLOW` of the stack; default the OS temp dir (`file://<tmpdir>`), where
   * fixture repositories (infra/fixture-repo.ts) and demo repositories of the tests are made.
   */
  repoAllow?: string;
  /** Extra environment of the worker processes only (model upstreams, provider keys). */
  workerEnv?: Record<string, string>;
  /**
   * `TARMAC_RECIPES_DIR` of the API and the workers: a recipes directory of the test's own (a copy it
   * may edit while runs are going); default the repository's `recipes/`.
   */
  recipesDir?: string;
}

/**
 * Starts the dev server; when another process took its port between the pick and the bind (files
 * run side by side, each picking free ports), on another free port (at most three tries).
 */
async function startDevServerOnFreePort(options: DevServerOptions): Promise<DevServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startDevServer(options);
    } catch (error) {
      const log = existsSync(options.logFile) ? readFileSync(options.logFile, 'utf8') : '';
      if (attempt >= 3 || !log.includes('address already in use')) throw error;
      writeFileSync(options.logFile, '');
      options.port = await freePort();
    }
  }
}

/**
 * A real stack for end-to-end tests: a Temporal dev server (SQLite in a temp data
 * dir), a worker as a child process (so tests can SIGKILL it), the API listening on
 * loopback, and the real Docker daemon.
 */
export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tarmac-test-'));
  // The workers' script scenarios (test data of the worker, never of a request).
  const scenariosDir = mkdtempSync(join(tmpdir(), 'tarmac-test-scenarios-'));
  const port = await freePort();
  const serverOptions = {
    bin: findTemporalBin(process.env.TARMAC_TEMPORAL_BIN),
    dbFile: join(dataDir, 'temporal.db'),
    port,
    ...(options.webUi ? { uiPort: await freePort() } : {}),
    logFile: join(dataDir, 'logs', 'temporal.log'),
  };
  let server = await startDevServerOnFreePort(serverOptions);
  const metricsPort = await freePort();
  const env = {
    ...process.env,
    // The worker child reads no .env of the checkout it runs in: the stack's settings are these.
    TARMAC_ENV_FILE: '',
    TARMAC_DATA_DIR: dataDir,
    TARMAC_TEMPORAL_ADDRESS: server.address,
    TARMAC_API_TOKENS: testToken,
    TARMAC_REPO_ALLOW: options.repoAllow ?? `file://${tmpdir()}`,
    TARMAC_HOST_ID: 'test-host',
    TARMAC_WORKER_METRICS_PORT: String(metricsPort),
    TARMAC_WORKER_METRICS_URL: `http://127.0.0.1:${metricsPort}/metrics`,
    TARMAC_SCRIPT_SCENARIOS: scenariosDir,
    // No warm gate pool unless a test asks for one (workerEnv TARMAC_GATE_POOL), or the run does
    // (TARMAC_TEST_GATE_POOL=1: every stack's worker with a pool); many tests count gate containers by run.
    TARMAC_GATE_POOL: process.env.TARMAC_TEST_GATE_POOL?.trim() || '0',
    ...(options.recipesDir ? { TARMAC_RECIPES_DIR: options.recipesDir } : {}),
    // The worker announces readiness at info level ("worker started").
    TARMAC_LOG_LEVEL: 'info',
  };
  const config = loadConfig(env);
  const connection = await connectApiToTemporal(server.address);
  const client = new Client({ connection, namespace: config.namespace });
  let app = await buildApp({ client, config });
  const apiPort = await freePort();
  await app.listen({ host: '127.0.0.1', port: apiPort });
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const docker = new Docker({ socketPath: config.dockerSocket });

  let worker: ChildProcess | undefined;
  const workerLog = join(tmpdir(), `tarmac-test-worker-${basename(dataDir)}.log`);
  const extraWorkers: ChildProcess[] = [];
  /** Spawns a worker process and waits until it says it started; its output goes to a log kept after the test. */
  /** Every gate pool a worker of this stack may have kept (host id and data dir): removed at stop. */
  const pools = new Set<string>();
  const spawnWorker = async (overrides: Record<string, string> = {}): Promise<ChildProcess> => {
    const workerEnv = { ...env, ...(options.workerEnv ?? {}), ...overrides };
    pools.add(gatePoolId(workerEnv.TARMAC_HOST_ID ?? 'test-host', resolve(workerEnv.TARMAC_DATA_DIR ?? dataDir)));
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'bin/tarmac.ts'), 'worker'], {
      cwd: root,
      env: workerEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    await new Promise<void>((ready, fail) => {
      const timer = setTimeout(() => fail(new Error(`worker did not start in 120 s:\n${output}`)), 120_000);
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('worker started')) {
          clearTimeout(timer);
          ready();
        }
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.once('exit', (code) => fail(new Error(`worker exited (${code}) before it started:\n${output}`)));
    });
    // Keep draining output so the child never blocks on a full pipe.
    const log = createWriteStream(workerLog, { flags: 'a' });
    log.write(output);
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
    return child;
  };
  const startWorker = async (overrides: Record<string, string> = {}) => {
    worker = await spawnWorker(overrides);
  };
  await startWorker();

  const api = async (method: string, path: string, body?: unknown, token: string | null = testToken) => {
    const response = await fetch(`${apiUrl}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token ? { authorization: `Bearer ${token}` } : {}) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };

  const stack: Stack = {
    config,
    dataDir,
    server,
    client,
    docker,
    app,
    apiUrl,
    worker: () => worker!,
    workerLog,
    startWorker,
    async startExtraWorker(overrides: Record<string, string>) {
      const child = await spawnWorker({ TARMAC_WORKER_METRICS_PORT: '0', ...overrides });
      extraWorkers.push(child);
      return child;
    },
    async killWorker(signal: NodeJS.Signals = 'SIGKILL') {
      if (!worker || worker.exitCode !== null || worker.signalCode !== null) return;
      const exited = new Promise((done) => worker!.once('exit', done));
      worker.kill(signal);
      await exited;
    },
    async killTemporal() {
      const child = server.process;
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((done) => child.once('exit', done));
      child.kill('SIGKILL');
      await exited;
    },
    async startTemporal() {
      server = await startDevServer(serverOptions);
      stack.server = server;
    },
    async restartApi() {
      await app.close();
      app = await buildApp({ client, config });
      await app.listen({ host: '127.0.0.1', port: apiPort });
      stack.app = app;
    },
    scriptScenario(name: string, scenario: ScriptScenario) {
      const problem = scenarioNameProblem(name);
      if (problem) throw new Error(problem);
      writeFileSync(join(scenariosDir, `${name}.json`), `${JSON.stringify(scenario, null, 2)}\n`);
      return name;
    },
    api,
    async stop() {
      await app.close();
      // The host's janitor cleans up a landing a moment after its result: let it finish before the
      // worker stops and the data dir (with its markers) goes, or the last landing's containers stay.
      await cleanupsSettled(dataDir, 10_000).catch(() => undefined);
      if (worker) await stopChild(worker, 20_000);
      for (const child of extraWorkers) await stopChild(child, 20_000);
      // A worker killed (not stopped) leaves its gate pool's waiting containers: they are this stack's.
      for (const pool of pools) await removePoolContainers(docker, pool).catch(() => undefined);
      await connection.close();
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(scenariosDir, { recursive: true, force: true });
    },
  };
  return stack;
}

/** Removes the containers of one gate pool (activities/containers/gate-pool.ts), found by its label. */
export async function removePoolContainers(docker: Docker, poolId: string): Promise<number> {
  const found = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${poolLabelKeys.pool}=${poolId}`] }) });
  await Promise.all(
    found.map((info) =>
      docker
        .getContainer(info.Id)
        .remove({ force: true })
        .catch(() => undefined),
    ),
  );
  return found.length;
}

/** What a host's run janitor recorded for a run it cleaned up after the run closed (activities/janitor/run-janitor.ts). */
export interface CleanupRecord {
  workflowStatus: string;
  removedPaths?: string[];
  removedContainers?: number;
  error?: string;
}

/**
 * A finished landing's cleanup, done by its host's janitor once the run has closed (a moment after
 * its result): waits for the record in the run's directory of `dataDir` (the host's), and returns it.
 */
export async function cleanedUp(dataDir: string, runId: string, timeoutMs = 30_000): Promise<CleanupRecord> {
  const runDir = join(dataDir, 'runs', runId);
  await waitFor(
    async () => existsSync(join(runDir, cleanupRecord)) && !existsSync(join(runDir, cleanupMarker)),
    (done) => done,
    timeoutMs,
    `the host's janitor to clean up ${runId} in ${dataDir}`,
  );
  return JSON.parse(readFileSync(join(runDir, cleanupRecord), 'utf8')) as CleanupRecord;
}

/** Waits until no run in `dataDir` waits for its janitor (every marked run cleaned up). */
export async function cleanupsSettled(dataDir: string, timeoutMs = 30_000): Promise<void> {
  const runsDir = join(dataDir, 'runs');
  await waitFor(
    async () => (existsSync(runsDir) ? readdirSync(runsDir).filter((run) => existsSync(join(runsDir, run, cleanupMarker))) : []),
    (marked) => marked.length === 0,
    timeoutMs,
    `the host's janitor to clean up every finished run in ${dataDir}`,
  );
}

/** Polls `read` until `done(value)` holds, or fails after `timeoutMs` with the last value. */
export async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 120_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  // Looks again soon, then less often (100 ms growing to 500 ms): most reads are a status query,
  // a workflow task on the worker, and a long wait read every 250 ms loaded every file of a run.
  let pause = 100;
  while (Date.now() < deadline) {
    last = await read();
    if (done(last)) return last;
    await new Promise((resolve) => setTimeout(resolve, pause));
    pause = Math.min(pause * 1.5, 500);
  }
  throw new Error(`timed out waiting for ${what}; last value: ${JSON.stringify(last)}`);
}

/** Containers Docker has created with a label since `since` (seconds), read from the engine's event log. */
export async function containersCreated(docker: Docker, since: number, label: string | string[]): Promise<number> {
  const until = Math.ceil(Date.now() / 1000) + 1;
  // Several labels must all match (Docker ANDs label filters).
  const stream = await docker.getEvents({
    since,
    until,
    filters: JSON.stringify({ type: ['container'], event: ['create'], label: Array.isArray(label) ? label : [label] }),
  });
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks)
    .toString()
    .split('\n')
    .filter((line) => line.trim()).length;
}

/** Waits until exactly one running container carries all these labels, and returns it. */
export async function runningContainer(docker: Docker, labels: string[], what: string, timeoutMs = 90_000): Promise<Docker.ContainerInfo> {
  const [info] = await waitFor(
    () => docker.listContainers({ filters: JSON.stringify({ label: labels, status: ['running'] }) }),
    (list) => list.length === 1,
    timeoutMs,
    what,
  );
  return info!;
}

/**
 * Waits until a step of the run is running on a worker: an activity of `activityType` that has
 * heartbeated (a kill after this has a step in flight to retry, reattach or lose with its host).
 */
export async function stepRunning(stack: Pick<Stack, 'client'>, workflowId: string, activityType: string, what: string, timeoutMs = 90_000): Promise<void> {
  const handle = stack.client.workflow.getHandle(workflowId);
  await waitFor(
    async () => (await handle.describe()).raw.pendingActivities ?? [],
    (pending) => pending.some((activity) => activity.activityType?.name === activityType && (activity.heartbeatDetails?.payloads?.length ?? 0) > 0),
    timeoutMs,
    what,
  );
}

/**
 * Waits until the workflow `id` has closed, by Temporal's own long poll for its result (one request
 * the server answers when the run ends, following continue-as-new), at most `timeoutMs`. Resolves
 * either way — closed, failed, timed out, or the server unreachable — for the caller to look.
 */
async function workflowClosed(client: Client, id: string, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    client.workflow
      .getHandle(id)
      .result()
      .catch(() => undefined),
    new Promise<void>((done) => (timer = setTimeout(done, timeoutMs))),
  ]);
  clearTimeout(timer);
}

/**
 * A landing's view once its workflow is no longer running (its outcome is in `outcome`). With the
 * stack's Temporal client it first waits for the run to close by Temporal's long poll, not by a status
 * query every 250 ms (each one a workflow task on the worker: load that slowed every other file of a
 * run); the view is then read through the API, polled until it says the run is not running.
 */
export async function landingFinished(stack: Pick<Stack, 'api'> & Partial<Pick<Stack, 'client'>>, id: string, timeoutMs = 240_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  if (stack.client) await workflowClosed(stack.client, id, timeoutMs);
  const view = await waitFor(
    () => stack.api('GET', `/v1/landings/${id}`),
    (response) => response.status === 200 && response.body.workflowStatus !== 'RUNNING',
    Math.max(deadline - Date.now(), 5_000),
    `landing ${id} to finish`,
  );
  return view.body;
}
