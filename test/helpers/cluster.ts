import { execFileSync, spawn, spawnSync, type ChildProcess, type ExecFileSyncOptionsWithStringEncoding } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { freePort } from '../../infra/ports';
import { findTemporalBin, stopChild, waitForTemporal } from '../../infra/temporal-server';
import { waitFor } from './stack';

const root = resolve(__dirname, '../..');
export const clusterToken = 'cluster-token-0123456789abcdef';
/** The release `scripts/setup.sh --cluster` builds, the one of the compose file's temporalio/server image. */
export const temporalServerVersion = 'v1.29.1';

/** The Temporal server, its SQL tool and the PostgreSQL schema files, where `scripts/setup.sh --cluster` caches them. */
export function temporalServerBuild(): { server: string; sqlTool: string; schemaDir: string } {
  const dir = process.env.TARMAC_TEMPORAL_SERVER_DIR || join(homedir(), '.cache', 'tarmac', `temporal-server-${temporalServerVersion}`);
  const build = { server: join(dir, 'temporal-server'), sqlTool: join(dir, 'temporal-sql-tool'), schemaDir: join(dir, 'schema', 'postgresql', 'v12') };
  for (const [what, path] of Object.entries(build)) {
    if (!existsSync(path))
      throw new Error(
        `the Temporal server's ${what} is not at ${path}; run \`bash scripts/setup.sh --cluster\` (it builds go.temporal.io/server ${temporalServerVersion} once)`,
      );
  }
  return build;
}

/** PostgreSQL's server programs: Debian's newest /usr/lib/postgresql/<version>/bin, else the directory of `initdb` on PATH. */
export function postgresBinDir(): string {
  const debian = '/usr/lib/postgresql';
  const versions = existsSync(debian)
    ? readdirSync(debian)
        .filter((name) => existsSync(join(debian, name, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions[0]) return join(debian, versions[0], 'bin');
  for (const dir of (process.env.PATH ?? '').split(':')) if (dir && existsSync(join(dir, 'initdb'))) return dir;
  throw new Error("PostgreSQL (initdb, pg_ctl) is not installed; run `bash scripts/setup.sh --cluster` (it installs Debian's postgresql)");
}

/** The user PostgreSQL runs as: it refuses root, so as root the `postgres` user (setup makes it), else this process's own. */
function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const name = process.env.TARMAC_POSTGRES_USER || 'postgres';
  try {
    return { uid: Number(execFileSync('id', ['-u', name], { encoding: 'utf8' })), gid: Number(execFileSync('id', ['-g', name], { encoding: 'utf8' })) };
  } catch {
    throw new Error(`PostgreSQL refuses to run as root and there is no user ${name}; run \`bash scripts/setup.sh --cluster\` (it makes one)`);
  }
}

/**
 * A TCP port below 32768 that was free a moment ago. The cluster's membership ports must be: the
 * server records them in PostgreSQL as smallint, and the kernel's ephemeral ports (freePort) are above.
 */
async function lowFreePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((done) => {
      const server = createServer();
      server.once('error', () => done(false));
      server.listen(port, '127.0.0.1', () => server.close(() => done(true)));
    });
    if (free) return port;
  }
  throw new Error('no free port between 20000 and 32000');
}

export interface Postgres {
  port: number;
  user: string;
  password: string;
  /** `pg_ctl stop` on its data dir (the postmaster is a daemon, not a child of ours). */
  stop(): Promise<void>;
  /** The same, synchronously and at once, for an exiting process. */
  stopNow(): void;
}

/**
 * A PostgreSQL server of its own in `dir` (initdb, then `pg_ctl start`), on loopback only, with a
 * role for Temporal (password authentication over TCP, as a remote Temporal server would log in).
 */
