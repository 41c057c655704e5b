/**
 * Short host commands (git, tar, chown) started by a small helper process instead of the worker
 * itself (activities/git/spawn-helper.mts says why: a fork of the worker blocks its event loop for
 * 6–25 ms; from the helper it costs ~1 ms). Same argv, same environment, no shell; the output is
 * collected and handed back whole — for commands whose output is read whole anyway.
 *
 * The helper starts on first use and is shared by the process. Should it be unavailable or die,
 * calls in flight fail with the reason (an activity retry runs them again) and the next call starts
 * a new one; where it cannot start at all, commands are spawned from the worker as before.
 * `TARMAC_SPAWN_HELPER=off` spawns directly (the bench compares both).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

interface LeanStep {
  command: string;
  args: string[];
  cwd?: string;
  /** The command's environment (unset entries left out); default the process's own. */
  env?: NodeJS.ProcessEnv;
  /** Bytes for the command's stdin (closed after them); none: stdin is /dev/null. */
  input?: Buffer | string;
  /** Collect stdout / stderr ('pipe', the default) or drop them. */
  stdout?: 'pipe' | 'ignore';
  stderr?: 'pipe' | 'ignore';
  /** Sent SIGTERM after this many ms; the result then says `timedOut`. */
  timeoutMs?: number;
  /** Sent SIGTERM once stdout passes this many bytes (what came before is kept); the result then says `overflowed`. */
  maxStdoutBytes?: number;
}

interface LeanResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: Buffer;
  timedOut: boolean;
  overflowed: boolean;
}

const helperFile = join(__dirname, 'spawn-helper.mts');

interface Pending {
  resolve: (results: LeanResult[]) => void;
  reject: (error: Error) => void;
}

class SpawnHelper {
  private child: ChildProcess | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  run(steps: LeanStep[]): Promise<LeanResult[]> {
    const child = this.child ?? this.start();
    const id = this.nextId++;
    return new Promise<LeanResult[]>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // Held open only while a command runs: an idle helper never keeps the worker alive.
      this.ref(true);
      child.send({ id, steps: steps.map((step) => ({ ...step, stdout: step.stdout ?? 'pipe', stderr: step.stderr ?? 'pipe' })) }, (error) => {
        if (error) this.settle(id, undefined, new Error(`the spawn helper did not take the command: ${error.message}`));
      });
    });
  }

  private start(): ChildProcess {
    const child = spawn(process.execPath, [helperFile], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], serialization: 'advanced', env: process.env });
    this.child = child;
    child.on(
      'message',
      (message: {
        id: number;
        results: (Omit<LeanResult, 'stdout' | 'stderr' | 'timedOut' | 'overflowed'> & {
          stdout?: Uint8Array;
          stderr?: Uint8Array;
          timedOut?: boolean;
          overflowed?: boolean;
          error?: string;
          errorCode?: string;
        })[];
      }) => {
        const failed = message.results.find((result) => result.error !== undefined);
        if (failed) return this.settle(message.id, undefined, Object.assign(new Error(failed.error), failed.errorCode ? { code: failed.errorCode } : {}));
        this.settle(
          message.id,
          message.results.map((result) => ({
            code: result.code,
            signal: result.signal,
            stdout: asBuffer(result.stdout),
            stderr: asBuffer(result.stderr),
            timedOut: result.timedOut === true,
            overflowed: result.overflowed === true,
          })),
        );
      },
    );
    const lost = (why: string) => {
      if (this.child !== child) return;
      this.child = undefined;
      for (const id of [...this.pending.keys()]) this.settle(id, undefined, new Error(`the spawn helper ${why}; the command's outcome is unknown`));
    };
    child.on('exit', (code, signal) => lost(`exited (${signal ?? code})`));
    child.on('error', (error) => lost(`failed: ${error.message}`));
    this.ref(false);
    return child;
  }

  private settle(id: number, results: LeanResult[] | undefined, error?: Error): void {
    const waiting = this.pending.get(id);
    if (!waiting) return;
    this.pending.delete(id);
    if (this.pending.size === 0) this.ref(false);
    if (results) waiting.resolve(results);
    else waiting.reject(error ?? new Error('the spawn helper gave no result'));
  }

  private ref(on: boolean): void {
    const child = this.child;
    if (!child) return;
    const channel = child.channel as { ref?: () => void; unref?: () => void } | undefined;
    if (on) {
      child.ref();
      channel?.ref?.();
    } else {
      child.unref();
      channel?.unref?.();
    }
  }
}

