import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type Docker from 'dockerode';
import { gatePoolId, poolLabelKeys } from '../../activities/containers/gate-pool';
import { createFixtureRepo, gateFile, type FixtureRepo } from '../../infra/fixture-repo';
import { cleanedUp, landingFinished, startStack, waitFor, type Stack } from '../helpers/stack';

/** What the suite sees of its tree, the environment's files and its environment entries, printed for the test to read. */
const probe = [
  'echo "files=$(ls -A | sort | tr "\\n" ",")"',
  'echo "link=$(readlink made.txt)"',
  'echo "made=$(cat made.txt)"',
  'echo "check=$POOL_CHECK key=$TARMAC_ENVIRONMENT"',
  'echo "env-files=$(ls -A /tarmac/env | sort | tr "\\n" ",")"',
  'touch /tarmac/env/x 2>/dev/null && echo "env-mount=writable" || echo "env-mount=read-only"',
  'touch made.txt 2>/dev/null && echo "product=writable" || echo "product=read-only"',
  'echo "uid=$(id -u)"',
].join('; ');

/** A repository with an environment whose setup needs no network, and `count` branches that each add a file of their own. */
function repoWith(name: string, environment: Record<string, unknown>, count: number): FixtureRepo {
  return createFixtureRepo({
    base: {
      'deps.txt': `${name}\n`,
      '.config/tarmac/land-gate.json': gateFile([{ id: 'probe', run: ['sh', '-c', probe] }], { environment, fixup: { maxRounds: 0 } }),
    },
    branches: Array.from({ length: count }, (_, index) => ({
      name: `f${index + 1}`,
      commits: [{ message: `feature ${index + 1}`, files: { [`f${index + 1}.txt`]: `${index + 1}\n` } }],
    })),
  });
}

/**
 * The warm gate pool's containers for repository environments (activities/containers/gate-pool.ts,
 * gate-pool-environments.ts) on the real stack: a key a landing used gets a container made for it
 * alone — its base image, its files read-only at /tarmac/env — which the next landing of that key
 * runs its gate in, seeing exactly its tree and the products linked; a landing of another key never
 * gets it; a base image without bash gets none; a key past the bound, or whose environment was
 * removed, loses its container; the worker's start and clean stop remove them as the default's.
 */
