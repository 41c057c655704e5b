/**
 * A slot of the host's warm gate pool (activities/containers/gate-pool.ts): the directory one waiting container
 * mounts (its workspace, and its control directory read-only at /tarmac: the go file and the wake
 * FIFO), the wait it runs, the go file that hands it a suite, and what the run that claimed it does
 * with it — assign the tree and the suite, give the go, adopt the container in its gate step,
 * discard or remove it. A claimed slot lives in its run's directory (`runs/<id>/gate-pool-slot`).
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { linkProducts } from '../environments/environments';
import { poolEnvironmentLabel } from './gate-pool-environments';
import { gitArgs, handToContainerUser } from '../git/git';
import { leanPipe } from '../git/lean-spawn';
import { runPaths } from '../stores/run-store';

/**
 * The wait: the wake FIFO held open (so a poke written while the loop checks is not lost), the go
 * file looked for on every poke and at least every second, then the go sourced (it ends with `exec`
 * of the suite). Bash builtins only: no process is started while it waits.
 */
export const poolWaiter = 'exec 3<>/tarmac/wake; while [ ! -e /tarmac/go ]; do read -r -t 1 -u 3 _ || :; done; exec 3<&-; . /tarmac/go';

export const poolLabelKeys = {
  /** The pool a container belongs to (poolId: host id and data dir). */
  pool: 'tarmac.pool',
  /** The slot, unique: how a claimed container is found by its run. */
  slot: 'tarmac.slot',
  /** The environment (its key's hex) a container was made for; none on the default runner's. */
  environment: poolEnvironmentLabel,
} as const;

/** A pool's identity: one per host id and data dir (test stacks share a host id, not a data dir). */
export function gatePoolId(hostId: string, dataDir: string): string {
  return createHash('sha256')
    .update(JSON.stringify([hostId, dataDir]))
    .digest('hex')
    .slice(0, 16);
}

export interface SlotFile {
  slot: string;
  containerId: string;
  imageId: string;
  /** Made for this environment: its key, and which directory of its files it mounts (`dev:ino`). */
  environment?: { key: string; identity: string };
}

interface Assignment {
  step: string;
  commitSha: string;
  treeSha: string;
}

const quote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;

/** The go file: the suite's environment exported, then its command `exec`ed in the workspace. */
export function goScript(env: string[], command: string[]): string {
  const exports = env.map((entry) => {
    const at = entry.indexOf('=');
    const name = entry.slice(0, at);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`environment entry ${JSON.stringify(entry)} has no valid name`);
    return `export ${name}=${quote(entry.slice(at + 1))}`;
  });
  return `${exports.join('\n')}\ncd /workspace || exit 1\nexec ${command.map(quote).join(' ')}\n`;
}