export async function startPostgres(dir: string, logFile: string): Promise<Postgres> {
  const bin = postgresBinDir();
  const owner = postgresUser();
  // The server's user writes its data dir and its log (whose directories it must be able to enter).
  writeFileSync(logFile, '');
  if (owner) {
    chownSync(dir, owner.uid, owner.gid);
    chownSync(logFile, owner.uid, owner.gid);
  }
  const asOwner: ExecFileSyncOptionsWithStringEncoding = { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8', ...(owner ?? {}) };
  const data = join(dir, 'data');
  execFileSync(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '-E', 'UTF8', '--auth-local=trust', '--auth-host=scram-sha-256'], asOwner);
  const port = await freePort();
  const settings = [
    `-p ${port}`,
    `-k ${dir}`,
    '-c listen_addresses=127.0.0.1',
    '-c fsync=off',
    '-c synchronous_commit=off',
    '-c full_page_writes=off',
    '-c max_connections=200',
  ];
  execFileSync(join(bin, 'pg_ctl'), ['-D', data, '-l', logFile, '-w', '-t', '60', '-o', settings.join(' '), 'start'], asOwner);
  const stopArgs = ['-D', data, '-w', '-t', '60', 'stop'];
  let stopped = false;
  const password = randomBytes(12).toString('hex');
  try {
    execFileSync(
      join(bin, 'psql'),
      ['-h', dir, '-p', String(port), '-U', 'postgres', '-v', 'ON_ERROR_STOP=1', '-c', `CREATE ROLE temporal LOGIN CREATEDB PASSWORD '${password}'`],
      asOwner,
    );
  } catch (error) {
    execFileSync(join(bin, 'pg_ctl'), [...stopArgs, '-m', 'immediate'], asOwner);
    throw error;
  }
  return {
    port,
    user: 'temporal',
    password,
    async stop() {
      if (stopped) return;
      stopped = true;
      execFileSync(join(bin, 'pg_ctl'), [...stopArgs, '-m', 'fast'], asOwner);
    },
    stopNow() {
      if (stopped) return;
      stopped = true;
      try {
        execFileSync(join(bin, 'pg_ctl'), [...stopArgs, '-m', 'immediate'], asOwner);
      } catch {
        // already down
      }
    },
  };
}

/** Runs one of infra/temporal's setup scripts (the ones the compose file runs in temporalio/admin-tools). */
function runSetupScript(name: string, env: Record<string, string>, logFile: string): void {
  const ran = spawnSync('sh', [join(root, 'infra', 'temporal', name)], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  writeFileSync(logFile, `${ran.stdout}${ran.stderr}`);
  if (ran.status !== 0) throw new Error(`infra/temporal/${name} failed (${ran.status ?? ran.signal}):\n${ran.stdout}${ran.stderr}`);
}

/** The server's configuration: all four services in one process on loopback, PostgreSQL for persistence and visibility. */
function serverConfig(
  postgres: Postgres,
  ports: { frontend: number; http: number; history: number; matching: number; worker: number; membership: number[] },
): string {
  const store = (database: string, conns: number) => `
      sql:
        pluginName: postgres12
        databaseName: ${database}
        connectAddr: "127.0.0.1:${postgres.port}"
        connectProtocol: tcp
        user: ${postgres.user}
        password: "${postgres.password}"
        maxConns: ${conns}
        maxIdleConns: ${conns}
        maxConnLifetime: 1h`;
  const service = (grpc: number, membership: number, http?: number) => `
    rpc:
      grpcPort: ${grpc}
      membershipPort: ${membership}
      bindOnLocalHost: true${http ? `\n      httpPort: ${http}` : ''}`;
  const [frontendMembership, historyMembership, matchingMembership, workerMembership] = ports.membership;
  return `log:
  stdout: true
  level: warn
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: 4
  datastores:
    default:${store('temporal', 20)}
    visibility:${store('temporal_visibility', 10)}
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
services:
  frontend:${service(ports.frontend, frontendMembership!, ports.http)}
  history:${service(ports.history, historyMembership!)}
  matching:${service(ports.matching, matchingMembership!)}
  worker:${service(ports.worker, workerMembership!)}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: 127.0.0.1:${ports.frontend}
dcRedirectionPolicy:
  policy: noop
`;
}

export interface ClusterHost {
  id: string;
  dataDir: string;
  process: ChildProcess;
}

export interface Cluster {
  namespace: string;
  temporalAddress: string;
  postgres: Postgres;
  /** A client of the test's own, to read histories (the API and the hosts have theirs). */
  client: Client;
  apiUrl: string;
  /** Where every process's output goes (kept after the test). */
  logsDir: string;
  hosts: Map<string, ClusterHost>;
  /** Starts `tarmac worker` as host `id`, with a data dir of its own, and waits until it polls. */
  startHost(id: string): Promise<ClusterHost>;
  /** SIGKILLs host `id`'s worker and waits until it is gone. */
  killHost(id: string): Promise<void>;
  api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /** Worker hosts to start, by host id (`TARMAC_HOST_ID`). */
  hosts: string[];
  /** `TARMAC_TEMPORAL_NAMESPACE` of the API and the hosts; made by infra/temporal/setup-namespace.sh. */
  namespace: string;
  /** `TARMAC_RECIPES_DIR` of the API and the hosts (the same for all). */
  recipesDir?: string;
}

/** Spawns a `tarmac` command as a process of its own; its output goes to `logFile`. */
function spawnTarmac(command: 'worker' | 'api', env: NodeJS.ProcessEnv, logFile: string): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'bin', 'tarmac.ts'), command], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const log = createWriteStream(logFile, { flags: 'a' });
  const onData = (chunk: Buffer) => {
    if (output.length < 100_000) output += chunk.toString();
    log.write(chunk);
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  return { child, output: () => output };
}

