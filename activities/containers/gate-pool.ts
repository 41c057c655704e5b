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
 * A slot's files, its go and what the claiming run does with it: gate-pool-slot.ts.
 *
 * Repository environments (issue 24) get containers of their own: for each of the
 * `TARMAC_GATE_POOL_ENVIRONMENTS` keys landings used most recently on the host (default 2), one
 * container on the environment's base image with its files read-only at /tarmac/env — made for that
 * key only, labelled with it, and claimed only by a suite of that key (gate-pool-environments.ts).
 * A key gets its container when a landing uses it, again after each claim, and loses it when it
 * falls off the list; a base image without bash (the wait's shell) gets none.
 *
 * What the pool does not take: another image, an entrypoint or limits of the suite's own (none
 * today), evidence runs; a container of an older build of the image, one that is not running, or
 * one whose environment was removed, is removed at the claim. At start the host removes the pool
 * containers of an earlier process (killed) that no run has claimed, or whose run's directory is
 * gone; at a clean stop its idle ones.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { warmEnvironmentKeys } from '../../policies/gate-pool-keys';
import { labelKeys } from './containers';
import { claimedSlots, makeWaitingContainer, moveToRun, removeEarlierContainers, removeSlot, unusable } from './gate-pool-containers';
import { currentEnvironmentRoot, imageHasBash, type PoolEnvironmentRoot } from './gate-pool-environments';
import { createPoolSlots, gatePoolId, poolLabelKeys, type SlotFile } from './gate-pool-slot';
import { containerUser } from '../git/git';
import { writeFileAtomic } from '../stores/run-store';

export { gatePoolId, goScript, poolLabelKeys } from './gate-pool-slot';

/** The containers waiting for one kind of suite: the default runner's, or one environment key's. */
interface Shelf {
  /** The environment key; none: the default runner's. */
  key?: string;
  want: number;
  idle: SlotFile[];
  filling: number;
  /** The environment's base image has no bash: none is made for it. */
  skipped?: boolean;
}

interface GatePoolDeps {
  dataDir: string;
  hostId: string;
  docker: Docker;
  /** Containers kept waiting (0: no pool). */
  size: number;
  /** The one image the pool runs for suites without an environment (the default runner). */
  image: string;
  /** Environment keys kept with a container each, the most recently used (`TARMAC_GATE_POOL_ENVIRONMENTS`); default 0: none. */
  environments?: number;
  log?: { info(message: string, meta?: Record<string, unknown>): void; warn(message: string, meta?: Record<string, unknown>): void };
}