/** The run side of the pool's slots: everything a claimed slot needs, none of the pool's own state. */
export function createPoolSlots({ dataDir, docker, poolId }: { dataDir: string; docker: Docker; poolId: string }) {
  const slotPaths = (dir: string) => ({
    dir,
    workspace: join(dir, 'workspace'),
    control: join(dir, 'control'),
    slotFile: join(dir, 'slot.json'),
    assignment: join(dir, 'assignment.json'),
  });
  /** Where a run's claimed slot lives: in the run's own directory. */
  const claimedDir = (runId: string) => join(runPaths(dataDir, runId).runDir, 'gate-pool-slot');
  const readSlot = async (dir: string): Promise<SlotFile | undefined> =>
    await readFile(join(dir, 'slot.json'), 'utf8')
      .then((text) => JSON.parse(text) as SlotFile)
      .catch(() => undefined);
  const removeContainer = async (containerId: string) => {
    await docker
      .getContainer(containerId)
      .remove({ force: true })
      .catch((error: { statusCode?: number }) => {
        if (error.statusCode !== 404) throw error;
      });
  };
  /** A slot's containers, found by the pool's and the slot's labels only. */
  const removeSlotContainers = async (slot: string): Promise<number> => {
    const found = await docker.listContainers({
      all: true,
      filters: JSON.stringify({ label: [`${poolLabelKeys.pool}=${poolId}`, `${poolLabelKeys.slot}=${slot}`] }),
    });
    for (const info of found) await removeContainer(info.Id);
    return found.length;
  };

  return {
    slotPaths,
    claimedDir,
    readSlot,
    removeContainer,
    removeSlotContainers,

    /** The tree into the claimed slot's workspace (and an environment's products linked), the suite's environment and command beside the go (not yet given). */
    assign: async ({
      runId,
      worktree,
      commitSha,
      treeSha,
      step,
      env,
      command,
      products = [],
    }: Assignment & { runId: string; worktree: string; env: string[]; command: string[]; products?: string[] }): Promise<void> => {
      const { workspace, control, assignment } = slotPaths(claimedDir(runId));
      // A placement run again after its go: the suite may be running on this workspace. It stands.
      if (existsSync(join(control, 'go'))) return;
      // Into the directory the container has mounted (a new one would not be the one it sees).
      for (const entry of await readdir(workspace)) await rm(join(workspace, entry), { recursive: true, force: true });
      const [archive, tar] = await leanPipe(
        { command: 'git', args: gitArgs(worktree, 'archive', '--format=tar', commitSha) },
        { command: 'tar', args: ['-x', '-C', workspace], stdout: 'ignore' },
      );
      if (archive.code !== 0 || tar.code !== 0)
        throw new Error(`the tree of ${commitSha} was not exported into the pool container's workspace: ${archive.stderr.toString()}${tar.stderr.toString()}`);
      // The environment's products where the tree has nothing, as a gate's own snapshot gets them (environments.ts).
      if (products.length > 0) await linkProducts(workspace, products);
      await handToContainerUser(workspace);
      await writeFile(join(control, 'go.pending'), goScript(env, command), { mode: 0o644 });
      await writeFile(assignment, JSON.stringify({ step, commitSha, treeSha } satisfies Assignment));
    },

    /** The go: the claimed container runs its suite now (the go file in place, the wait poked). */
    go: async (runId: string): Promise<void> => {
      const { control } = slotPaths(claimedDir(runId));
      if (!existsSync(join(control, 'go'))) await rename(join(control, 'go.pending'), join(control, 'go'));
      // Read-write: never blocks, whether or not the wait holds the FIFO yet (it looks for the go file every second anyway).
      const wake = await open(join(control, 'wake'), 'r+');
      try {
        await wake.write('\n');
      } finally {
        await wake.close();
      }
    },

    /** Removes the run's claimed container and slot (not used: the landing does not gate next). */
    discard: async (runId: string): Promise<void> => {
      const dir = claimedDir(runId);
      const found = await readSlot(dir);
      if (found) await removeSlotContainers(found.slot);
      await rm(dir, { recursive: true, force: true });
    },

    /** Removes the run's claimed container, whatever its state (with the run's other containers; its slot directory goes with the run's files). */
    removeClaimed: async (runId: string): Promise<number> => {
      const found = await readSlot(claimedDir(runId));
      return found ? await removeSlotContainers(found.slot) : 0;
    },

    /**
     * The container this step was assigned and given its go, and when it went; none when it was not,
     * or when its container is gone or stopped before the go (then removed: the step makes its own).
     */
    adoptable: async (runId: string, step: string): Promise<{ containerId: string; startedAtMs: number } | undefined> => {
      const { dir, control, assignment } = slotPaths(claimedDir(runId));
      const assigned = await readFile(assignment, 'utf8')
        .then((text) => JSON.parse(text) as Assignment)
        .catch(() => undefined);
      if (assigned?.step !== step) return undefined;
      const [went, slot] = await Promise.all([stat(join(control, 'go')).catch(() => undefined), readSlot(dir)]);
      if (!went || !slot) return undefined;
      const state = await docker
        .getContainer(slot.containerId)
        .inspect()
        .then((info) => info.State)
        .catch(() => undefined);
      if (state && (state.Running || Date.parse(state.FinishedAt) >= Math.floor(went.mtimeMs)))
        return { containerId: slot.containerId, startedAtMs: went.mtimeMs };
      // Gone, or stopped before its go (the suite never ran in it): the step runs the suite in a container of its own.
      if (state) await removeContainer(slot.containerId).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
      return undefined;
    },
  };
}

export type PoolSlots = ReturnType<typeof createPoolSlots>;