/**
 * A real Temporal cluster on one machine, every part a process of its own: PostgreSQL (its own data
 * dir, its own port), the Temporal server (`temporal-server start`: frontend, history, matching and
 * worker services) on it, with its schema and Tarmac's namespace set up by the scripts the compose
 * file runs; worker hosts (`tarmac worker`, each its own host id and data dir); and the API (`tarmac api`).
 */
export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const build = temporalServerBuild();
  const temporalCli = findTemporalBin(process.env.TARMAC_TEMPORAL_BIN);
  const dir = mkdtempSync(join(tmpdir(), 'tarmac-cluster-'));
  const pgDir = mkdtempSync(join(tmpdir(), 'tarmac-cluster-pg-'));
  const logsDir = mkdtempSync(join(tmpdir(), 'tarmac-cluster-logs-'));
  chmodSync(logsDir, 0o755);
  const children: ChildProcess[] = [];
  let postgres: Postgres | undefined;
  // Whatever happens to the test process, nothing it started outlives it.
  const killAll = () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    postgres?.stopNow();
  };
  process.once('exit', killAll);
  try {
    postgres = await startPostgres(pgDir, join(logsDir, 'postgres.log'));
    runSetupScript(
      'setup-schema.sh',
      {
        SQL_HOST: '127.0.0.1',
        SQL_PORT: String(postgres.port),
        SQL_USER: postgres.user,
        SQL_PASSWORD: postgres.password,
        TEMPORAL_SQL_TOOL: build.sqlTool,
        TEMPORAL_SCHEMA_DIR: build.schemaDir,
      },
      join(logsDir, 'setup-schema.log'),
    );

    const ports = {
      frontend: await freePort(),
      http: await freePort(),
      history: await freePort(),
      matching: await freePort(),
      worker: await freePort(),
      membership: [await lowFreePort(), await lowFreePort(), await lowFreePort(), await lowFreePort()],
    };
    const serverDir = join(dir, 'temporal');
    mkdirSync(join(serverDir, 'config'), { recursive: true });
    writeFileSync(join(serverDir, 'config', 'tarmac.yaml'), serverConfig(postgres, ports), { mode: 0o600 });
    const server = spawn(build.server, ['--root', serverDir, '--config', 'config', '--env', 'tarmac', '--allow-no-auth', 'start'], {
      cwd: serverDir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(server);
    const serverLog = createWriteStream(join(logsDir, 'temporal-server.log'), { flags: 'a' });
    server.stdout?.pipe(serverLog);
    server.stderr?.pipe(serverLog);
    let serverExit: string | undefined;
    server.once('exit', (code, signal) => {
      serverExit = `the Temporal server exited (code ${code}, signal ${signal}); see ${join(logsDir, 'temporal-server.log')}`;
    });
    const temporalAddress = `127.0.0.1:${ports.frontend}`;
    await waitForTemporal(temporalAddress, 120_000, () => serverExit);
    runSetupScript(
      'setup-namespace.sh',
      { TEMPORAL_ADDRESS: temporalAddress, TEMPORAL_NAMESPACE: options.namespace, TEMPORAL_CLI: temporalCli },
      join(logsDir, 'setup-namespace.log'),
    );

    const connection = await Connection.connect({ address: temporalAddress });
    const client = new Client({ connection, namespace: options.namespace });
    const common = {
      ...process.env,
      TARMAC_TEMPORAL_ADDRESS: temporalAddress,
      TARMAC_TEMPORAL_NAMESPACE: options.namespace,
      TARMAC_LOG_LEVEL: 'info',
      ...(options.recipesDir ? { TARMAC_RECIPES_DIR: options.recipesDir } : {}),
    };

    // The API: no data dir of the hosts' (it runs on no host), so the live stream has no runner log lines.
    const apiPort = await freePort();
    const apiDataDir = join(dir, 'api');
    mkdirSync(apiDataDir);
    const api = spawnTarmac(
      'api',
      {
        ...common,
        TARMAC_DATA_DIR: apiDataDir,
        TARMAC_API_HOST: '127.0.0.1',
        TARMAC_API_PORT: String(apiPort),
        TARMAC_API_TOKENS: clusterToken,
        TARMAC_REPO_ALLOW: `file://${tmpdir()}`,
      },
      join(logsDir, 'api.log'),
    );
    children.push(api.child);
    const apiUrl = `http://127.0.0.1:${apiPort}`;
    await waitFor(
      async () => {
        if (api.child.exitCode !== null) throw new Error(`the API exited (${api.child.exitCode}):\n${api.output()}`);
        return await fetch(`${apiUrl}/healthz`).then(
          (response) => response.status,
          () => 0,
        );
      },
      (status) => status === 200,
      60_000,
      'the API to answer /healthz',
    );

    const hosts = new Map<string, ClusterHost>();
    const startHost = async (id: string): Promise<ClusterHost> => {
      const dataDir = join(dir, `host-${id}`);
      mkdirSync(dataDir, { recursive: true });
      const worker = spawnTarmac(
        'worker',
        { ...common, TARMAC_HOST_ID: id, TARMAC_DATA_DIR: dataDir, TARMAC_WORKER_METRICS_PORT: '0' },
        join(logsDir, `host-${id}.log`),
      );
      children.push(worker.child);
      await waitFor(
        async () => {
          if (worker.child.exitCode !== null) throw new Error(`host ${id} exited (${worker.child.exitCode}) before it started:\n${worker.output()}`);
          return worker.output();
        },
        (output) => output.includes('worker started'),
        120_000,
        `host ${id} to start`,
      );
      const host = { id, dataDir, process: worker.child };
      hosts.set(id, host);
      return host;
    };
    for (const id of options.hosts) await startHost(id);

    return {
      namespace: options.namespace,
      temporalAddress,
      postgres,
      client,
      apiUrl,
      logsDir,
      hosts,
      startHost,
      async killHost(id: string) {
        const host = hosts.get(id);
        if (!host) throw new Error(`no host ${id}`);
        if (host.process.exitCode !== null || host.process.signalCode !== null) return;
        const exited = new Promise((done) => host.process.once('exit', done));
        host.process.kill('SIGKILL');
        await exited;
      },
      async api(method: string, path: string, body?: unknown) {
        const response = await fetch(`${apiUrl}${path}`, {
          method,
          headers: { authorization: `Bearer ${clusterToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        const text = await response.text();
        return { status: response.status, body: text ? JSON.parse(text) : undefined };
      },
      async stop() {
        await stopChild(api.child);
        for (const host of hosts.values()) await stopChild(host.process, 20_000);
        await connection.close();
        await stopChild(server, 20_000);
        await postgres!.stop();
        process.removeListener('exit', killAll);
        rmSync(dir, { recursive: true, force: true });
        rmSync(pgDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    for (const child of children) await stopChild(child, 5_000);
    postgres?.stopNow();
    process.removeListener('exit', killAll);
    rmSync(dir, { recursive: true, force: true });
    rmSync(pgDir, { recursive: true, force: true });
    throw new Error(`the cluster did not start (logs: ${logsDir}): ${error instanceof Error ? error.message : String(error)}`);
  }
}
