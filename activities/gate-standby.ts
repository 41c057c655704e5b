/**
 * The standby gate container: a landing's first gate container, started before its tree is known.
 *
 * Docker takes ~200 ms to start a container, and a landing's first gate round could only start
 * its container once the rebase had made the tree. The standby is started by the placement once the
 * target's gate file is read (beside the workspace and the rebase), on the runner image, and runs
 * nothing of the run: only a wait for a go file on a read-only mount (`/tarmac`). Once the tree is
 * known the placement exports it into the standby's workspace (the directory the container has
 * mounted, filled in place) and writes the first suite's environment and command beside the go;
 * after the patch check, when nothing stops the landing before its gate, it gives the go (else it
 * removes the standby). The gate step of that suite and round adopts the container
 * (`ContainerSpec.adopt`): its deadline and duration count from the go. Same sandbox as every gate
 * container (createStepContainer); its role label is `gate`, and `tarmac.standby=true`.
 *
 * None is made when the suite runs on another image (an image's own entrypoint would be replaced by
 * the wait), or when the tree these very inputs (target and pinned heads) made on this host before
 * is sealed in the gate cache for every suite — a retried or re-queued landing reuses the results
 * and needs no container at all.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import type Docker from 'dockerode';
import { containerName } from '../core/node/container-rules';
import { createStepContainer, labelKeys } from './containers';
import { containerUser, gitArgs, handToContainerUser } from './git';
import { leanPipe } from './lean-spawn';
import type { BranchHead } from '../core/types';
import { mirrorPath, recordInManifest, runPaths, writeFileAtomic } from './run-store';

/** The wait: poll for the go file (20 ms), then run what it says (it ends with `exec` of the suite). */
const waiter = 'while [ ! -e /tarmac/go ]; do sleep 0.02 2>/dev/null || sleep 1; done; . /tarmac/go';
const standbyStep = 'gate-standby';

const quote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;

export interface StandbyAssignment {
  step: string;
  commitSha: string;
  treeSha: string;
}

