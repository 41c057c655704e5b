/** The gate pool's containers (gate-pool.ts): made in a fresh slot, checked at a claim, removed, moved to a run. */
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { createStepContainer, type ContainerSpec } from './containers';
import { environmentMount } from '../environments/environments';
import { currentEnvironmentRoot, keyHex, poolContainerProblem, type PoolEnvironmentRoot } from './gate-pool-environments';
import { poolLabelKeys, poolWaiter, type PoolSlots, type SlotFile } from './gate-pool-slot';
import { handToContainerUser } from '../git/git';
import { leanRun } from '../git/lean-spawn';
import { recordInManifest, mirrorPath, runPaths } from '../stores/run-store';

/** Makes one waiting container in a fresh slot: on the default runner, or on an environment's base with its files. */
export async function makeWaitingContainer(input: {
  docker: Docker;
  poolId: string;
  poolDir: string;
  image: string;
  user: { uid: number; gid: number };
  labels: Record<string, string>;
  slot: string;
  environment: PoolEnvironmentRoot | undefined;
  slots: PoolSlots;
}): Promise<SlotFile> {
  const { docker, poolId, poolDir, image, user, slot, environment, slots } = input;
  const { dir, workspace, control, slotFile } = slots.slotPaths(join(poolDir, slot));
  await mkdir(workspace, { recursive: true });
  // The environment's mount point inside the read-only control mount: made here, Docker cannot make it there.
  await mkdir(environment ? join(control, 'env') : control, { recursive: true });
  const fifo = await leanRun({ command: 'mkfifo', args: ['-m', '0666', join(control, 'wake')] });
  if (fifo.code !== 0) throw new Error(`mkfifo exited ${fifo.code}: ${fifo.stderr.toString().trim()}`);
  await handToContainerUser(workspace);
  const imageId = environment ? environment.imageId : (await docker.getImage(image).inspect()).Id;
  const spec: Omit<ContainerSpec, 'labels'> & { labels: Record<string, string> } = {
    labels: { ...input.labels, [poolLabelKeys.slot]: slot, ...(environment ? { [poolLabelKeys.environment]: keyHex(environment.key) } : {}) },
    image: imageId,
    entrypoint: ['/bin/bash', '-c', poolWaiter],
    cmd: [],
    user: `${user.uid}:${user.gid}`,
    env: ['HOME=/tmp', 'CI=1'],
    binds: [`${workspace}:/workspace:rw`, `${control}:/tarmac:ro`, ...(environment ? [`${environment.path}:${environmentMount}:ro`] : [])],
    workingDir: '/workspace',
    timeoutMs: 0,
    logFile: '',
  };
  const made: SlotFile = { slot, containerId: '', imageId, ...(environment ? { environment: { key: environment.key, identity: environment.identity } } : {}) };
  let container: Docker.Container | undefined;
  try {
    container = await createStepContainer(docker, spec, `tarmac-pool-${poolId}-${slot}`, 16 * 1024 * 1024);
    made.containerId = container.id;
    await writeFile(slotFile, JSON.stringify(made));
    await container.start();
  } catch (error) {
    if (container) await slots.removeContainer(container.id).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return made;
}

/** Why a waiting container may not run a suite of this environment (or of none); undefined: it may. */
export async function unusable(
  deps: { docker: Docker; dataDir: string; image: string },
  slot: SlotFile,
  environment: string | undefined,
): Promise<string | undefined> {
  const { docker, dataDir, image } = deps;
  const [state, runnerImageId, current] = await Promise.all([
    docker.getContainer(slot.containerId).inspect(),
    environment
      ? undefined
      : docker
          .getImage(image)
          .inspect()
          .then((info) => info.Id),
    environment ? currentEnvironmentRoot(dataDir, environment) : undefined,
  ]);
  if (!environment) return poolContainerProblem(state, { imageId: runnerImageId! });
  // The collection or the retention sweep removed the environment (or removed it and it was built again) since the container was made.
  if (!current) return 'its environment was removed';
  if (slot.environment?.key !== environment || slot.environment.identity !== current.identity) return 'its environment was removed and built again';
  return poolContainerProblem(state, { imageId: current.imageId, environment: current });
}

/**
 * Removes the containers of an earlier process: found by the pool's label; unclaimed while its slot
 * is still in the pool's directory (a claimed slot was moved into its run's, made before its
 * container and removed after it); a claimed one whose run's directory is gone (removed by retention
 * after a host was lost) is no one's. Then the pool's directory is emptied.
 */
export async function removeEarlierContainers(input: {
  docker: Docker;
  poolId: string;
  poolDir: string;
  claimed: Set<string>;
  removeContainer: (id: string) => Promise<unknown>;
}): Promise<void> {
  const { docker, poolId, poolDir, claimed, removeContainer } = input;
  const listed = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${poolLabelKeys.pool}=${poolId}`] }) });
  for (const info of listed) {
    const slot = info.Labels[poolLabelKeys.slot] ?? '.none';
    if (existsSync(join(poolDir, slot)) || !claimed.has(slot)) await removeContainer(info.Id).catch(() => undefined);
  }
  for (const entry of await readdir(poolDir, { withFileTypes: true }))
    if (entry.isDirectory()) await rm(join(poolDir, entry.name), { recursive: true, force: true });
}

/** A claimed slot becomes the run's: listed first (should the host die right after the move, the run's cleanup still finds it), then moved. */
export async function moveToRun(input: { dataDir: string; hostId: string; runId: string; repo: string; from: string; dir: string }): Promise<void> {
  const { dataDir, hostId, runId, repo, from, dir } = input;
  await recordInManifest(
    runPaths(dataDir, runId).manifest,
    { runId, repo, mirror: mirrorPath(dataDir, repo), hostId, createdAt: new Date().toISOString(), containerRunLabel: runId },
    { dirs: [dir] },
  );
  await mkdir(runPaths(dataDir, runId).runDir, { recursive: true });
  await rename(from, dir);
}

/** The slots runs of this data dir have claimed (their `gate-pool-slot` directories). */
export async function claimedSlots(dataDir: string, readSlot: (dir: string) => Promise<SlotFile | undefined>): Promise<Set<string>> {
  const runs = join(dataDir, 'runs');
  const found = await Promise.all((await readdir(runs).catch(() => [] as string[])).map((run) => readSlot(join(runs, run, 'gate-pool-slot'))));
  return new Set(found.flatMap((slot) => (slot ? [slot.slot] : [])));
}

/** A waiting slot removed: its container (by ID) and its directory. */
export async function removeSlot(slot: SlotFile, poolDir: string, removeContainer: (id: string) => Promise<unknown>): Promise<void> {
  await removeContainer(slot.containerId).catch(() => undefined);
  await rm(join(poolDir, slot.slot), { recursive: true, force: true });
}
