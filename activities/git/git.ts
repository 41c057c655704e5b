import { access, mkdir, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { failure, FailureCode } from '../../core/failures';
import { leanRun } from './lean-spawn';
import { gitProtocolOf, gitProtocolSettings, gitTransportEnv, gitTransportSettings, parseRepoLocation, redactCredentials } from '../../core/repo-location';
import { gateFilePath, parseGateFile, type GateFileParse } from '../../core/gate-file';
import { devcontainerPath } from '../../core/environment';
import { environmentOf, type EnvironmentParse } from '../../core/environment-source';
import type { BranchHead } from '../../core/types';
import { mirrorPath, readManifest, recordInManifest, runPaths } from '../stores/run-store';

/**
 * Settings of every git command Tarmac runs. rerere is off so a remembered resolution
 * can never silently replace a real one. Host-side git only ever opens repositories the
 * worker made and no agent can write (the mirror, the run workspace; see
 * session-workspace.ts), so it needs no `safe.directory` exception; hooks and fsmonitor
 * are switched off all the same, so that even a mistake there could not run anything.
 */
const automationSettings = ['rerere.enabled=false', 'advice.detachedHead=false', 'core.hooksPath=/dev/null', 'core.fsmonitor=false'];

/** `git` argv prefix with the automation settings (every host git command starts with it). */
export function gitArgs(baseDir: string, ...args: string[]): string[] {
  return [...automationSettings.flatMap((setting) => ['-c', setting]), '-C', baseDir, ...args];
}

/**
 * Git for automation in repositories the worker made (the mirror, run workspaces): one `git`
 * process per call with the settings above, no shell, started by the spawn helper
 * (activities/git/lean-spawn.ts: a fork of the worker costs 6–25 ms, the helper's ~1 ms; a landing
 * runs a few dozen of these). A failure throws with git's own message (stderr).
 */
interface AutomationGit {
  /** stdout of `git <args>`. */
  raw(args: string[]): Promise<string>;
  /** stdout of `git rev-parse <args>`. */
  revparse(args: string[]): Promise<string>;
  /** stdout of `git show <args>`. */
  show(args: string[]): Promise<string>;
  /** `git init [--bare]`. */
  init(bare: boolean): Promise<void>;
}

export function automationGit(baseDir: string): AutomationGit {
  const raw = (args: string[]) => runGit(baseDir, args);
  return {
    raw,
    revparse: (args) => raw(['rev-parse', ...args]),
    show: (args) => raw(['show', ...args]),
    init: async (bare) => void (await raw(bare ? ['init', '--quiet', '--bare'] : ['init', '--quiet'])),
  };
}

/** One object as `git cat-file --batch` gives it; null when the name does not resolve. */
export interface CatFileObject {
  oid: string;
  type: string;
  content: Buffer;
}

/**
 * Resolves and reads several objects with one `git cat-file --batch` process (names like
 * `<sha>^{commit}` or `<sha>:<path>`): one process where a lookup each would be several.
 */
export async function catFileBatch(baseDir: string, names: string[]): Promise<(CatFileObject | null)[]> {
  if (names.some((name) => /[\n\r]/.test(name))) throw new Error('cat-file: an object name has a line break');
  const {
    code,
    stdout: data,
    stderr,
  } = await leanRun({ command: 'git', args: gitArgs(baseDir, 'cat-file', '--batch'), input: names.map((name) => `${name}\n`).join('') });
  if (code !== 0) throw new Error(stderr.toString('utf8').trim() || `git cat-file --batch exited ${code ?? 'on a signal'}`);
  const objects: (CatFileObject | null)[] = [];
  let at = 0;
  for (let index = 0; index < names.length; index += 1) {
    const end = data.indexOf(0x0a, at);
    if (end < 0) throw new Error('git cat-file --batch: output ended early');
    const header = data.subarray(at, end).toString('utf8');
    at = end + 1;
    // "<oid> <type> <size>", or "<name> missing" / "<name> ambiguous".
    const [oid, type, size] = header.split(' ');
    if (!oid || !type || size === undefined || !/^\d+$/.test(size)) {
      objects.push(null);
      continue;
    }
    objects.push({ oid, type, content: data.subarray(at, at + Number(size)) });
    at += Number(size) + 1;
  }
  return objects;
}

async function runGit(baseDir: string, args: string[]): Promise<string> {
  const { code, stdout, stderr } = await leanRun({ command: 'git', args: gitArgs(baseDir, ...args) });
  if (code === 0) return stdout.toString('utf8');
  throw new Error(stderr.toString('utf8').trim() || `git ${args[0] ?? ''} exited ${code ?? 'on a signal'}`);
}

/** Git for the commands that talk to a run's origin (originGit): fetch, ls-remote, push. */
interface OriginGit {
  /** stdout of `git <args>`; a failure throws with what git said (stderr, then stdout). */
  raw(args: string[]): Promise<string>;
  /** stdout of `git ls-remote <args>`. */
  listRemote(args: string[]): Promise<string>;
  /** `git rev-parse <args>`, trimmed. */
  revparse(args: string[]): Promise<string>;
}

/**
 * The worker's environment for git that talks to an origin: without the variables that make git
 * run another program (editor, pager, askpass, ssh, config paths) — a fetch or push needs none, and
 * npm sets EDITOR for its scripts — and without `GIT_*` but the
 * certificate settings an operator may need for https.
 */
const programVariables = /^(editor|visual|pager|prefix|ssh_askpass|git_.*)$/i;
const certificateVariables = ['GIT_SSL_CAINFO', 'GIT_SSL_CAPATH'] as const;
const environmentForGit = (): Record<string, string> => ({
  ...Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => !programVariables.test(entry[0]) && entry[1] !== undefined)),
  ...Object.fromEntries(certificateVariables.flatMap((name) => (process.env[name] ? [[name, process.env[name]]] : []))),
});