export function createGateStandby({ dataDir, hostId, docker }: { dataDir: string; hostId: string; docker: Docker }) {
  const paths = (runId: string) => {
    const dir = join(runPaths(dataDir, runId).runDir, 'standby');
    return { dir, workspace: join(dir, 'workspace'), control: join(dir, 'control'), assignment: join(dir, 'assignment.json') };
  };
  const inputsPath = (targetSha: string, heads: BranchHead[]) =>
    join(dataDir, 'rebased', `${createHash('sha256').update(JSON.stringify([targetSha, heads.map((head) => [head.branch, head.sha])])).digest('hex')}.json`);
  const find = async (runId: string) =>
    (await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${labelKeys.run}=${runId}`, `${labelKeys.step}=${standbyStep}`] }) }))[0];

  return {
    /**
     * Starts the run's standby on `image`. `ready`: its directories are made and the image can take
     * it (false: an entrypoint of its own, which the wait would replace) — enough to assign it;
     * `running`: Docker has created and started it (~200 ms more), which nothing needs to wait for.
     */
    start: ({ runId, repo, image, when }: { runId: string; repo: string; image: string; when: Promise<boolean> }): { ready: Promise<boolean>; running: Promise<void> } => {
      const { dir, workspace, control } = paths(runId);
      const ready = (async () => {
        if (!(await when)) return false;
        const info = await docker.getImage(image).inspect();
        if (info.Config.Entrypoint && info.Config.Entrypoint.length > 0) return false;
        await recordInManifest(runPaths(dataDir, runId).manifest, { runId, repo, mirror: mirrorPath(dataDir, repo), hostId, createdAt: new Date().toISOString(), containerRunLabel: runId }, { dirs: [dir] });
        await mkdir(workspace, { recursive: true });
        await mkdir(control, { recursive: true });
        await handToContainerUser(workspace);
        return true;
      })();
      const running = ready.then(async (usable) => {
        if (!usable) return;
        const user = containerUser();
        let container: Docker.Container;
        try {
          container = await createStepContainer(
            docker,
            {
              labels: { [labelKeys.run]: runId, [labelKeys.step]: standbyStep, [labelKeys.role]: 'gate', [labelKeys.standby]: 'true', [labelKeys.ahead]: 'true', 'tarmac.host': hostId },
              image,
              entrypoint: ['/bin/sh', '-c', waiter],
              cmd: [],
              user: `${user.uid}:${user.gid}`,
              env: ['HOME=/tmp', 'CI=1'],
              binds: [`${workspace}:/workspace:rw`, `${control}:/tarmac:ro`],
              workingDir: '/workspace',
              timeoutMs: 0,
              logFile: '',
            },
            containerName(runId, standbyStep),
            16 * 1024 * 1024,
          );
        } catch (error) {
          if ((error as { statusCode?: number }).statusCode !== 409) throw error;
          const found = await find(runId);
          if (!found) throw error;
          container = docker.getContainer(found.Id);
        }
        await container.start().catch((error: { statusCode?: number }) => {
          if (error.statusCode !== 304) throw error;
        });
      });
      return { ready, running };
    },

    /** The tree a placement's rebase of these inputs made on this host before (a rebase is a function of its inputs). */
    treeOf: async ({ targetSha, heads }: { targetSha: string; heads: BranchHead[] }): Promise<string | undefined> =>
      await readFile(inputsPath(targetSha, heads), 'utf8').then((text) => (JSON.parse(text) as { treeSha: string }).treeSha).catch(() => undefined),
    rememberTree: async ({ targetSha, heads, treeSha }: { targetSha: string; heads: BranchHead[]; treeSha: string }): Promise<void> => {
      const path = inputsPath(targetSha, heads);
      await mkdir(dirname(path), { recursive: true });
      await writeFileAtomic(path, JSON.stringify({ targetSha, heads, treeSha }), { durable: false });
    },

    /** The tree into the standby's workspace and the suite's environment and command beside the go (not yet given). */
    assign: async ({ runId, commitSha, treeSha, step, env, command }: StandbyAssignment & { runId: string; env: string[]; command: string[] }): Promise<void> => {
      const { workspace, control, assignment } = paths(runId);
      // A placement run again (its workflow task lost) after it gave the go: the suite may be running
      // on this workspace now. The assignment stands (same inputs, same step); nothing is touched.
      if (existsSync(join(control, 'go'))) return;
      // Into the directory the container has mounted (replacing it would leave the container the old, deleted one).
      for (const entry of await readdir(workspace)) await rm(join(workspace, entry), { recursive: true, force: true });
      const [archive, tar] = await leanPipe({ command: 'git', args: gitArgs(runPaths(dataDir, runId).worktree, 'archive', '--format=tar', commitSha) }, { command: 'tar', args: ['-x', '-C', workspace], stdout: 'ignore' });
      if (archive.code !== 0 || tar.code !== 0) throw new Error(`the tree of ${commitSha} was not exported into the standby: ${archive.stderr.toString()}${tar.stderr.toString()}`);
      await handToContainerUser(workspace);
      const exports = env.map((entry) => {
        const at = entry.indexOf('=');
        return `export ${entry.slice(0, at)}=${quote(entry.slice(at + 1))}`;
      });
      await writeFile(join(control, 'go.pending'), `${exports.join('\n')}\ncd /workspace\nexec ${command.map(quote).join(' ')}\n`);
      await writeFile(assignment, JSON.stringify({ step, commitSha, treeSha } satisfies StandbyAssignment));
    },

    /** The go: the standby runs its suite now. */
    go: async (runId: string): Promise<void> => {
      const { control } = paths(runId);
      if (!existsSync(join(control, 'go'))) await rename(join(control, 'go.pending'), join(control, 'go'));
    },

    /** Removes the standby (not used). */
    discard: async (runId: string): Promise<void> => {
      const found = await find(runId);
      if (found) await docker.getContainer(found.Id).remove({ force: true });
      await rm(paths(runId).dir, { recursive: true, force: true });
    },

    /** The standby this step was assigned to and given its go: its container and when it went. */
    adoptable: async (runId: string, step: string): Promise<{ containerId: string; startedAtMs: number } | undefined> => {
      const { control, assignment } = paths(runId);
      const assigned = (await readFile(assignment, 'utf8').then((text) => JSON.parse(text) as StandbyAssignment).catch(() => undefined));
      if (assigned?.step !== step) return undefined;
      const went = await stat(join(control, 'go')).catch(() => undefined);
      // Created a moment after its go, at the latest (the placement does not wait for Docker).
      let found = went ? await find(runId) : undefined;
      for (let tries = 0; went && !found && tries < 50; tries += 1) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        found = await find(runId);
      }
      return found && went ? { containerId: found.Id, startedAtMs: went.mtimeMs } : undefined;
    },
  };
}

export type GateStandby = ReturnType<typeof createGateStandby>;
