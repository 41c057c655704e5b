import { existsSync } from 'node:fs';
import { lstat, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { containerPaths } from '../../core/harnesses/types';
import { readFileNoFollow } from '../stores/confined-fs';
import { linkEnvironment } from '../containers/command-container';
import { labelKeys, runStepContainer } from '../containers/containers';
import { automationGit, gitExitCode, handToContainerUser } from '../git/git';
import { leanRun } from '../git/lean-spawn';

/**
 * The trust boundary for an agent's work (docs/SECURITY.md).
 *
 * The run's workspace belongs to the worker: rebases, gates, pushes and cleanup run
 * there, and no container ever gets it writable. Each session attempt works in a copy
 * of it that belongs to the agent. The host never runs git — or anything else — in that
 * copy: when the agent's container has ended, an *export* container (the session's own
 * image, sandboxed like the session) writes the copy's HEAD and a `git bundle` of its
 * commits into an export directory. The worker reads those as data: it fetches from the
 * bundle into the worker-owned repository, so hooks, `core.fsmonitor`, filter drivers or
 * any other config the agent wrote into its copy can never run on the host.
 */
export interface AttemptWorkspace {
  /** The agent's copy of the run workspace (mounted at /workspace). */
  copy: string;
  /** Where the export container leaves `head` and `commits.bundle`. */
  exportDir: string;
}

/** Bundles larger than this are refused (an agent's commits, not a dump of the disk). */
const maxBundleBytes = 512 * 1024 * 1024;

export function attemptWorkspace(attemptDir: string): AttemptWorkspace {
  return { copy: join(attemptDir, 'workspace'), exportDir: join(attemptDir, 'export') };
}

async function run(command: string, args: string[]): Promise<void> {
  const { code, stderr } = await leanRun({ command, args, stdout: 'ignore' });
  if (code !== 0) throw new Error(`${command} exited ${code}: ${stderr.toString('utf8').trim()}`);
}

/**
 * Makes the attempt's copy of the run workspace, once: a plain file copy (`cp -a`
 * copies links as links) of the worker-owned repository in whatever state it is — a
 * resolver's copy carries the stopped rebase — handed to the agents' uid. Whether it is
 * made is recorded in the attempt directory, which the agent cannot write, so a retried
 * activity never has to look inside the copy to decide. With a repository environment's
 * `products`, they are linked into the copy (and excluded from git) before it is handed over.
 */
export async function prepareAttemptCopy(runWorkspace: string, attemptDir: string, products: string[] = []): Promise<AttemptWorkspace> {
  const paths = attemptWorkspace(attemptDir);
  const marker = join(attemptDir, 'workspace.ready');
  if (existsSync(marker)) return paths;
  await rm(paths.copy, { recursive: true, force: true });
  await mkdir(attemptDir, { recursive: true });
  await run('cp', ['-a', '--', runWorkspace, paths.copy]);
  if (products.length > 0) await linkEnvironment(paths.copy, products);
  await handToContainerUser(paths.copy);
  await writeFile(marker, `${new Date().toISOString()}\n`);
  return paths;
}

/**
 * The attempt's conversation directory (the CLI's own state, mounted at /tarmac/conversation),
 * once: empty, or a `cp -a` copy of the conversation an earlier attempt left (a follow-up
 * resumes it). The earlier one is agent-written: it is copied as it is (links as links) and
 * never read by the worker; the copy is the agents' uid's. Made-ness is recorded beside it.
 */
export async function prepareConversation(attemptDir: string, continuesAttemptDir?: string): Promise<string> {
  const dir = join(attemptDir, 'conversation');
  const marker = join(attemptDir, 'conversation.ready');
  if (existsSync(marker)) return dir;
  await rm(dir, { recursive: true, force: true });
  await mkdir(attemptDir, { recursive: true });
  const earlier = continuesAttemptDir ? join(continuesAttemptDir, 'conversation') : undefined;
  if (earlier && existsSync(earlier)) await run('cp', ['-a', '--', earlier, dir]);
  else await mkdir(dir);
  await handToContainerUser(dir);
  await writeFile(
    marker,
    `${new Date().toISOString()}
`,
  );
  return dir;
}

/** What the export container reports, checked as untrusted data. */
export interface AttemptExport {
  /** The copy's HEAD, or null when the export produced nothing usable. */
  headSha: string | null;
  /** `rebasing`: the agent left a rebase unfinished in its copy. */
  state: 'clean' | 'rebasing';
  /** Why nothing was imported (missing, malformed or oversized export; fetch refused). */
  problem?: string;
}

/**
 * The export script, run inside the session's sandbox over the read-only copy. Agent
 * config may do anything to this git; all it can affect is data the host checks.
 */
const exportScript = [
  'set -u',
  'out=/tarmac/export',
  'cd /workspace || exit 3',
  'head=$(git rev-parse --verify --quiet "HEAD^{commit}") || exit 4',
  'state=clean',
  '{ [ -e .git/rebase-merge ] || [ -e .git/rebase-apply ]; } && state=rebasing',
  'if [ "$head" != "$TARMAC_BASE" ]; then git bundle create --quiet "$out/commits.bundle" HEAD "^$TARMAC_BASE" || exit 5; fi',
  'printf "%s %s\\n" "$head" "$state" > "$out/head"',
].join('\n');

interface ExportInput {
  docker: Docker;
  runId: string;
  /** The session's step label; the export's step is derived from it. */
  step: string;
  image: string;
  user: string;
  paths: AttemptWorkspace;
  /** The commit the attempt started from: the bundle carries what the agent added over it. */
  baseSha: string;
  /** Object directories the copy reads through alternates (mounted read-only at the same paths). */
  objectDirs: string[];
  logFile: string;
}

/** Runs the export container (or reattaches to it) over the attempt's copy. */
export async function runExport(input: ExportInput): Promise<{ exitCode: number | null }> {
  // Made and handed over once; a retry finds what the export container left and touches none of it.
  // (Made under a temporary name and renamed, so a crash in between cannot leave it unhanded.)
  if (!existsSync(input.paths.exportDir)) {
    const fresh = `${input.paths.exportDir}.${process.pid}.tmp`;
    await rm(fresh, { recursive: true, force: true });
    await mkdir(fresh, { recursive: true });
    await handToContainerUser(fresh);
    await rename(fresh, input.paths.exportDir);
  }
  const result = await runStepContainer(input.docker, {
    labels: { [labelKeys.run]: input.runId, [labelKeys.step]: `${input.step}-export`, [labelKeys.role]: 'export' },
    image: input.image,
    entrypoint: ['/bin/sh', '-c'],
    cmd: [exportScript],
    user: input.user,
    env: ['HOME=/tmp', `TARMAC_BASE=${input.baseSha}`],
    binds: [
      `${input.paths.copy}:${containerPaths.workspace}:ro`,
      `${input.paths.exportDir}:/tarmac/export:rw`,
      ...input.objectDirs.map((dir) => `${dir}:${dir}:ro`),
    ],
    workingDir: containerPaths.workspace,
    timeoutMs: 120_000,
    logFile: input.logFile,
    memoryBytes: 512 * 1024 ** 2,
    pidsLimit: 64,
  });
  return { exitCode: result.exitCode };
}

/**
 * Imports an attempt's export into the worker-owned repository `repo`: checks the
 * report, fetches the bundle (objects checked by fsck) into `ref`, and confirms the ref
 * is the reported head. Git here only ever opens `repo`; the bundle is read as data.
 */
export async function importExport(repo: string, paths: AttemptWorkspace, baseSha: string, ref: string): Promise<AttemptExport> {
  let report: string;
  try {
    report = (await readFileNoFollow(paths.exportDir, 'head', 200)).toString('utf8');
  } catch (error) {
    return { headSha: null, state: 'clean', problem: `the export left no readable head (${(error as Error).message})` };
  }
  const match = /^([0-9a-f]{40}) (clean|rebasing)\n$/.exec(report);
  if (!match) return { headSha: null, state: 'clean', problem: 'the export head is malformed' };
  const [, headSha, state] = match as unknown as [string, string, 'clean' | 'rebasing'];
  if (headSha === baseSha) return { headSha, state };
  const bundle = join(paths.exportDir, 'commits.bundle');
  const info = await lstat(bundle).catch(() => undefined);
  if (!info?.isFile()) return { headSha: null, state, problem: 'the export left no bundle of the new commits' };
  if (info.size > maxBundleBytes) return { headSha: null, state, problem: `the bundle is larger than ${maxBundleBytes} bytes` };
  try {
    // `file` is allowed for this one command: a bundle is read through the file transport.
    await automationGit(repo).raw([
      '-c',
      'protocol.allow=never',
      '-c',
      'protocol.file.allow=always',
      '-c',
      'fetch.fsckObjects=true',
      'fetch',
      '--quiet',
      '--no-tags',
      '--no-write-fetch-head',
      bundle,
      `+HEAD:${ref}`,
    ]);
  } catch (error) {
    return { headSha: null, state, problem: `the bundle was refused: ${(error as Error).message.split('\n')[0]}` };
  }
  const fetched = (await automationGit(repo).revparse([`${ref}^{commit}`])).trim();
  if (fetched !== headSha)
    return { headSha: null, state, problem: `the bundle's HEAD ${fetched.slice(0, 12)} is not the reported head ${headSha.slice(0, 12)}` };
  return { headSha, state };
}

/** Commits of `headSha` over `baseSha` in the worker-owned `repo` (0 unless it builds on the base). */
export async function commitsOver(repo: string, baseSha: string, headSha: string): Promise<number> {
  if (headSha === baseSha) return 0;
  if ((await gitExitCode(repo, ['merge-base', '--is-ancestor', baseSha, headSha])) !== 0) return 0;
  return Number((await automationGit(repo).raw(['rev-list', '--count', `${baseSha}..${headSha}`])).trim());
}

/**
 * Moves the worker-owned workspace to the agent's head when it builds on the workspace's
 * own head (a fixer's commits). A head that rewrote history is not taken.
 */
export async function advanceWorkspace(repo: string, headSha: string): Promise<boolean> {
  const current = (await automationGit(repo).revparse(['HEAD'])).trim();
  if (current === headSha) return true;
  if ((await gitExitCode(repo, ['merge-base', '--is-ancestor', current, headSha])) !== 0) return false;
  await automationGit(repo).raw(['checkout', '--quiet', '--detach', headSha]);
  return true;
}

/** The worker-owned workspace holds a stopped rebase (its resolver's head waits for the rebase capsule). */
export async function rebaseStopped(repo: string): Promise<boolean> {
  return existsSync(join(repo, '.git', 'rebase-merge')) || existsSync(join(repo, '.git', 'rebase-apply'));
}
