/**
 * What a fix loop reads of its workspace to ground its repro and its playbooks. The workspace is
 * the worker's own repository (agents' commits arrive as bundles), so the tree is read with git
 * plumbing at its head — the file list, package.json — and nothing of the repository runs on the
 * host. Make's database (`make -p`, which sees included makefiles) can only come from make itself:
 * it runs in the runner container on an export of that head, network none, like a gate suite.
 */
import { mkdir, open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type Docker from 'dockerode';
import type { MakeDatabase, RepoFacts } from '../../core/fix-types';
import { makeDatabaseScript, parseMakeDatabase, textualMakeTargets } from '../../policies/make-database';
import { parsePackageJson } from '../../policies/line-edit';
import { labelKeys, runStepContainer } from '../containers/containers';
import { snapshotPreparation } from '../containers/gates';
import { catFileBatch, containerUser, gitArgs } from '../git/git';
import { runPaths } from '../stores/run-store';
import { leanRun } from '../git/lean-spawn';

/** Most regular files listed in the facts (a workflow carries them). */
const maxFactFiles = 5_000;
/** Largest manifest read (package.json, a makefile read as text). */
const maxManifestBytes = 1024 * 1024;
/** Most bytes of make's database kept and parsed. */
const maxDatabaseBytes = 8 * 1024 * 1024;
const makefileNames = ['GNUmakefile', 'makefile', 'Makefile'];

interface TreeEntry {
  mode: string;
  size: number;
  path: string;
}

/** Every blob of a commit's tree, with its mode and size (`git ls-tree -r -l -z`). */
export async function treeEntries(repository: string, commit: string): Promise<TreeEntry[]> {
  const { code, stdout, stderr } = await leanRun({ command: 'git', args: gitArgs(repository, 'ls-tree', '-r', '-l', '-z', '--full-tree', commit) });
  if (code !== 0) throw new Error(stderr.toString('utf8').trim() || `git ls-tree exited ${code}`);
  return stdout
    .toString('utf8')
    .split('\0')
    .filter(Boolean)
    .flatMap((record) => {
      const match = /^(\d+) (\w+) [0-9a-f]+\s+(-|\d+)\t(.*)$/s.exec(record);
      return match && match[2] === 'blob' ? [{ mode: match[1]!, size: match[3] === '-' ? 0 : Number(match[3]), path: match[4]! }] : [];
    });
}

/** Regular files (not links, not submodules). */
export const isRegular = (entry: TreeEntry) => entry.mode === '100644' || entry.mode === '100755';

async function readCapped(path: string, maxBytes: number): Promise<string> {
  const handle = await open(path, 'r').catch(() => undefined);
  if (!handle) return '';
  try {
    const buffer = Buffer.alloc(maxBytes);
    const { bytesRead } = await handle.read(buffer, 0, maxBytes, 0);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}

export function createGroundingActivities({ dataDir, hostId, docker }: { dataDir: string; hostId: string; docker: Docker }) {
  const user = containerUser();

  /** Make's database of a commit's makefiles, from make itself in a container; undefined when make could not give one. */
  async function makeDatabase({
    runId,
    repo,
    commitSha,
    image,
    step,
  }: {
    runId: string;
    repo: string;
    commitSha: string;
    image: string;
    step: string;
  }): Promise<Omit<MakeDatabase, 'source'> | undefined> {
    const paths = runPaths(dataDir, runId);
    const snapshot = join(paths.snapshots, step);
    const output = join(paths.runDir, 'grounding', `${step}.txt`);
    await mkdir(join(paths.runDir, 'grounding'), { recursive: true });
    const result = await runStepContainer(docker, {
      labels: { [labelKeys.run]: runId, [labelKeys.step]: step, [labelKeys.role]: 'grounding', 'tarmac.host': hostId },
      image,
      cmd: ['sh', '-c', makeDatabaseScript],
      user: `${user.uid}:${user.gid}`,
      env: ['HOME=/tmp', 'CI=1'],
      binds: [`${snapshot}:/workspace:rw`],
      workingDir: '/workspace',
      timeoutMs: 60_000,
      // The database is data for the loop, not a log for the event stream: kept beside the logs.
      logFile: output,
      maxLogBytes: maxDatabaseBytes,
      ...snapshotPreparation({ dataDir, hostId, runId, repo, commitSha, snapshot }),
    });
    await rm(snapshot, { recursive: true, force: true });
    if (result.timedOut) return undefined;
    return parseMakeDatabase((await readCapped(output, maxDatabaseBytes)).replace(/^\d{4}-\d\d-\d\dT[\d:.]+Z /gm, ''));
  }

  return {
    /**
     * The facts of the workspace's head: its regular files, the top makefile and make's database of
     * every makefile it reads (or, when make could not say, that makefile's rules read as text),
     * package.json's scripts. `step` names the container step (unique per loop and round).
     */
    groundingFacts: async ({ runId, repo, image, step }: { runId: string; repo: string; image: string; step: string }): Promise<RepoFacts> => {
      const worktree = runPaths(dataDir, runId).worktree;
      const [headSha] = (await catFileBatch(worktree, ['HEAD^{commit}'])).map((object) => object?.oid);
      if (!headSha) throw new Error(`the workspace of ${runId} has no HEAD commit`);
      const entries = await treeEntries(worktree, headSha);
      const regular = entries.filter((entry) => isRegular(entry) && !entry.path.split('/').includes('node_modules'));
      const byPath = new Map(entries.map((entry) => [entry.path, entry]));
      const read: string[] = [];
      const notes: string[] = [];
      const blob = async (path: string): Promise<string | undefined> => {
        const entry = byPath.get(path);
        if (!entry || !isRegular(entry) || entry.size > maxManifestBytes) return undefined;
        const [object] = await catFileBatch(worktree, [`${headSha}:${path}`]);
        read.push(path);
        return object?.content.toString('utf8');
      };

      let packageJson: RepoFacts['packageJson'] = null;
      if (byPath.has('package.json')) {
        const text = await blob('package.json');
        const parsed = text === undefined ? { error: 'not a regular file of at most 1 MiB' } : parsePackageJson(text);
        packageJson = 'error' in parsed ? { error: parsed.error } : { scripts: parsed.scripts, ...(parsed.main ? { main: parsed.main } : {}) };
      }

      // A makefile committed as a link still counts: make will try it (and say what it finds).
      const makefile = makefileNames.find((name) => byPath.has(name)) ?? null;
      let make: MakeDatabase | null = null;
      if (makefile) {
        const database = await makeDatabase({ runId, repo, commitSha: headSha, image, step });
        if (database) {
          make = { source: 'make', ...database };
          read.push(...database.makefiles.filter((path) => byPath.has(path) && !read.includes(path)));
        } else {
          const text = await blob(makefile);
          notes.push(`make's database could not be had in ${image}; ${makefile} was read as text${text === undefined ? ' (and is not a regular file)' : ''}`);
          make = { source: 'text', targets: textualMakeTargets(text ?? '').map((name) => ({ name })), makefiles: [makefile] };
        }
      }
      return {
        headSha,
        files: regular.slice(0, maxFactFiles).map((entry) => entry.path),
        filesTruncated: regular.length > maxFactFiles,
        makefile,
        make,
        packageJson,
        read,
        notes,
      };
    },
  };
}
