import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { testToken } from './stack';

const root = resolve(__dirname, '../..');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Each stdout line with the time (ms since the command started) it arrived. */
  lines: { at: number; text: string }[];
}

export interface CliOptions {
  apiUrl: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  onLine?: (line: string) => void;
  timeoutMs?: number;
}

/**
 * `tarmac <args>` as a user runs it: a child process of the real binary, talking to the API at
 * `apiUrl` over HTTP. No `.env` is read (TARMAC_ENV_FILE=) unless the test's `env` says otherwise.
 */
export function tarmac(args: string[], options: CliOptions): Promise<CliRun> {
  const started = Date.now();
  // tsx's loader by absolute path, so the command runs from any directory (as bin/tarmac.sh does).
  const child = spawn(process.execPath, ['--import', join(root, 'node_modules/tsx/dist/loader.mjs'), join(root, 'bin/tarmac.ts'), ...args], {
    cwd: options.cwd ?? root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TARMAC_ENV_FILE: '', TARMAC_API_URL: options.apiUrl, TARMAC_API_TOKEN: testToken, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const run: CliRun = { code: null, stdout: '', stderr: '', lines: [] };
  let partial = '';
  child.stdout.on('data', (chunk: Buffer) => {
    run.stdout += chunk.toString();
    partial += chunk.toString();
    const complete = partial.split('\n');
    partial = complete.pop()!;
    for (const text of complete) {
      run.lines.push({ at: Date.now() - started, text });
      options.onLine?.(text);
    }
  });
  child.stderr.on('data', (chunk: Buffer) => (run.stderr += chunk.toString()));
  return new Promise((done, fail) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`tarmac ${args.join(' ')} did not finish in time:\n${run.stdout}\n${run.stderr}`));
    }, options.timeoutMs ?? 240_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      run.code = code;
      done(run);
    });
  });
}

/** A regular expression matching `text` literally. */
export const literally = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
