import { realpath, stat } from 'node:fs/promises';
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
import { leanRun } from '../activities/git/lean-spawn';
import { invalid } from './errors';

/** How long `git ls-remote` may take before the location is refused as unreadable. */
const lsRemoteTimeoutMs = 20_000;
/** Most bytes of `git ls-remote --heads` output read (a repository with a flood of branches is refused). */
const maxRefListingBytes = 64 * 1024 * 1024;

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
function gitReason(stderr: string): string {
  const lines = stderr
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
  // Started by the spawn helper: a fork of the API process would hold its event loop (and every
  // other request) for as long as the fork takes.
  const listed = await leanRun({
    command: 'git',
    args: [...gitTransportArgs, 'ls-remote', '--heads', '--', repo],
    timeoutMs: lsRemoteTimeoutMs,
    maxStdoutBytes: maxRefListingBytes,
    env: {
      ...process.env,
      ...gitTransportEnv([gitProtocolOf(parsed.location)], process.env.GIT_SSH_COMMAND),
      // No password dialog either (git falls back to SSH_ASKPASS); an operator's own askpass helper is kept.
      GIT_ASKPASS: process.env.GIT_ASKPASS || 'true',
    },
  });
  // (A git that cannot be started at all is this server's fault, not the request's: that error goes
  // out as it is, a 500 naming it.)
  if (listed.overflowed)
    throw invalid('repo', `cannot be read as a git repository: ${repo} (its branches take more than ${maxRefListingBytes / 1024 / 1024} MiB to list)`);
  if (listed.timedOut) throw invalid('repo', `cannot be read as a git repository: ${repo} (git ls-remote did not answer within ${lsRemoteTimeoutMs / 1000} s)`);
  if (listed.code !== 0) throw invalid('repo', `cannot be read as a git repository: ${repo}${gitReason(listed.stderr.toString('utf8'))}`);
  const stdout = listed.stdout.toString('utf8');
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