export function createGatePool(deps: GatePoolDeps) {
  const { dataDir, hostId, docker, size, image } = deps;
  const environmentsBound = size > 0 ? (deps.environments ?? 0) : 0;
  const poolId = gatePoolId(hostId, dataDir);
  const poolDir = join(dataDir, 'gate-pool', poolId);
  const user = containerUser();
  const runner: Shelf = { want: size, idle: [], filling: 0 };
  /** Environment keys with a container, most recently used first (policies/gate-pool-keys.ts), and their shelves. */
  let keys: string[] = [];
  const shelves = new Map<string, Shelf>();
  let stopped = false;
  let fills: Promise<void> = Promise.resolve();

  const slots = createPoolSlots({ dataDir, docker, poolId });
  const { claimedDir, readSlot, removeContainer, removeSlotContainers } = slots;
  /** An idle slot that will never be claimed: its container (by label) and its directory. */
  const dropIdle = async (slot: SlotFile) => {
    await removeSlotContainers(slot.slot).catch(() => undefined);
    await rm(join(poolDir, slot.slot), { recursive: true, force: true });
  };
  const allShelves = () => [runner, ...keys.flatMap((key) => shelves.get(key) ?? [])];
  const writeState = () =>
    writeFileAtomic(join(poolDir, 'state.json'), `${JSON.stringify(poolState(size, runner, keys, shelves))}\n`, { durable: false }).catch(() => undefined);

  /** A key no longer kept (fallen off the list, or its environment gone): its waiting containers go. */
  const forget = async (key: string) => {
    const shelf = shelves.get(key);
    keys = keys.filter((kept) => kept !== key);
    shelves.delete(key);
    if (shelf) await Promise.all(shelf.idle.splice(0).map(dropIdle));
  };

  const newSlot = () => `${Date.now().toString(36)}-${randomBytes(5).toString('hex')}`;
  const baseLabels = () => ({ [labelKeys.role]: 'gate', [poolLabelKeys.pool]: poolId, 'tarmac.host': hostId });
  /** The wait needs bash: asked once per image, with a throwaway container of the pool's labels. */
  const hasBash = bashProbe((imageId) => {
    const slot = `probe-${newSlot()}`;
    return imageHasBash(docker, imageId, {
      labels: { ...baseLabels(), [poolLabelKeys.slot]: slot },
      user: `${user.uid}:${user.gid}`,
      name: `tarmac-pool-${poolId}-${slot}`,
    });
  });

  /** Makes one waiting container in a fresh slot: on the default runner, or on an environment's base with its files. */
  const makeOne = async (shelf: Shelf): Promise<void> => {
    let environment: PoolEnvironmentRoot | undefined;
    if (shelf.key) {
      environment = await currentEnvironmentRoot(dataDir, shelf.key);
      // Removed since a landing used it: nothing to make a container for.
      if (!environment) return await forget(shelf.key);
      if (!(await hasBash(environment.imageId))) {
        deps.log?.info('no gate pool container for this environment: its base image has no bash', { key: shelf.key });
        shelf.skipped = true;
        return;
      }
    }
    const made = await makeWaitingContainer({ docker, poolId, poolDir, image, user, labels: baseLabels(), slot: newSlot(), environment, slots });
    // Stopped, or the key fell off the list while its container was made: it serves no one.
    if (stopped || (shelf.key && shelves.get(shelf.key) !== shelf)) return await dropIdle(made);
    shelf.idle.push(made);
  };

  /** Makes containers until every shelf is full, the default runner's first (one at a time: a start competes for the host's cores). */
  const fill = (): Promise<void> => {
    const next = () => (stopped ? undefined : allShelves().find((each) => !each.skipped && each.idle.length + each.filling < each.want));
    fills = fills.then(() => fillShelves({ next, makeOne, writeState, ...(deps.log ? { log: deps.log } : {}) }));
    return fills;
  };

  /** An environment's waiting containers whose files are no longer that environment's on the host (collected, rebuilt): removed. */
  const dropStale = async (shelf: Shelf, key: string) => {
    const current = await currentEnvironmentRoot(dataDir, key);
    if (!current) return await forget(key);
    const stale = shelf.idle.filter((slot) => slot.environment?.identity !== current.identity);
    shelf.idle = shelf.idle.filter((slot) => !stale.includes(slot));
    await Promise.all(stale.map(dropIdle));
  };

  return {
    poolId,
    size,
    image,
    environments: environmentsBound,

    /** Removes the unclaimed containers of an earlier process (its slots still in the pool directory), then fills the pool. */
    start: async (): Promise<void> => {
      if (size <= 0) return;
      await mkdir(poolDir, { recursive: true });
      await removeEarlierContainers({ docker, poolId, poolDir, claimed: await claimedSlots(dataDir, readSlot), removeContainer });
      void fill();
    },

    /** Removes the idle containers, the default runner's and the environments' (a clean stop); claimed ones are their runs'. */
    stop: async (): Promise<void> => {
      stopped = true;
      await fills.catch(() => undefined);
      await Promise.all(allShelves().flatMap((shelf) => shelf.idle.splice(0).map((slot) => removeSlot(slot, poolDir, removeContainer))));
    },

    /** Resolves once nothing is being made (tests, the bench): the default runner's idle containers, and each kept environment's. */
    settled: async (): Promise<{ idle: number; size: number; environments: Record<string, number> }> => {
      await fills.catch(() => undefined);
      return { idle: runner.idle.length, size, environments: Object.fromEntries(keys.map((key) => [key, shelves.get(key)?.idle.length ?? 0])) };
    },

    /**
     * A landing uses this environment now (a lookup's hit, a prepare's hit or build): its key goes to
     * the front of the kept keys and gets its container; a key past the bound loses its own; waiting
     * containers of this key that mount files no longer its own (removed, rebuilt) go.
     */
    useEnvironment: ({ key }: { key: string }): void => {
      if (environmentsBound <= 0 || stopped) return;
      const next = warmEnvironmentKeys({ keys, used: key, bound: environmentsBound });
      keys = next.keys;
      const shelf = shelves.get(key) ?? { key, want: 1, idle: [], filling: 0 };
      shelves.set(key, shelf);
      void Promise.all([...next.dropped.map(forget), dropStale(shelf, key).catch(() => undefined)]).finally(() => void fill());
    },

    /**
     * A container of the pool for this run's first suite, its slot now the run's; the same one when
     * this run claimed before (a placement run again). With an environment key, only a container
     * made for that key, still mounting that environment's files as the host has them now. None when
     * there is none waiting or its container is not usable (removed then).
     */
    claim: async ({ runId, repo, environment }: { runId: string; repo: string; environment?: string }): Promise<boolean> => {
      const dir = claimedDir(runId);
      const held = await readSlot(dir);
      if (held) return held.environment?.key === environment;
      const shelf = environment ? shelves.get(environment) : runner;
      const slot = shelf?.idle.shift();
      if (!slot) return false;
      try {
        const problem = await unusable({ docker, dataDir, image }, slot, environment);
        if (problem) throw new Error(problem);
      } catch (error) {
        deps.log?.info('a gate pool container was not usable; removed', { slot: slot.slot, error: String(error) });
        await removeSlot(slot, poolDir, removeContainer);
        void fill();
        return false;
      }
      await moveToRun({ dataDir, hostId, runId, repo, from: join(poolDir, slot.slot), dir });
      void writeState();
      refillAfter(docker, slot.containerId, fill);
      return true;
    },

    assign: slots.assign,
    go: slots.go,
    discard: slots.discard,
    removeClaimed: slots.removeClaimed,
    adoptable: slots.adoptable,
  };
}