/**
 * Git for a command that talks to a run's origin (fetch, ls-remote, push): it speaks only the
 * location's own protocol (never `ext` or `fd`), follows no redirect, never prompts, and runs
 * ssh in batch mode. The location was canonicalised by the API; a location that does not parse
 * is refused here too.
 */
export function originGit(baseDir: string, repo: string): OriginGit {
  const parsed = parseRepoLocation(repo);
  if (!parsed.ok) throw failure(FailureCode.repoUnreachable, `repository location refused: ${parsed.problem}`);
  const protocols = [gitProtocolOf(parsed.location)];
  const { GIT_TERMINAL_PROMPT, GIT_SSH_COMMAND } = gitTransportEnv(protocols, process.env.GIT_SSH_COMMAND);
  const settings = [...automationSettings, ...gitTransportSettings, ...gitProtocolSettings(protocols)].flatMap((setting) => ['-c', setting]);
  const env = { ...environmentForGit(), GIT_TERMINAL_PROMPT, GIT_SSH_COMMAND };
  const raw = async (args: string[]) => {
    const { code, stdout, stderr } = await leanRun({ command: 'git', args: [...settings, '-C', baseDir, ...args], env });
    if (code === 0) return stdout.toString('utf8');
    // Both streams: a push's refusal is on stdout (--porcelain), the transport's complaint on stderr.
    const said = [stderr.toString('utf8').trim(), stdout.toString('utf8').trim()].filter(Boolean).join('\n');
    throw new Error(said || `git ${args[0] ?? ''} exited ${code ?? 'on a signal'}`);
  };
  return { raw, listRemote: (args) => raw(['ls-remote', ...args]), revparse: async (args) => (await raw(['rev-parse', ...args])).trim() };
}

/** The uid:gid agents and gate suites run as when the worker is root (the images' `tarmac` user). */
export const agentUser = { uid: 1000, gid: 1000 };

/** The uid:gid containers run as: the worker's own, or `agentUser` when the worker is root. */
export function containerUser(): { uid: number; gid: number } {
  return process.getuid?.() === 0 ? agentUser : { uid: process.getuid?.() ?? agentUser.uid, gid: process.getgid?.() ?? agentUser.gid };
}

/** Hands a directory to the containers' user (only needed, and only possible, as root). */
export async function handToContainerUser(path: string): Promise<void> {
  if (process.getuid?.() !== 0) return;
  // -h: a link (committed in a branch, or made by an agent) is changed itself, never its target.
  const { code } = await leanRun({ command: 'chown', args: ['-R', '-h', `${agentUser.uid}:${agentUser.gid}`, path], stdout: 'ignore', stderr: 'ignore' });
  if (code !== 0) throw new Error(`chown ${path} exited ${code}`);
}

