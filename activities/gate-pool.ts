/**
 * The host's warm gate pool: gate containers started before any request, each waiting for one suite.
 *
 * Docker takes ~200 ms to start a container, and a landing's gate could only start its container
 * once the rebase had made the tree — the largest single part of a small landing. The pool keeps
 * `TARMAC_GATE_POOL` containers (default 1) started ahead on the default runner image, with the
 * same sandbox as every gate container (createStepContainer: network none, read-only root, no
 * capabilities, no-new-privileges, the runner user, the same limits), each running only a wait on
 * a read-only control mount. They belong to the host, not to any request: nothing is started for a
 * request whose gate file turns out invalid, and a reused (cached) result takes none.
 *
 * A landing's placement *claims* one for its first suite once the tree is known: the slot's
 * directory is moved into the run's own directory (a rename — the container's mounts follow it; the
 * run's manifest lists it, so the run's cleanup removes it, and its container is found by the slot's
 * label), the tree is exported into the slot's workspace in place, and the suite's environment and
 * command are written beside the go. The go (after the patch check) starts the suite: the wait
 * `exec`s it. The suite's gate step *adopts* the container (ContainerSpec.adopt): its deadline and
 * duration count from the go, and a retried step reattaches to it. A container is used once, by one
 * suite; the pool makes another once the claimed one has exited (or two seconds after the claim).
 *
 * What the pool does not take: another image, an entrypoint or limits of the suite's own (none
 * today), evidence runs; a container of an older build of the image, or one that is not running,
 * is removed at the claim. At start the host removes the pool containers of an earlier process
 * (killed) that no run has claimed, or whose run's directory is gone; at a clean stop its idle ones.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { createStepContainer, labelKeys, type ContainerSpec } from './containers';
import { containerUser, gitArgs, handToContainerUser } from './git';
import { leanPipe, leanRun } from './lean-spawn';
import { recordInManifest, mirrorPath, runPaths, writeFileAtomic } from './run-store';

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
} as const;

/** A pool's identity: one per host id and data dir (test stacks share a host id, not a data dir). */
export function gatePoolId(hostId: string, dataDir: string): string {
  return createHash('sha256').update(JSON.stringify([hostId, dataDir])).digest('hex').slice(0, 16);
}

interface SlotFile {
  slot: string;
  containerId: string;
  imageId: string;
}

interface Assignment {
  step: string;
  commitSha: string;
  treeSha: string;
}

