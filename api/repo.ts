import { execFile } from 'node:child_process';
import { realpath, stat } from 'node:fs/promises';
import { promisify } from 'node:util';
import type { BranchHead } from '../core/types';
import {
  formatRepoLocation,
  gitProtocolOf,
  gitTransportArgs,
  gitTransportEnv,
  parseRepoLocation,
  redactCredentials,
  repoAllowProblem,
  type RepoLocation,
} from '../core/repo-location';
import { invalid } from './errors';

const run = promisify(execFile);

/**
 * The one door for repository locations (every route that takes a `repo` calls it before
 * anything is started): canonical form (core/repo-location.ts: credentials, `..`, encoded
 * dots, remote helpers refused), the operator's allow-list (`TARMAC_REPO_ALLOW`), and for a
 * local path its real path, allow-listed again, so a symbolic link inside an allowed directory
 * cannot lead outside it. Returns the canonical location runs record (a local path: its real
 * path). Refusals are 400s naming `repo`.
 */
export async function normaliseRepo(repo: string, allow: readonly string[]): Promise<string> {
  const parsed = parseRepoLocation(repo);
  if (!parsed.ok) throw invalid('repo', parsed.problem);
  // The allow-list is checked before the file system is asked anything: a location outside
  // it learns nothing (not even whether it exists).
  const problem = repoAllowProblem(parsed.location, allow);
  if (problem) throw invalid('repo', problem);
  if (parsed.location.kind !== 'local') return parsed.canonical;
  const real = await realLocation(parsed.location, parsed.canonical);
  if (repoAllowProblem(real, await realAllowList(allow))) {
    throw invalid('repo', `resolves (through a symbolic link) to ${formatRepoLocation(real)}, which TARMAC_REPO_ALLOW does not allow`);
  }
  return formatRepoLocation(real);
}

async function realLocation(location: Extract<RepoLocation, { kind: 'local' }>, canonical: string): Promise<RepoLocation> {
  const path = `/${location.segments.join('/')}`;
  let real: string;
  let directory: boolean;
  try {
    real = await realpath(path);
    directory = (await stat(real)).isDirectory();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw invalid('repo', `does not exist: ${canonical}`);
    if (code === 'ENOTDIR') throw invalid('repo', `is not a directory: ${canonical}`);
    // EACCES, ELOOP, ENAMETOOLONG, …: the caller's location, not a server fault.
    if (code) throw invalid('repo', `cannot be read (${code}): ${canonical}`);
    throw error;
  }
  if (!directory) throw invalid('repo', `is not a directory: ${canonical}`);
  return { ...location, segments: real.split('/').filter((segment) => segment.length > 0) };
}

/** The allow-list with each local entry also by its real path (an allowed directory may itself be a link, e.g. /tmp on macOS). */
async function realAllowList(allow: readonly string[]): Promise<string[]> {
  const entries = [...allow];
  for (const entry of allow) {
    const parsed = parseRepoLocation(entry);
    if (!parsed.ok || parsed.location.kind !== 'local') continue;
    const real = await realpath(`/${parsed.location.segments.join('/')}`).catch(() => undefined);
    if (real) entries.push(real);
  }
  return entries;
}

/** Git's first `fatal:` line (else its last line), without credentials and bounded: why a location could not be read. */
function gitReason(error: unknown): string {
  const stderr = (error as { stderr?: unknown }).stderr;
  const lines = (typeof stderr === 'string' ? stderr : '')
    .split('\n')
    .map((text) => text.trim())
    .filter((text) => text.length > 0);
  const line = lines.find((text) => text.startsWith('fatal:')) ?? lines.pop();
  return line ? ` (git ${redactCredentials(line).slice(0, 300)})` : '';
}

/**
 * Reads the heads of the target and branches with `git ls-remote`: a read-only
 * check that the repo is a git repository and every named branch exists, and the
 * commits the landing is pinned to. `repo` is a location `normaliseRepo` returned; git
 * may speak only its protocol, follows no redirect and never prompts.
 */
export async function resolveHeads(
  repo: string,
  target: string,
  branches: string[],
  fields: { target: string; branch: (index: number) => string } = { target: 'target', branch: (index) => `branches[${index}]` },
): Promise<{ targetSha: string; heads: BranchHead[] }> {
  const parsed = parseRepoLocation(repo);
  if (!parsed.ok) throw invalid('repo', parsed.problem);
  let stdout: string;
  try {
    ({ stdout } = await run('git', [...gitTransportArgs, 'ls-remote', '--heads', '--', repo], {
      timeout: 20_000,
      env: {
        ...process.env,
        ...gitTransportEnv([gitProtocolOf(parsed.location)], process.env.GIT_SSH_COMMAND),
        // No password dialog either (git falls back to SSH_ASKPASS); an operator's own askpass helper is kept.
        GIT_ASKPASS: process.env.GIT_ASKPASS || 'true',
      },
      maxBuffer: 64 * 1024 * 1024,
    }));
  } catch (error) {
    throw invalid('repo', `cannot be read as a git repository: ${repo}${gitReason(error)}`);
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
