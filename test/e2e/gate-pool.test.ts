import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type Docker from 'dockerode';
import { gatePoolId, poolLabelKeys } from '../../activities/containers/gate-pool';
import { branchHead, createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { cleanedUp, containersCreated, landingFinished, startStack, stepRunning, waitFor, type Stack } from '../helpers/stack';

/** What the suite sees of its sandbox and its tree, printed for the test to read in its log. */
const probe = [
  'echo "pwd=$(pwd)"',
  'echo "files=$(ls -A | sort | tr "\\n" ",")"',
  'echo "tree=$TARMAC_TREE_SHA suite=$TARMAC_SUITE attempt=$TARMAC_GATE_ATTEMPT home=$HOME ci=$CI"',
  'echo "quoted=$QUOTED_CHECK"',
  'echo "uid=$(id -u)"',
  'grep -E "^(CapEff|NoNewPrivs):" /proc/self/status | tr -s "\\t " " "',
  'echo "interfaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | sort | tr "\\n" ",")"',
  'touch /rootfs-write 2>/dev/null && echo "root=writable" || echo "root=read-only"',
  'touch /tarmac/x 2>/dev/null && echo "control=writable" || echo "control=read-only"',
  'echo "fds=$(ls /proc/self/fd | wc -l)"',
  'test -f feature.txt',
].join('; ');

/** The pool's waiting containers: running, of this stack's pool, slot not yet claimed by any run. */
async function poolContainers(stack: Stack): Promise<Docker.ContainerInfo[]> {
  return await stack.docker.listContainers({
    all: true,
    filters: JSON.stringify({ label: [`${poolLabelKeys.pool}=${gatePoolId(stack.config.hostId, stack.dataDir)}`] }),
  });
}

/** The pool full again: `size` running containers whose slots are still the pool's (none claimed). */
async function poolReady(stack: Stack, size = 1): Promise<Docker.ContainerInfo[]> {
  const dir = join(stack.dataDir, 'gate-pool', gatePoolId(stack.config.hostId, stack.dataDir));
  return await waitFor(
    async () => (await poolContainers(stack)).filter((info) => info.State === 'running' && existsSync(join(dir, info.Labels[poolLabelKeys.slot] ?? '.none'))),
    (idle) => idle.length === size,
    60_000,
    `the gate pool to hold ${size} waiting container(s)`,
  );
}

/** No fixup rounds: a red gate ends the landing. */
const noFixup = { fixup: { maxRounds: 0 } };

const sleepy = (name: string, branch: string, run: string[]) =>
  createFixtureRepo({
    base: { Makefile: 'test:\n\ttrue\n', '.config/tarmac/land-gate.json': gateFile([{ id: name, run, timeout: '2m' }], noFixup) },
    branches: [{ name: branch, commits: [{ message: 'a feature', files: { 'feature.txt': 'f\n' } }] }],
  });

/**
 * The host's warm gate pool (activities/containers/gate-pool.ts): containers started before any landing, each
 * running only a wait, claimed by a landing's placement for its first suite once the tree is known.
 * The suite must see exactly what a round's own container shows it (tree, environment, sandbox), its
 * deadline counts from the go, a killed worker's step reattaches to it, and nothing is claimed for a
 * request that stops before its gate.
 */
describe('the warm gate pool: started before any landing, the same sandbox and tree when a suite runs in it', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ workerEnv: { TARMAC_GATE_POOL: '1' } });
  });
  after(async () => {
    await stack?.stop();
  });

  it('a landing whose gate ran in the pool: no container made for it; exact tree, environment and sandbox; the pool refilled; gone with the run', async () => {
    const [waiting] = await poolReady(stack);
    const slot = waiting!.Labels[poolLabelKeys.slot]!;
    // Waiting, it has the sandbox of every gate container already, and runs nothing but the wait.
    const inspected = await stack.docker.getContainer(waiting!.Id).inspect();
    assert.equal(inspected.HostConfig.NetworkMode, 'none');
    assert.equal(inspected.HostConfig.ReadonlyRootfs, true);
    assert.deepEqual(inspected.HostConfig.CapDrop, ['ALL']);
    assert.deepEqual(inspected.HostConfig.SecurityOpt, ['no-new-privileges']);
    assert.equal(inspected.Config.User, '1000:1000');
    assert.equal(inspected.HostConfig.Memory, 2 * 1024 ** 3);
    assert.equal(inspected.HostConfig.PidsLimit, 512);
    assert.deepEqual(
      inspected.Config.Env.filter((entry) => !entry.startsWith('PATH=')),
      ['HOME=/tmp', 'CI=1'],
    );
    assert.equal(inspected.Config.Labels['tarmac.run'], undefined, 'no run owns it yet');
    const repo = createFixtureRepo({
      base: {
        Makefile: 'test:\n\ttrue\n',
        '.config/tarmac/land-gate.json': gateFile([{ id: 'probe', run: ['sh', '-c', `QUOTED_CHECK="it's \\$HOME"; export QUOTED_CHECK; ${probe}`] }]),
      },
      branches: [{ name: 'feature/pool', commits: [{ message: 'a feature', files: { 'feature.txt': 'f\n' } }] }],
    });
    const since = Math.floor(Date.now() / 1000);
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/pool'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const view = await landingFinished(stack, created.body.id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    const gate = view.outcome.gates[0];
    assert.equal(gate.status, 'passed');
    const log = readFileSync(join(stack.dataDir, gate.logRef), 'utf8').replace(/^\S+Z /gm, '');
    // The tree, exactly: the target's files and the branch's, nothing of git, nothing of the pool.
    assert.match(log, /^pwd=\/workspace$/m);
    assert.match(log, /^files=\.config,Makefile,feature\.txt,$/m);
    assert.match(log, new RegExp(`^tree=${view.outcome.treeSha} suite=probe attempt=1 home=/tmp ci=1$`, 'm'));
    assert.match(log, /^quoted=it's \$HOME$/m);
    // The sandbox: the agents' uid, no capabilities, no new privileges, loopback only, read-only root,
    // the pool's control mount read-only, and no descriptor of the wait left to the suite.
    assert.match(log, /^uid=1000$/m);
    assert.match(log, /^CapEff: 0000000000000000$/m);
    assert.match(log, /^NoNewPrivs: 1$/m);
    assert.match(log, /^interfaces=lo,$/m);
    assert.match(log, /^root=read-only$/m);
    assert.match(log, /^control=read-only$/m);
    assert.match(log, /^fds=4$/m, "stdin, stdout, stderr and ls's own directory: no FIFO of the wait");

    // The suite ran in the pool's container: no gate container was made for the run.
    assert.equal(await containersCreated(stack.docker, since, [`tarmac.run=${created.body.id}`, 'tarmac.role=gate']), 0);
    // The pool made another.
    const [next] = await poolReady(stack);
    assert.notEqual(next!.Labels[poolLabelKeys.slot], slot);
    // The run's cleanup removes the claimed container (by its slot's label) and its slot.
    const record = await cleanedUp(stack.dataDir, created.body.id);
    assert.equal(record.error, undefined);
    assert.ok((record.removedContainers ?? 0) >= 1, JSON.stringify(record));
    assert.equal((await stack.docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${poolLabelKeys.slot}=${slot}`] }) })).length, 0);
    assert.equal(existsSync(join(stack.dataDir, 'runs', created.body.id, 'gate-pool-slot')), false);
  });

  it('a red suite in the pool is red with its own exit code; a suite past its timeout is timed out, counted from its go', async () => {
    await poolReady(stack);
    const red = sleepy('red', 'feature/red', ['sh', '-c', 'echo failing; exit 3']);
    const before = branchHead(red.path, 'main');
    const created = await stack.api('POST', '/v1/landings', { repo: red.url, branches: ['feature/red'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const view = await landingFinished(stack, created.body.id);
    assert.equal(view.outcome.status, 'gate-failed', view.outcome.summary);
    assert.equal(view.outcome.gates[0].exitCode, 3);
    assert.equal(branchHead(red.path, 'main'), before, 'the target did not move');

    // The pool's container has waited since before the landing: the deadline must not count that wait.
    await poolReady(stack);
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const slow = createFixtureRepo({
      base: {
        Makefile: 'test:\n\ttrue\n',
        '.config/tarmac/land-gate.json': gateFile(
          [
            { id: 'slow', run: ['sh', '-c', 'sleep 1; echo slept'], timeout: '2s' },
            { id: 'hang', run: ['sh', '-c', 'sleep 60'], timeout: '2s' },
          ],
          noFixup,
        ),
      },
      branches: [{ name: 'feature/slow', commits: [{ message: 'a feature', files: { 'feature.txt': 'f\n' } }] }],
    });
    const second = await stack.api('POST', '/v1/landings', { repo: slow.url, branches: ['feature/slow'], target: 'main' });
    assert.equal(second.status, 201, JSON.stringify(second.body));
    const slowView = await landingFinished(stack, second.body.id);
    const bySuite = Object.fromEntries(slowView.outcome.gates.map((result: { suiteId: string; status: string }) => [result.suiteId, result.status]));
    // `slow` (the pool's: the first suite) passed in 1 s of its 2 s though its container waited longer than 2 s; `hang` timed out.
    assert.deepEqual(bySuite, { slow: 'passed', hang: 'timed-out' }, slowView.outcome.summary);
  });

  it('a worker killed while the pool container runs the suite: the retried step reattaches to it, the suite runs once', async () => {
    await poolReady(stack);
    const repo = sleepy('once', 'feature/once', ['sh', '-c', 'echo started; sleep 4; echo finished']);
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/once'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    await stepRunning(stack, created.body.id, 'gate.runSuite', 'the gate step to run');
    await stack.killWorker('SIGKILL');
    await stack.startWorker();
    const view = await landingFinished(stack, created.body.id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    const gate = view.outcome.gates[0];
    assert.equal(gate.reattached, true);
    const log = readFileSync(join(stack.dataDir, gate.logRef), 'utf8');
    assert.equal(log.match(/started/g)?.length, 1, log);
    assert.equal(log.match(/finished/g)?.length, 1, log);
    // The restarted worker removed the killed one's waiting container (none was left idle) and made its own.
    const idle = await poolReady(stack);
    assert.equal(idle.length, 1);
  });

  it('nothing is claimed for a landing that stops before its gate (an invalid gate file); a clean stop removes the waiting container', async () => {
    const [waiting] = await poolReady(stack);
    const repo = createFixtureRepo({
      base: { Makefile: 'test:\n\ttrue\n', '.config/tarmac/land-gate.json': '{"version": 1, "suites": "not a list"}\n' },
      branches: [{ name: 'feature/invalid', commits: [{ message: 'a feature', files: { 'feature.txt': 'f\n' } }] }],
    });
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/invalid'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const view = await landingFinished(stack, created.body.id);
    assert.equal(view.outcome.status, 'invalid-gate-file', view.outcome.summary);
    const [still] = await poolReady(stack);
    assert.equal(still!.Id, waiting!.Id, 'the same container still waits');
    assert.equal((await stack.docker.getContainer(waiting!.Id).inspect()).State.Running, true);

    await stack.killWorker('SIGTERM');
    await waitFor(
      () => poolContainers(stack),
      (list) => list.length === 0,
      30_000,
      'the stopped worker to remove its waiting container',
    );
    await stack.startWorker();
    await poolReady(stack);
  });

  it("at start the host removes its pool containers no run has claimed, or whose run directory is gone; a claimed one stays its run's", async () => {
    const poolId = gatePoolId(stack.config.hostId, stack.dataDir);
    const make = async (slot: string) => {
      const container = await stack.docker.createContainer({
        Image: 'tarmac/runner:bookworm',
        Cmd: ['sleep', '300'],
        Labels: { 'tarmac.role': 'gate', [poolLabelKeys.pool]: poolId, [poolLabelKeys.slot]: slot },
        HostConfig: { NetworkMode: 'none' },
      });
      await container.start();
      return container.id;
    };
    // One claimed by a run whose directory is still there (its slot file names it), one whose run
    // directory retention removed (no slot file names it), and the killed worker's own waiting one.
    const claimedId = await make('claimed-by-a-run');
    const runSlot = join(stack.dataDir, 'runs', 'land.origin.main.0123456789ab', 'gate-pool-slot');
    mkdirSync(runSlot, { recursive: true });
    writeFileSync(join(runSlot, 'slot.json'), JSON.stringify({ slot: 'claimed-by-a-run', containerId: claimedId, imageId: 'sha256:x' }));
    const orphanId = await make('of-a-removed-run');
    const [waiting] = await poolReady(stack);
    await stack.killWorker('SIGKILL');
    await stack.startWorker();
    const [fresh] = await poolReady(stack);
    const left = new Set((await poolContainers(stack)).map((info) => info.Id));
    assert.equal(left.has(claimedId), true, 'the claimed one stays: its run removes it');
    assert.equal(left.has(orphanId), false, 'no run names it: removed');
    assert.equal(left.has(waiting!.Id), false, "the killed worker's waiting one: removed");
    assert.notEqual(fresh!.Id, waiting!.Id);
    await stack.docker.getContainer(claimedId).remove({ force: true });
  });
});