export interface GatePoolDeps {
  dataDir: string;
  hostId: string;
  docker: Docker;
  /** Containers kept waiting (0: no pool). */
  size: number;
  /** The one image the pool runs (the default runner). */
  image: string;
  log?: { info(message: string, meta?: Record<string, unknown>): void; warn(message: string, meta?: Record<string, unknown>): void };
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

export function createGatePool(deps: GatePoolDeps) {
  const { dataDir, hostId, docker, size, image } = deps;
  const poolId = gatePoolId(hostId, dataDir);
  const poolDir = join(dataDir, 'gate-pool', poolId);
  const user = containerUser();
  const idle: SlotFile[] = [];
  let filling = 0;
  let stopped = false;
  let fills: Promise<void> = Promise.resolve();

  const slotPaths = (dir: string) => ({ dir, workspace: join(dir, 'workspace'), control: join(dir, 'control'), slotFile: join(dir, 'slot.json'), assignment: join(dir, 'assignment.json') });
  /** Where a run's claimed slot lives: in the run's own directory. */
  const claimedDir = (runId: string) => join(runPaths(dataDir, runId).runDir, 'gate-pool-slot');
  const readSlot = async (dir: string): Promise<SlotFile | undefined> => await readFile(join(dir, 'slot.json'), 'utf8').then((text) => JSON.parse(text) as SlotFile).catch(() => undefined);
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
    const found = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${poolLabelKeys.pool}=${poolId}`, `${poolLabelKeys.slot}=${slot}`] }) });
    for (const info of found) await removeContainer(info.Id);
    return found.length;
  };
  const writeState = () => writeFileAtomic(join(poolDir, 'state.json'), `${JSON.stringify({ size, idle: idle.length, filling })}\n`, { durable: false }).catch(() => undefined);

  /** The slots runs of this data dir have claimed (their `gate-pool-slot` directories). */
  const claimedSlots = async (): Promise<Set<string>> => {
    const runs = join(dataDir, 'runs');
    const found = await Promise.all((await readdir(runs).catch(() => [] as string[])).map((run) => readSlot(join(runs, run, 'gate-pool-slot'))));
    return new Set(found.flatMap((slot) => (slot ? [slot.slot] : [])));
  };

  /** Makes one waiting container in a fresh slot. */
  const makeOne = async (): Promise<void> => {
    const slot = `${Date.now().toString(36)}-${randomBytes(5).toString('hex')}`;
    const { dir, workspace, control, slotFile } = slotPaths(join(poolDir, slot));
    await mkdir(workspace, { recursive: true });
    await mkdir(control, { recursive: true });
    const fifo = await leanRun({ command: 'mkfifo', args: ['-m', '0666', join(control, 'wake')] });
    if (fifo.code !== 0) throw new Error(`mkfifo exited ${fifo.code}: ${fifo.stderr.toString().trim()}`);
    await handToContainerUser(workspace);
    const imageId = (await docker.getImage(image).inspect()).Id;
    const spec: Omit<ContainerSpec, 'labels'> & { labels: Record<string, string> } = {
      labels: { [labelKeys.role]: 'gate', [poolLabelKeys.pool]: poolId, [poolLabelKeys.slot]: slot, 'tarmac.host': hostId },
      image: imageId,
      entrypoint: ['/bin/bash', '-c', poolWaiter],
      cmd: [],
      user: `${user.uid}:${user.gid}`,
      env: ['HOME=/tmp', 'CI=1'],
      binds: [`${workspace}:/workspace:rw`, `${control}:/tarmac:ro`],
      workingDir: '/workspace',
      timeoutMs: 0,
      logFile: '',
    };
    let container: Docker.Container | undefined;
    try {
      container = await createStepContainer(docker, spec, `tarmac-pool-${poolId}-${slot}`, 16 * 1024 * 1024);
      await writeFile(slotFile, JSON.stringify({ slot, containerId: container.id, imageId } satisfies SlotFile));
      await container.start();
    } catch (error) {
      if (container) await removeContainer(container.id).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
    if (stopped) {
      await removeContainer(container.id).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
      return;
    }
    idle.push({ slot, containerId: container.id, imageId });
  };

  /** Makes containers until the pool is full (one at a time: a start competes for the host's cores). */
  const fill = (): Promise<void> => {
    fills = fills.then(async () => {
      while (!stopped && idle.length + filling < size) {
        filling += 1;
        await writeState();
        try {
          await makeOne();
        } catch (error) {
          deps.log?.warn('a gate pool container could not be made; gates start their own', { error: String(error) });
          filling -= 1;
          await writeState();
          return;
        }
        filling -= 1;
        await writeState();
      }
    });
    return fills;
  };

  return {
    poolId,
    size,
    image,

    /** Removes the unclaimed containers of an earlier process (its slots still in the pool directory), then fills the pool. */
    start: async (): Promise<void> => {
      if (size <= 0) return;
      await mkdir(poolDir, { recursive: true });
      // Found by the pool's label; unclaimed while its slot is still in the pool's directory (a claimed
      // slot was moved into its run's, made before its container and removed after it).
      const listed = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${poolLabelKeys.pool}=${poolId}`] }) });
      // A claimed one whose run's directory is gone (removed by retention after a host was lost) is no one's.
      const claimed = await claimedSlots();
      for (const info of listed) {
        const slot = info.Labels[poolLabelKeys.slot] ?? '.none';
        if (existsSync(join(poolDir, slot)) || !claimed.has(slot)) await removeContainer(info.Id).catch(() => undefined);
      }
      for (const entry of await readdir(poolDir, { withFileTypes: true })) if (entry.isDirectory()) await rm(join(poolDir, entry.name), { recursive: true, force: true });
      void fill();
    },

    /** Removes the idle containers (a clean stop); claimed ones are their runs'. */
    stop: async (): Promise<void> => {
      stopped = true;
      await fills.catch(() => undefined);
      const left = idle.splice(0);
      await Promise.all(
        left.map(async (slot) => {
          await removeContainer(slot.containerId).catch(() => undefined);
          await rm(join(poolDir, slot.slot), { recursive: true, force: true });
        }),
      );
    },

    /** Resolves once nothing is being made (tests, the bench). */
    settled: async (): Promise<{ idle: number; size: number }> => {
      await fills.catch(() => undefined);
      return { idle: idle.length, size };
    },

    /**
     * A container of the pool for this run's first suite, its slot now the run's; the same one when
     * this run claimed before (a placement run again). None when the pool is empty or its container
     * is not usable (removed then).
     */
    claim: async ({ runId, repo }: { runId: string; repo: string }): Promise<boolean> => {
      const dir = claimedDir(runId);
      if (existsSync(join(dir, 'slot.json'))) return true;
      const slot = idle.shift();
      if (!slot) return false;
      const from = join(poolDir, slot.slot);
      try {
        const [state, current] = await Promise.all([docker.getContainer(slot.containerId).inspect(), docker.getImage(image).inspect()]);
        if (!state.State.Running || state.Image !== current.Id) throw new Error(state.State.Running ? 'made from an older build of the image' : `not running (${state.State.Status})`);
      } catch (error) {
        deps.log?.info('a gate pool container was not usable; removed', { slot: slot.slot, error: String(error) });
        await removeContainer(slot.containerId).catch(() => undefined);
        await rm(from, { recursive: true, force: true });
        void fill();
        return false;
      }
      // Listed first: should the host die right after the move, the run's cleanup still finds it.
      await recordInManifest(runPaths(dataDir, runId).manifest, { runId, repo, mirror: mirrorPath(dataDir, repo), hostId, createdAt: new Date().toISOString(), containerRunLabel: runId }, { dirs: [dir] });
      await mkdir(runPaths(dataDir, runId).runDir, { recursive: true });
      await rename(from, dir);
      void writeState();
      // Another once the claimed one has run (or soon, should its landing wait before its gate).
      const refill = setTimeout(() => void fill(), 2_000);
      refill.unref();
      void docker
        .getContainer(slot.containerId)
        .wait()
        .catch(() => undefined)
        .finally(() => {
          clearTimeout(refill);
          void fill();
        });
      return true;
    },

    /** The tree into the claimed slot's workspace, the suite's environment and command beside the go (not yet given). */
    assign: async ({ runId, worktree, commitSha, treeSha, step, env, command }: Assignment & { runId: string; worktree: string; env: string[]; command: string[] }): Promise<void> => {
      const { workspace, control, assignment } = slotPaths(claimedDir(runId));
      // A placement run again after its go: the suite may be running on this workspace. It stands.
      if (existsSync(join(control, 'go'))) return;
      // Into the directory the container has mounted (a new one would not be the one it sees).
      for (const entry of await readdir(workspace)) await rm(join(workspace, entry), { recursive: true, force: true });
      const [archive, tar] = await leanPipe({ command: 'git', args: gitArgs(worktree, 'archive', '--format=tar', commitSha) }, { command: 'tar', args: ['-x', '-C', workspace], stdout: 'ignore' });
      if (archive.code !== 0 || tar.code !== 0) throw new Error(`the tree of ${commitSha} was not exported into the pool container's workspace: ${archive.stderr.toString()}${tar.stderr.toString()}`);
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
      const assigned = await readFile(assignment, 'utf8').then((text) => JSON.parse(text) as Assignment).catch(() => undefined);
      if (assigned?.step !== step) return undefined;
      const [went, slot] = await Promise.all([stat(join(control, 'go')).catch(() => undefined), readSlot(dir)]);
      if (!went || !slot) return undefined;
      const state = await docker
        .getContainer(slot.containerId)
        .inspect()
        .then((info) => info.State)
        .catch(() => undefined);
      if (state && (state.Running || Date.parse(state.FinishedAt) >= Math.floor(went.mtimeMs))) return { containerId: slot.containerId, startedAtMs: went.mtimeMs };
      // Gone, or stopped before its go (the suite never ran in it): the step runs the suite in a container of its own.
      if (state) await removeContainer(slot.containerId).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
      return undefined;
    },
  };
}

export type GatePool = ReturnType<typeof createGatePool>;

