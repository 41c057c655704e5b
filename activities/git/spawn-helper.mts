/**
 * The worker's spawner: a small long-lived process that starts the host's short commands (git,
 * tar, chown) for the worker and sends back what they printed (activities/git/lean-spawn.ts).
 *
 * Why: Linux starts a child by forking the parent, and a fork costs in proportion to the parent's
 * memory — from the worker (hundreds of MB: the Temporal runtime, workflow contexts) a `spawn()`
 * blocks the event loop 6–25 ms before git even starts, against ~1 ms from this process. A landing
 * runs some thirty of them. What runs, and how, is exactly what the worker asked: an argv, no shell.
 *
 * Run by Node itself (type stripping, no loader) so that it stays small: it imports nothing but
 * Node. Messages (IPC, advanced serialisation: buffers as they are):
 *   in:  { id, steps: [{ command, args, cwd?, env?, input?, stdout, stderr, timeoutMs?, maxStdoutBytes? }] } — one command, or two
 *        with the first's stdout piped into the second's stdin (`git archive | tar -x`)
 *   out: { id, results: [{ code, signal, stdout?, stderr?, timedOut?, overflowed?, error? }] }
 * It exits when the worker goes (its IPC channel closes); commands it started finish on their own.
 */
import { spawn } from 'node:child_process';

interface Step {
  command: string;
  args: string[];
  cwd?: string;
  env?: Record<string, string>;
  input?: Uint8Array | string;
  stdout: 'pipe' | 'ignore';
  stderr: 'pipe' | 'ignore';
  /** Sent SIGTERM after this many ms (and reported timedOut). */
  timeoutMs?: number;
  /** Sent SIGTERM once its stdout passes this many bytes (and reported overflowed). */
  maxStdoutBytes?: number;
}

interface Result {
  code: number | null;
  signal: string | null;
  stdout?: Buffer;
  stderr?: Buffer;
  timedOut?: boolean;
  overflowed?: boolean;
  /** The command could not be started (spawn's own error: its message and code, e.g. ENOENT). */
  error?: string;
  errorCode?: string;
}

function start(step: Step, stdinFrom: 'pipe' | 'ignore') {
  const child = spawn(step.command, step.args, { cwd: step.cwd, env: step.env ?? process.env, stdio: [stdinFrom, step.stdout, step.stderr] });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let outBytes = 0;
  let overflowed = false;
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
  child.stderr?.on('data', (chunk: Buffer) => err.push(chunk));
  // A reader that stops early (tar failing) must not take the helper down with EPIPE.
  child.stdin?.on('error', () => undefined);
  let timedOut = false;
  const timer =
    step.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          child.kill('SIGTERM');
        }, step.timeoutMs);
  const done = new Promise<Result>((resolve) => {
    child.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve({ code: null, signal: null, error: error.message, ...(error.code ? { errorCode: error.code } : {}) });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({
        code,
        signal,
        timedOut,
        overflowed,
        ...(step.stdout === 'pipe' ? { stdout: Buffer.concat(out) } : {}),
        ...(step.stderr === 'pipe' ? { stderr: Buffer.concat(err) } : {}),
      });
    });
  });
  return { child, done };
}

async function run(steps: Step[]): Promise<Result[]> {
  const [first, second] = steps;
  if (!first) return [];
  if (!second) {
    const one = start(first, first.input === undefined ? 'ignore' : 'pipe');
    one.child.stdin?.end(first.input);
    return [await one.done];
  }
  // A pipe of two: the first's output goes to the second as it comes, never collected here.
  const head = start({ ...first, stdout: 'pipe' }, first.input === undefined ? 'ignore' : 'pipe');
  head.child.stdout?.removeAllListeners('data');
  const tail = start(second, 'pipe');
  head.child.stdout?.pipe(tail.child.stdin!);
  head.child.stdin?.end(first.input);
  const [a, b] = await Promise.all([head.done, tail.done]);
  return [{ ...a, ...(first.stdout === 'pipe' ? { stdout: Buffer.alloc(0) } : {}) }, b];
}

process.on('message', (message: { id: number; steps: Step[] }) => {
  void run(message.steps).then(
    (results) => process.send?.({ id: message.id, results }),
    (error: unknown) => process.send?.({ id: message.id, results: [{ code: null, signal: null, error: String(error) }] }),
  );
});
process.on('disconnect', () => process.exit(0));