export type GatePool = ReturnType<typeof createGatePool>;

/** What the pool's state file says: the default runner's shelf and each kept key's. */
function poolState(size: number, runner: Shelf, keys: string[], shelves: Map<string, Shelf>) {
  return {
    size,
    idle: runner.idle.length,
    filling: runner.filling,
    environments: keys.map((key) => ({
      key,
      idle: shelves.get(key)?.idle.length ?? 0,
      filling: shelves.get(key)?.filling ?? 0,
      skipped: shelves.get(key)?.skipped === true,
    })),
  };
}

/** Whether an image (by ID) has bash, asked once per image (a failed ask is asked again). */
function bashProbe(ask: (imageId: string) => Promise<boolean>): (imageId: string) => Promise<boolean> {
  const bash = new Map<string, Promise<boolean>>();
  return (imageId) => {
    let asked = bash.get(imageId);
    if (!asked) {
      asked = ask(imageId);
      bash.set(imageId, asked);
      asked.catch(() => bash.delete(imageId));
    }
    return asked;
  };
}

/** Another container once the claimed one has run (or soon, should its landing wait before its gate). */
function refillAfter(docker: Docker, containerId: string, fill: () => Promise<void>): void {
  const refill = setTimeout(() => void fill(), 2_000);
  refill.unref();
  void docker
    .getContainer(containerId)
    .wait()
    .catch(() => undefined)
    .finally(() => {
      clearTimeout(refill);
      void fill();
    });
}

/** Makes a container for the next shelf short of its want, until none is (or one cannot be made: gates start their own). */
async function fillShelves(input: {
  next: () => Shelf | undefined;
  makeOne: (shelf: Shelf) => Promise<void>;
  writeState: () => Promise<unknown>;
  log?: GatePoolDeps['log'];
}): Promise<void> {
  const { next, makeOne, writeState, log } = input;
  for (;;) {
    const shelf = next();
    if (!shelf) return;
    shelf.filling += 1;
    await writeState();
    try {
      await makeOne(shelf);
    } catch (error) {
      log?.warn('a gate pool container could not be made; gates start their own', { error: String(error), ...(shelf.key ? { key: shelf.key } : {}) });
      return;
    } finally {
      shelf.filling -= 1;
      await writeState();
    }
  }
}
