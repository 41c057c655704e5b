import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** Files of one commit: path → content. */
export type Files = Record<string, string>;

export interface FixtureBranch {
  name: string;
  /** Branch off this branch (default: the target). */
  from?: string;
  commits: { message: string; files: Files }[];
}

export interface FixtureRepo {
  /** Bare origin, as a `file://` URL and as a path. */
  url: string;
  path: string;
  /** Working clone used to build the fixture (tests may add commits through it). */
  clone: string;
  git(...args: string[]): string;
  /** The target moves on: one commit of these files on it, pushed (after the branches were cut, so they may conflict). */
  advanceTarget(message: string, files: Files): void;
}

const identity = ['-c', 'user.name=Tarmac Fixture', '-c', 'user.email=fixture@tarmac.invalid', '-c', 'commit.gpgsign=false'];

/**
 * Creates a bare origin with a target branch and source branches, through a
 * working clone, with real git. Used by the tests and by `npm run demo`.
 */
export function createFixtureRepo(options: { dir?: string; name?: string; target?: string; base: Files; branches?: FixtureBranch[] }): FixtureRepo {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'tarmac-repo-'));
  const target = options.target ?? 'main';
  const path = join(dir, `${options.name ?? 'origin'}.git`);
  const clone = join(dir, 'clone');
  rmSync(path, { recursive: true, force: true });
  rmSync(clone, { recursive: true, force: true });
  execFileSync('git', ['init', '--quiet', '--bare', '--initial-branch', target, path]);
  execFileSync('git', ['init', '--quiet', '--initial-branch', target, clone]);
  const git = (...args: string[]) => execFileSync('git', [...identity, '-C', clone, ...args], { encoding: 'utf8' }).trim();
  const commit = (message: string, files: Files) => {
    for (const [file, content] of Object.entries(files)) {
      mkdirSync(dirname(join(clone, file)), { recursive: true });
      writeFileSync(join(clone, file), content);
    }
    git('add', '-A');
    git('commit', '--quiet', '--allow-empty', '-m', message);
  };
  commit('initial', options.base);
  git('remote', 'add', 'origin', `file://${path}`);
  git('push', '--quiet', 'origin', target);
  for (const branch of options.branches ?? []) {
    git('checkout', '--quiet', '-B', branch.name, branch.from ?? target);
    for (const { message, files } of branch.commits) commit(message, files);
    git('push', '--quiet', 'origin', branch.name);
  }
  git('checkout', '--quiet', target);
  const advanceTarget = (message: string, files: Files) => {
    git('checkout', '--quiet', target);
    commit(message, files);
    git('push', '--quiet', 'origin', target);
  };
  return { url: `file://${path}`, path, clone, git, advanceTarget };
}

/** The commit a branch points at in a bare repository. */
export function branchHead(repoPath: string, branch: string): string {
  return execFileSync('git', ['-C', repoPath, 'rev-parse', `refs/heads/${branch}`], { encoding: 'utf8' }).trim();
}

/** A gate file with the given suites, as text. */
export function gateFile(suites: { id: string; run: string[]; timeout?: string }[], extra: Record<string, unknown> = {}): string {
  return `${JSON.stringify({ version: 1, suites, ...extra }, null, 2)}\n`;
}
