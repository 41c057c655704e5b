import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Git as the tests call it: the real binary, run in `dir` (`-C`), with an identity of its own so a
 * commit a test makes never depends on the machine's git config. Returns the output, trimmed, and
 * throws on a non-zero exit, so `git(dir, 'merge-base', '--is-ancestor', a, b)` is an assertion.
 */
export function git(dir: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t.invalid', '-C', dir, ...args], { encoding: 'utf8' }).trim();
}

/** Makes the files in `dir` a new repository with one commit of them all, `message`; returns that commit. */
export function commitFiles(dir: string, message: string): string {
  git(dir, 'init', '--quiet');
  git(dir, 'add', '--all');
  git(dir, 'commit', '--quiet', '--message', message);
  return git(dir, 'rev-parse', 'HEAD');
}

/** A file's content at a commit or branch, exactly as stored (not trimmed: a trailing newline counts). */
export function fileAt(dir: string, ref: string, path: string): string {
  return execFileSync('git', ['-C', dir, 'show', `${ref}:${path}`], { encoding: 'utf8' });
}

/** The tree a commit or branch points at. */
export function treeOf(dir: string, ref: string): string {
  return git(dir, 'rev-parse', `${ref}^{tree}`);
}

/** Whether `older` is `newer` or one of its ancestors. */
export function isAncestor(dir: string, older: string, newer: string): boolean {
  try {
    git(dir, 'merge-base', '--is-ancestor', older, newer);
    return true;
  } catch {
    return false;
  }
}

/** A quiet `git clone` of `from` into `to`; `options` go before the two (e.g. `--bare`). */
export function cloneRepo(from: string, to: string, ...options: string[]): void {
  execFileSync('git', ['clone', '--quiet', ...options, from, to]);
}

/** From now on the repository keeps a reflog of every branch, even bare: each value a target takes, in order. */
export function keepRefLog(dir: string): void {
  git(dir, 'config', 'core.logAllRefUpdates', 'always');
}

/**
 * Every value a branch took since `keepRefLog`, oldest first: the value before the log began, then
 * each update (none when the log never began). Read from the log file, whose lines are old value,
 * new value, who and when.
 */
export function refValues(dir: string, branch = 'main'): string[] {
  const log = join(dir, 'logs', 'refs', 'heads', branch);
  if (!existsSync(log)) return [];
  const lines = readFileSync(log, 'utf8')
    .trim()
    .split('\n')
    .map((line) => line.split(' '));
  return [lines[0]![0]!, ...lines.map((line) => line[1]!)];
}

/** The values a branch took since `keepRefLog`, oldest first: its updates alone. */
export function refUpdates(dir: string, branch = 'main'): string[] {
  return refValues(dir, branch).slice(1);
}