describe('the warm gate pool for environments: a container per recent key, for that key only', () => {
  let stack: Stack;
  let poolDir = '';
  const noBashImage = `tarmac/test-no-bash:${process.pid}`;
  const x = repoWith('x', { setup: ['echo built-x > made.txt'], inputs: ['deps.txt'], env: { POOL_CHECK: "x's value" } }, 3);
  const y = repoWith('y', { image: noBashImage, setup: ['echo built-y > made.txt'], inputs: ['deps.txt'] }, 3);
  const z = repoWith('z', { setup: ['echo built-z > made.txt'], inputs: ['deps.txt'] }, 4);

  before(async () => {
    stack = await startStack({ workerEnv: { TARMAC_GATE_POOL: '1', TARMAC_GATE_POOL_ENVIRONMENTS: '2' } });
    poolDir = join(stack.dataDir, 'gate-pool', gatePoolId(stack.config.hostId, stack.dataDir));
    // A base image without bash (the pool's wait needs it): the runner with bash removed, made offline.
    // (A command, not an entrypoint: the image keeps the runner's none. Its user back to the runner's.)
    const maker = await stack.docker.createContainer({
      Image: 'tarmac/runner:bookworm',
      User: '0',
      Cmd: ['/bin/sh', '-c', 'rm -f /bin/bash /usr/bin/bash'],
      Labels: { 'tarmac.test': 'no-bash-image' },
      HostConfig: { NetworkMode: 'none' },
    });
    await maker.start();
    await maker.wait();
    const [repo, tag] = noBashImage.split(':') as [string, string];
    await maker.commit({ repo, tag, changes: 'USER 1000:1000' });
    await maker.remove({ force: true });
  });
  after(async () => {
    await stack?.stop();
    await stack?.docker
      .getImage(noBashImage)
      .remove({ force: true })
      .catch(() => undefined);
  });

  /** The pool's waiting containers (their slots still the pool's) made for this environment (its key's hex), or the default's (none). */
  const waiting = async (hex?: string): Promise<Docker.ContainerInfo[]> => {
    const listed = await stack.docker.listContainers({
      all: true,
      filters: JSON.stringify({ label: [`${poolLabelKeys.pool}=${gatePoolId(stack.config.hostId, stack.dataDir)}`] }),
    });
    return listed.filter(
      (info) =>
        info.State === 'running' && info.Labels[poolLabelKeys.environment] === hex && existsSync(join(poolDir, info.Labels[poolLabelKeys.slot] ?? '.none')),
    );
  };
  const oneWaiting = async (hex: string | undefined, what: string, unlike?: string) =>
    (
      await waitFor(
        () => waiting(hex),
        (list) => list.length === 1 && list[0]!.Id !== unlike,
        60_000,
        what,
      )
    )[0]!;
  const gone = async (id: string, what: string) =>
    await waitFor(
      async () =>
        await stack.docker
          .getContainer(id)
          .inspect()
          .then(
            () => false,
            () => true,
          ),
      (done) => done,
      30_000,
      what,
    );

  async function land(repo: FixtureRepo, branch: string) {
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: [branch], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const view = await landingFinished(stack, created.body.id as string);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    const record = await cleanedUp(stack.dataDir, created.body.id as string);
    const pooled = record.removedPaths?.some((path) => path.endsWith('/gate-pool-slot')) ?? false;
    const [environment] = view.outcome.environments as Array<{ key: string; cache: string }>;
    const log = readFileSync(join(stack.dataDir, view.outcome.gates[0].logRef), 'utf8').replace(/^\S+Z /gm, '');
    return { pooled, key: environment!.key, hex: environment!.key.replace(/^sha256:/, ''), cache: environment!.cache, log };
  }
  const hexes: Record<string, string> = {};

  it('a key a landing used gets a container made for it alone: its base image, its files read-only at /tarmac/env, the sandbox of every gate container', async () => {
    const first = await land(x, 'f1');
    assert.equal(first.cache, 'miss');
    assert.equal(first.pooled, false, 'built in its gate phase: no container was waiting for its key yet');
    hexes.x = first.hex;
    const made = await oneWaiting(first.hex, "x's environment container");
    const inspected = await stack.docker.getContainer(made.Id).inspect();
    const mount = inspected.Mounts.find((entry) => entry.Destination === '/tarmac/env');
    assert.equal(mount?.Source, join(stack.dataDir, 'cache', 'environments', first.hex, 'root'));
    assert.equal(mount?.RW, false);
    assert.equal(inspected.Config.Labels['tarmac.run'], undefined, 'no run owns it yet');
    assert.equal(inspected.Image, (await stack.docker.getImage('tarmac/runner:bookworm').inspect()).Id);
    assert.deepEqual(
      inspected.Config.Env.filter((entry) => !entry.startsWith('PATH=')),
      ['HOME=/tmp', 'CI=1'],
      "the environment's entries come with the suite's go, not before",
    );
    assert.equal(inspected.HostConfig.NetworkMode, 'none');
    assert.equal(inspected.HostConfig.ReadonlyRootfs, true);
    assert.deepEqual(inspected.HostConfig.CapDrop, ['ALL']);
    assert.equal(inspected.Config.User, '1000:1000');
  });

  it('a landing of another key never gets it; a base image without bash gets no container', async () => {
    const xContainer = await oneWaiting(hexes.x, "x's environment container");
    const runnerContainer = await oneWaiting(undefined, "the default runner's container");
    const built = await land(y, 'f1');
    hexes.y = built.hex;
    assert.equal(built.pooled, false);
    // The pool asked the image once and skipped the key.
    await waitFor(
      async () => JSON.parse(readFileSync(join(poolDir, 'state.json'), 'utf8')) as { environments: Array<{ key: string; skipped: boolean }> },
      (state) => state.environments.some((entry) => entry.key === built.key && entry.skipped),
      30_000,
      'the pool to skip the key whose image has no bash',
    );
    const hit = await land(y, 'f2');
    assert.equal(hit.cache, 'hit');
    assert.equal(hit.pooled, false, 'no container of its key: the gate made its own');
    assert.match(hit.log, /^made=built-y$/m);
    assert.deepEqual(await waiting(built.hex), []);
    assert.equal((await oneWaiting(hexes.x, "x's environment container")).Id, xContainer.Id, "another key's landing left x's container waiting");
    assert.equal((await oneWaiting(undefined, "the default runner's container")).Id, runnerContainer.Id, "nor took the default runner's");
  });

  it('the next landing of the key runs its gate in that container: exactly its tree with the products linked, the environment read-only, its entries set', async () => {
    const xContainer = await oneWaiting(hexes.x, "x's environment container");
    const runnerContainer = await oneWaiting(undefined, "the default runner's container");
    const second = await land(x, 'f2');
    assert.equal(second.cache, 'hit');
    assert.equal(second.pooled, true, 'the gate ran in a pool container');
    assert.match(second.log, /^files=\.config,deps\.txt,f1\.txt,f2\.txt,made\.txt,$/m);
    assert.match(second.log, /^link=\/tarmac\/env\/made\.txt$/m);
    assert.match(second.log, /^made=built-x$/m);
    assert.match(second.log, new RegExp(`^check=x's value key=${second.key}$`, 'm'));
    assert.match(second.log, /^env-files=deps\.txt,made\.txt,$/m);
    assert.match(second.log, /^env-mount=read-only$/m);
    assert.match(second.log, /^product=read-only$/m);
    assert.match(second.log, /^uid=1000$/m);
    // The one made for its key ran it (and went with the run); the default runner's was not touched; the key has another.
    await gone(xContainer.Id, "x's claimed container to go with its run");
    assert.equal((await oneWaiting(undefined, "the default runner's container")).Id, runnerContainer.Id);
    await oneWaiting(hexes.x, "x's next environment container", xContainer.Id);
  });

  it("with two keys waiting, each landing takes its own key's; a key past the bound loses its container", async () => {
    const built = await land(z, 'f1');
    hexes.z = built.hex;
    const zContainer = await oneWaiting(built.hex, "z's environment container");
    const xContainer = await oneWaiting(hexes.x, "x's environment container");
    const hit = await land(z, 'f2');
    assert.equal(hit.pooled, true);
    assert.match(hit.log, /^made=built-z$/m);
    assert.match(hit.log, /^link=\/tarmac\/env\/made\.txt$/m);
    await gone(zContainer.Id, "z's claimed container to go with its run");
    assert.equal((await oneWaiting(hexes.x, "x's environment container")).Id, xContainer.Id, "z's landing took z's container, not x's");
    await oneWaiting(hexes.z, "z's next environment container", zContainer.Id);
    // y used now: the kept keys are y and z (two); x, the least recently used, loses its container.
    const yAgain = await land(y, 'f3');
    assert.equal(yAgain.pooled, false);
    await gone(xContainer.Id, "x's container to be removed once x fell off the kept keys");
    assert.deepEqual(await waiting(hexes.x), []);
  });

  it('an environment removed while its container waits: the container goes, the rebuilt one gets a fresh container that mounts it', async () => {
    const stale = await oneWaiting(hexes.z, "z's environment container");
    // As the collection or the retention sweep removes an environment.
    rmSync(join(stack.dataDir, 'cache', 'environments', hexes.z!), { recursive: true, force: true });
    const rebuilt = await land(z, 'f3');
    assert.equal(rebuilt.cache, 'miss');
    assert.equal(rebuilt.pooled, false);
    await gone(stale.Id, 'the container of the removed environment to go');
    await oneWaiting(hexes.z, "z's container for the rebuilt environment", stale.Id);
    const hit = await land(z, 'f4');
    assert.equal(hit.pooled, true);
    assert.match(hit.log, /^made=built-z$/m);
    assert.match(hit.log, /^env-files=deps\.txt,made\.txt,$/m);
  });

  it("the worker's start removes a killed worker's environment containers; a clean stop removes them all", async () => {
    const killed = await oneWaiting(hexes.z, "z's environment container");
    await stack.killWorker('SIGKILL');
    await stack.startWorker();
    await gone(killed.Id, "the killed worker's environment container to be removed at start");
    await oneWaiting(undefined, "the default runner's container");
    // The new worker keeps no key until a landing uses one.
    await land(x, 'f3');
    const made = await oneWaiting(hexes.x, "x's environment container, made by the new worker");
    await stack.killWorker('SIGTERM');
    await gone(made.Id, 'the clean stop to remove the environment container');
    const pool = { label: [`${poolLabelKeys.pool}=${gatePoolId(stack.config.hostId, stack.dataDir)}`] };
    await waitFor(
      () => stack.docker.listContainers({ all: true, filters: JSON.stringify(pool) }),
      (left) => left.length === 0,
      30_000,
      'the stopped worker to remove every pool container',
    );
    await stack.startWorker();
  });
});