/** Paths `headSha` changes relative to `targetSha`. `--no-renames`: a rename lists both its paths. */
export async function changedPaths(git: AutomationGit, targetSha: string, headSha: string): Promise<string[]> {
  const out = await git.raw(['diff', '--no-renames', '--name-only', '-z', targetSha, headSha, '--']);
  return out.split('\0').filter(Boolean);
}

/** The object at `path` in the tree of `sha` (a blob, or whatever was put in its place); null when absent. */
export async function objectAt(git: AutomationGit, sha: string, path: string): Promise<{ type: string; oid: string } | null> {
  const out = await git.raw(['ls-tree', '-z', '--full-tree', sha, '--', path]);
  // One entry: "<mode> <type> <oid>\t<path>\0".
  const entry = out.split('\0').find((line) => line.endsWith(`\t${path}`));
  const [, type, oid] = entry?.split('\t')[0]?.split(' ') ?? [];
  return type && oid ? { type, oid } : null;
}

interface GitActivityDeps {
  dataDir: string;
  hostId: string;
}

export interface InspectTargetInput {
  runId: string;
  repo: string;
  target: string;
  heads: BranchHead[];
}

export interface InspectTargetResult {
  /** The host whose mirror now holds the commits; later host-affine steps run there. */
  hostId: string;
  targetSha: string;
  gate: GateFileParse;
  /** The target's environment declaration (issue 24); absent in results of workers before environments. */
  environment?: EnvironmentParse;
}

/** Classifies a failed fetch: a missing repository or ref is permanent; anything else is retried. */
function fetchFailure(repo: string, error: Error): Error {
  const text = redactCredentials(error.message);
  if (/couldn't find remote ref|not our ref/i.test(text)) {
    return failure(FailureCode.refNotFound, `a requested ref does not exist in ${repo}`);
  }
  if (/does not appear to be a git repository|repository .* not found|no such file|not a git repository/i.test(text)) {
    return failure(FailureCode.repoUnreachable, `repository ${repo} cannot be read`);
  }
  return new Error(text);
}

export async function gitExitCode(baseDir: string, args: string[]): Promise<number> {
  return (await leanRun({ command: 'git', args: gitArgs(baseDir, ...args), stdout: 'ignore', stderr: 'ignore' })).code ?? 1;
}

/**
 * A run's workspace: a clone of the mirror that shares its objects (`--shared`, read
 * through alternates), detached at `sha`. It belongs to the worker: agents get copies
 * of it (session-workspace.ts), never the workspace itself. A retried attempt finds the
 * workspace it made before and keeps it.
 */
export async function ensureWorkspace(mirror: string, path: string, sha: string): Promise<void> {
  if (existsSync(join(path, '.git')) && (await gitExitCode(path, ['rev-parse', '--verify', 'HEAD'])) === 0) return;
  await rm(path, { recursive: true, force: true });
  await mkdir(dirname(path), { recursive: true });
  await automationGit(dirname(path)).raw(['clone', '--quiet', '--shared', '--no-checkout', mirror, path]);
  // Branch content must not change what the host sees of a tree: these attributes override any
  // .gitattributes (info/attributes wins), so a gate snapshot (git archive) is exactly the tree —
  // no export-ignore'd tests, no export-subst, no eol or filter conversion.
  await mkdir(join(path, '.git', 'info'), { recursive: true });
  await writeFile(join(path, '.git', 'info', 'attributes'), '* -export-ignore -export-subst -text -eol -ident -filter -working-tree-encoding\n');
  await automationGit(path).raw(['checkout', '--quiet', '--detach', sha]);
}

/** This host's bare mirror of `repo`, created on first use. */
export async function ensureMirror(dataDir: string, repo: string): Promise<string> {
  const mirror = mirrorPath(dataDir, repo);
  try {
    await access(join(mirror, 'HEAD'));
  } catch {
    await mkdir(mirror, { recursive: true });
    await automationGit(mirror).init(true);
  }
  return mirror;
}

