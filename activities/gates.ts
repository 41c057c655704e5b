import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type Docker from 'dockerode';
import type { GateSuite } from '../core/gate-file';
import type { GateSuiteResult } from '../core/types';
import { createStepContainerAhead, labelKeys, removeRunContainers, runStepContainer, type ContainerSpec } from './containers';
import { containerUser, gitArgs, handToContainerUser } from './git';
import { dataRef, mirrorPath, recordInManifest, runPaths } from './run-store';

export interface GateActivityDeps {
  dataDir: string;
  hostId: string;
  docker: Docker;
}

export interface RunGateSuiteInput {
  runId: string;
  repo: string;
  /** The commit whose tree is gated; the result is recorded against its tree SHA. */
  commitSha: string;
  treeSha: string;
  suite: GateSuite;
  image: string;
  timeoutMs: number;
  /** Gate round (1 for the first gate, 2 after a fixup…): part of the step's identity. */
  round: number;
}

async function run(command: string, args: string[], options: { cwd?: string; input?: NodeJS.ReadableStream } = {}): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    if (options.input) options.input.pipe(child.stdin);
    else child.stdin.end();
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} exited ${code}: ${stderr.trim()}`))));
  });
}

/** Writes the exact tree of a commit into a fresh directory (no .git, nothing else). */
export async function exportTree(repository: string, commitSha: string, dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const archive = spawn('git', gitArgs(repository, 'archive', '--format=tar', commitSha), { stdio: ['ignore', 'pipe', 'inherit'] });
  const archived = new Promise<void>((resolve, reject) => {
    archive.on('error', reject);
    archive.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`git archive ${commitSha} exited ${code}`))));
  });
  await Promise.all([run('tar', ['-x', '-C', dir], { input: archive.stdout }), archived]);
}

export function createGateActivities({ dataDir, hostId, docker }: GateActivityDeps) {
  const user = containerUser();

  /** The container of one suite on one tree, and the snapshot of that tree it mounts. */
  const suiteContainer = ({ runId, repo, commitSha, treeSha, suite, image, timeoutMs, round }: RunGateSuiteInput): { spec: ContainerSpec; logFile: string } => {
    const paths = runPaths(dataDir, runId);
    const step = `gate-${suite.id}-${treeSha.slice(0, 12)}-r${round}`;
    const snapshot = join(paths.snapshots, step);
    // Written once the snapshot is complete: a container found never started runs on it as is.
    const ready = `${snapshot}.ready`;
    const logFile = join(paths.logs, `${step}.log`);
    const spec: ContainerSpec = {
      labels: {
        [labelKeys.run]: runId,
        [labelKeys.step]: step,
        [labelKeys.role]: 'gate',
        [labelKeys.tree]: treeSha,
        'tarmac.suite': suite.id,
        'tarmac.host': hostId,
      },
      image,
      cmd: suite.run,
      user: `${user.uid}:${user.gid}`,
      env: ['HOME=/tmp', 'CI=1', `TARMAC_SUITE=${suite.id}`, `TARMAC_TREE_SHA=${treeSha}`],
      binds: [`${snapshot}:/workspace:rw`],
      workingDir: '/workspace',
      timeoutMs,
      logFile,
      // A fresh container gets a fresh snapshot (exported while the container is created); a
      // reattached one keeps the tree its container is using.
      prepare: async () => {
        await rm(ready, { force: true });
        await recordInManifest(paths.manifest, { runId, repo, mirror: mirrorPath(dataDir, repo), hostId, createdAt: new Date().toISOString(), containerRunLabel: runId }, { dirs: [snapshot, ready] });
        // The workspace holds the run's own commits (rebased, fixed) and reads the rest from the mirror.
        await exportTree(paths.worktree, commitSha, snapshot);
        await handToContainerUser(snapshot);
        await writeFile(ready, `${commitSha}\n`);
      },
      isPrepared: async () => existsSync(ready),
    };
    return { spec, logFile };
  };

  return {
    /**
     * Runs one suite of the gate in a sandbox container against exactly one tree.
     * The suite's result is data (passed / failed / timed-out), not an activity failure.
     */
    runGateSuite: async (input: RunGateSuiteInput): Promise<GateSuiteResult> => {
      const { suite, treeSha } = input;
      const { spec, logFile } = suiteContainer(input);
      const result = await runStepContainer(docker, spec);
      return {
        suiteId: suite.id,
        treeSha,
        status: result.timedOut ? 'timed-out' : result.exitCode === 0 ? 'passed' : 'failed',
        exitCode: result.exitCode,
        logRef: dataRef(dataDir, logFile),
        durationMs: result.durationMs,
        reattached: result.reattached,
      };
    },

    /**
     * Makes a suite's container ahead of its gate round (snapshot exported, container created, not
     * started), so the round only starts it; the landing's placement does this beside its patch
     * check, and starts it when nothing can stop the landing before its gate.
     */
    prepareGateSuite: async (input: RunGateSuiteInput): Promise<Docker.Container> => await createStepContainerAhead(docker, suiteContainer(input).spec),

    /** Removes the run's containers, found by the run's label only. */
    removeRunContainers: async ({ runId }: { runId: string }): Promise<{ removed: number }> => {
      return { removed: (await removeRunContainers(docker, runId)).length };
    },
  };
}

export type GateActivities = ReturnType<typeof createGateActivities>;
