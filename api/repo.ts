import { execFile } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { BranchHead } from '../core/types';
import { invalid } from './errors';

const run = promisify(execFile);

/** Git URLs (`scheme://…`, `user@host:path`) are taken as given; anything else is a local path. */
export function isGitUrl(repo: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(repo) || /^[^/\s]+@[^/\s]+:/.test(repo);
}

/**
 * Normalises a repo location: an absolute path that exists, or a git URL; then checks it
 * against the operator's allow-list (`TARMAC_REPO_ALLOW` prefixes; empty allows any).
 */
export async function normaliseRepo(repo: string, allow: readonly string[] = []): Promise<string> {
  const normalised = await normaliseLocation(repo);
  if (allow.length > 0 && !allow.some((prefix) => normalised.startsWith(prefix))) {
    throw invalid('repo', `is not allowed on this server (TARMAC_REPO_ALLOW lists the allowed prefixes): ${normalised}`);
  }
  return normalised;
}

async function normaliseLocation(repo: string): Promise<string> {
  // A NUL byte made stat() throw (a 500); control characters have no place in a repo path or URL.
  if (/\p{Cc}/u.test(repo)) throw invalid('repo', 'must not contain control characters');
  if (isGitUrl(repo)) {
    if (/^(ext|fd)::/i.test(repo) || repo.startsWith('-')) throw invalid('repo', 'uses a transport Tarmac does not allow');
    return repo;
  }
  if (repo.startsWith('-')) throw invalid('repo', 'must not start with "-"');
  const path = isAbsolute(repo) ? repo : resolve(repo);
  try {
    if (!(await stat(path)).isDirectory()) throw invalid('repo', `is not a directory: ${path}`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw invalid('repo', `does not exist: ${path}`);
    throw error;
  }
  return path;
}

/**
 * Reads the heads of the target and branches with `git ls-remote`: a read-only
 * check that the repo is a git repository and every named branch exists, and the
 * commits the landing is pinned to.
 */
export async function resolveHeads(
  repo: string,
  target: string,
  branches: string[],
  fields: { target: string; branch: (index: number) => string } = { target: 'target', branch: (index) => `branches[${index}]` },
): Promise<{ targetSha: string; heads: BranchHead[] }> {
  let stdout: string;
  try {
    ({ stdout } = await run('git', ['ls-remote', '--heads', '--', repo], {
      timeout: 20_000,
      // Never wait for a person: no password prompt, no SSH host-key or passphrase question.
      env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'true', GIT_SSH_COMMAND: process.env.GIT_SSH_COMMAND ?? 'ssh -o BatchMode=yes' },
      maxBuffer: 64 * 1024 * 1024,
    }));
  } catch {
    throw invalid('repo', `cannot be read as a git repository: ${repo}`);
  }
  const refs = new Map<string, string>();
  for (const line of stdout.split('\n')) {
    const [sha, ref] = line.split('\t');
    if (sha && ref?.startsWith('refs/heads/')) refs.set(ref.slice('refs/heads/'.length), sha);
  }
  const targetSha = refs.get(target);
  if (!targetSha) throw invalid(fields.target, `branch "${target}" does not exist in ${repo}`);
  const heads = branches.map((branch, index) => {
    const sha = refs.get(branch);
    if (!sha) throw invalid(fields.branch(index), `branch "${branch}" does not exist in ${repo}`);
    return { branch, sha };
  });
  return { targetSha, heads };
}
