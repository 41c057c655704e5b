import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, createWriteStream, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { Connection } from '@temporalio/client';
import { searchAttributeDeclarations } from '../core/search-attributes';

/** The per-user cache where setup builds the Temporal CLI (shared by clones and CI). */
export const cachedTemporalBin = join(homedir(), '.cache', 'tarmac', 'bin', 'temporal');

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Finds the `temporal` CLI: an explicit path, then PATH, then the setup cache. */
export function findTemporalBin(explicit?: string): string {
  if (explicit) {
    if (!executable(explicit)) throw new Error(`TARMAC_TEMPORAL_BIN: ${explicit} is not an executable file`);
    return explicit;
  }
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && executable(join(dir, 'temporal'))) return join(dir, 'temporal');
  }
  if (executable(cachedTemporalBin)) return cachedTemporalBin;
  throw new Error(
    'the temporal CLI was not found on PATH or in ~/.cache/tarmac/bin; run `bash scripts/setup.sh` ' +
      '(it runs `CGO_ENABLED=0 go install github.com/temporalio/cli/cmd/temporal@v1.5.1`)',
  );
}

export interface DevServerOptions {
  bin: string;
  /** SQLite file: runs survive restarts of the server. */
  dbFile: string;
  port: number;
  /** Web UI port; omit for a headless server. */
  uiPort?: number;
  /** Where the server's own output goes. */
  logFile: string;
  namespace?: string;
}

export interface DevServer {
  address: string;
  uiUrl?: string;
  process: ChildProcess;
  /** Stops the server by its PID (SIGTERM, then SIGKILL after a grace period). */
  stop(): Promise<void>;
}

/** Waits until a Temporal frontend answers on `address`, or fails after `timeoutMs`. */
export async function waitForTemporal(address: string, timeoutMs: number, exited?: () => string | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    const why = exited?.();
    if (why) throw new Error(why);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1_000 });
      try {
        await connection.workflowService.getSystemInfo({});
        return;
      } finally {
        await connection.close();
      }
    } catch (error) {
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  throw new Error(`Temporal at ${address} did not answer within ${timeoutMs} ms: ${String(lastError)}`);
}

/** Stops a child process by its PID: SIGTERM, then SIGKILL if it lingers. */
export async function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/**
 * The dev server's SQLite in write-ahead-log mode with `synchronous=NORMAL`, SQLite's own advice for
 * WAL: every committed transaction survives the server process being killed (what a restart or a
 * crash of the server is), and the database cannot be corrupted; only a power loss or an OS crash
 * may take back the last transactions. The default (a rollback journal, `synchronous=FULL`) syncs
 * the disk several times per transaction, and a busy server spent much of its time there.
 */
const sqlitePragmas = ['journal_mode=WAL', 'synchronous=NORMAL'];

/** Starts `temporal server start-dev` on SQLite with the Tarmac search attributes registered. */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  mkdirSync(dirname(options.dbFile), { recursive: true });
  mkdirSync(dirname(options.logFile), { recursive: true });
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--db-filename',
    options.dbFile,
    '--namespace',
    options.namespace ?? 'default',
    '--log-level',
    'warn',
    ...(options.uiPort ? ['--ui-port', String(options.uiPort)] : ['--headless']),
    ...searchAttributeDeclarations.flatMap((declaration) => ['--search-attribute', declaration]),
    ...sqlitePragmas.flatMap((pragma) => ['--sqlite-pragma', pragma]),
  ];
  const child = spawn(options.bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const log = createWriteStream(options.logFile, { flags: 'a' });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  let exitReason: string | undefined;
  child.once('exit', (code, signal) => {
    exitReason = `temporal dev server exited early (code ${code}, signal ${signal}); see ${options.logFile}`;
  });
  const address = `127.0.0.1:${options.port}`;
  try {
    await waitForTemporal(address, 60_000, () => exitReason);
  } catch (error) {
    await stopChild(child);
    throw error;
  }
  return {
    address,
    ...(options.uiPort ? { uiUrl: `http://127.0.0.1:${options.uiPort}` } : {}),
    process: child,
    stop: () => stopChild(child),
  };
}