const asBuffer = (bytes: Uint8Array | undefined) => (bytes ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) : Buffer.alloc(0));

let helper: SpawnHelper | undefined;
/**
 * The helper is used unless switched off (TARMAC_SPAWN_HELPER, checked by core/node/config.ts), missing,
 * or Node cannot run it (type stripping: 23 and later).
 */
const helperOn = () => process.env.TARMAC_SPAWN_HELPER?.trim() !== 'off' && existsSync(helperFile) && Number(process.versions.node.split('.')[0]) >= 23;

/** One command, run to its end; its output collected. A command that cannot start rejects (ENOENT and the like), as spawn's 'error' would. */
export async function leanRun(step: LeanStep): Promise<LeanResult> {
  const [result] = await leanRunAll([step]);
  return result!;
}

/** Two commands, the first's stdout piped into the second's stdin (its `stdout` setting is ignored). */
export async function leanPipe(first: LeanStep, second: LeanStep): Promise<[LeanResult, LeanResult]> {
  const [a, b] = await leanRunAll([first, second]);
  return [a!, b!];
}

/** A child's environment holds strings only: unset entries are left out (spawn would pass "undefined"). */
const definedEnv = (env: NodeJS.ProcessEnv): Record<string, string> =>
  Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));

async function leanRunAll(given: LeanStep[]): Promise<LeanResult[]> {
  const steps = given.map((step) => (step.env ? { ...step, env: definedEnv(step.env) } : step));
  if (!helperOn()) return await directRun(steps);
  helper ??= new SpawnHelper();
  return await helper.run(steps);
}

/** The same, spawned from this process (no helper). */
async function directRun(steps: LeanStep[]): Promise<LeanResult[]> {
  const started = steps.map((step, index) => {
    const piped = index === 1;
    const child = spawn(step.command, step.args, {
      cwd: step.cwd,
      env: step.env ?? process.env,
      stdio: [
        piped || step.input !== undefined ? 'pipe' : 'ignore',
        index === 0 && steps.length === 2 ? 'pipe' : (step.stdout ?? 'pipe'),
        step.stderr ?? 'pipe',
      ],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let overflowed = false;
    if (!(index === 0 && steps.length === 2)) {
      child.stdout?.on('data', (chunk: Buffer) => {
        if (overflowed) return;
        outBytes += chunk.length;
        if (step.maxStdoutBytes !== undefined && outBytes > step.maxStdoutBytes) {
          overflowed = true;
          child.kill('SIGTERM');
          return;
        }
        out.push(chunk);
      });
    }
    child.stderr?.on('data', (chunk: Buffer) => err.push(chunk));
    child.stdin?.on('error', () => undefined);
    let timedOut = false;
    const timer =
      step.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            child.kill('SIGTERM');
          }, step.timeoutMs);
    const done = new Promise<LeanResult>((resolve, reject) => {
      child.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        resolve({ code, signal, stdout: Buffer.concat(out), stderr: Buffer.concat(err), timedOut, overflowed });
      });
    });
    return { child, done };
  });
  const [head, tail] = started;
  if (tail) head!.child.stdout!.pipe(tail.child.stdin!);
  head!.child.stdin?.end(steps[0]!.input);
  return await Promise.all(started.map((entry) => entry.done));
}