/** Fetches exactly these branches of `repo` into the mirror's `refs/remotes/origin/*`. */
export async function fetchRefs(mirror: string, repo: string, branches: string[]): Promise<void> {
  const refspecs = [...new Set(branches)].map((branch) => `+refs/heads/${branch}:refs/remotes/origin/${branch}`);
  try {
    await originGit(mirror, repo).raw(['fetch', '--no-tags', '--quiet', repo, ...refspecs]);
  } catch (error) {
    throw fetchFailure(repo, error as Error);
  }
}

export function createGitActivities({ dataDir, hostId }: GitActivityDeps) {
  return {
    /**
     * Fetches the target and branches into this host's mirror, checks the pinned heads
     * exist, and reads the gate file from the target tree. Creates nothing of the run.
     */
    inspectTarget: async ({ repo, target, heads }: InspectTargetInput): Promise<InspectTargetResult> => {
      const mirror = await ensureMirror(dataDir, repo);
      await fetchRefs(mirror, repo, [target, ...heads.map((head) => head.branch)]);
      // The target, the pinned heads and the target's gate file in one process.
      const [targetCommit, gateObject, devcontainerObject, ...headCommits] = await catFileBatch(mirror, [
        `refs/remotes/origin/${target}^{commit}`,
        `refs/remotes/origin/${target}^{commit}:${gateFilePath}`,
        `refs/remotes/origin/${target}^{commit}:${devcontainerPath}`,
        ...heads.map((head) => `${head.sha}^{commit}`),
      ]);
      if (!targetCommit) throw failure(FailureCode.refNotFound, `branch ${target} is not in ${repo}`);
      const targetSha = targetCommit.oid;
      heads.forEach((head, index) => {
        if (!headCommits[index]) throw failure(FailureCode.refNotFound, `commit ${head.sha} of branch ${head.branch} is not in ${repo}`);
      });
      // A path that is not a file there (a directory, a submodule) is no gate file either.
      const text = gateObject?.type === 'blob' ? gateObject.content.toString('utf8') : undefined;
      const gate: GateFileParse =
        text === undefined ? { ok: false, field: '(file)', message: `is missing from target ${target} at ${targetSha.slice(0, 12)}` } : parseGateFile(text);
      const devcontainer = devcontainerObject?.type === 'blob' ? devcontainerObject.content.toString('utf8') : undefined;
      return { hostId, targetSha, gate, environment: environmentOf(gate, devcontainer) };
    },

    /**
     * A workspace for a session that is not part of a landing: fetch `ref` into the
     * mirror and make the run workspace at it. Returns the host (sessions pin to it)
     * and the base commit against which the session's commits are counted.
     */
    prepareSessionWorkspace: async ({
      runId,
      repo,
      ref,
      alsoFetch = [],
    }: {
      runId: string;
      repo: string;
      ref: string;
      alsoFetch?: string[];
    }): Promise<{ hostId: string; baseSha: string }> => {
      const mirror = await ensureMirror(dataDir, repo);
      await fetchRefs(mirror, repo, [ref, ...alsoFetch]);
      const baseSha = (await automationGit(mirror).revparse([`refs/remotes/origin/${ref}^{commit}`])).trim();
      const paths = runPaths(dataDir, runId);
      await mkdir(paths.runDir, { recursive: true });
      await recordInManifest(
        paths.manifest,
        { runId, repo, mirror, hostId, createdAt: new Date().toISOString(), containerRunLabel: runId },
        { worktrees: [paths.worktree] },
      );
      await ensureWorkspace(mirror, paths.worktree, baseSha);
      return { hostId, baseSha };
    },

    /** Removes exactly what the run's manifest lists (worktrees, directories); keeps logs and outcome. */
    cleanupRunFiles: async ({ runId }: { runId: string }): Promise<{ removed: string[] }> => {
      const paths = runPaths(dataDir, runId);
      const manifest = await readManifest(paths.manifest);
      if (!manifest) return { removed: [] };
      const inside = (path: string) => path.startsWith(`${paths.runDir}/`);
      const owned = [...manifest.worktrees.filter(inside), ...manifest.dirs.filter(inside)];
      await Promise.all(owned.map((path) => rm(path, { recursive: true, force: true })));
      const removed = owned;
      return { removed };
    },
  };
}

export type GitActivities = ReturnType<typeof createGitActivities>;
