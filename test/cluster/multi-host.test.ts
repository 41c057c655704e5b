import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Docker from 'dockerode';
import { runPaths } from '../../activities/stores/run-store';
import { eventsQuery } from '../../core/messages';
import { defaultRecipesDir } from '../../core/node/recipes';
import { hostQueue } from '../../core/queues';
import { branchHead, createFixtureRepo, gateFile, type FixtureRepo } from '../../infra/fixture-repo';
import { startCluster, type Cluster } from '../helpers/cluster';
import { cleanedUp, removePoolContainers, waitFor } from '../helpers/stack';
import { gatePoolId } from '../../activities/containers/gate-pool';
import { git, treeOf } from '../helpers/git';

/** How long each landing's gate runs: long enough that every landing of host A is in its gate when A dies. */
const gateSeconds = 25;
/** A host no worker of which picks up a step for this long is lost (the recipe's limits.session.hostLostAfter; default 5m). */
const hostLostAfter = '6s';
const [hostA, hostB] = ['host-a', 'host-b'];

interface Landing {
  id: string;
  repo: FixtureRepo;
  /** The host that placed it before A died: the one whose data dir holds runs/<id>. */
  host: string;
}

/** The worker identity the SDK gives a process by default: `<pid>@<hostname>`. */
const processOf = (identity: string | null | undefined) => identity?.split('@')[0];

describe('a Temporal cluster on PostgreSQL, two worker hosts and the API as separate processes; one host lost for good mid-run', () => {
  let cluster: Cluster;
  const docker = new Docker();
  const recipesDir = mkdtempSync(join(tmpdir(), 'tarmac-cluster-recipes-'));
  const landings: Landing[] = [];
  const on = (host: string) => landings.filter((landing) => landing.host === host);

  before(async () => {
    cpSync(defaultRecipesDir, recipesDir, { recursive: true });
    const limits = JSON.parse(readFileSync(join(recipesDir, 'limits.json'), 'utf8'));
    limits.session.hostLostAfter = hostLostAfter;
    writeFileSync(join(recipesDir, 'limits.json'), `${JSON.stringify(limits, null, 2)}\n`);
    // A namespace of its own, made by infra/temporal/setup-namespace.sh, as TARMAC_TEMPORAL_NAMESPACE names it.
    cluster = await startCluster({ hosts: [hostA, hostB], namespace: 'tarmac-cluster', recipesDir });
  });
  after(async () => {
    for (const landing of landings) {
      for (const info of await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tarmac.run=${landing.id}`] }) }))
        await docker.getContainer(info.Id).remove({ force: true });
      rmSync(dirname(landing.repo.path), { recursive: true, force: true });
    }
    await cluster?.stop();
    // A killed host's gate pool is left (a clean stop removes its idle containers).
    for (const host of cluster?.hosts.values() ?? []) await removePoolContainers(docker, gatePoolId(host.id, host.dataDir));
    rmSync(recipesDir, { recursive: true, force: true });
  });

  /** Which host placed a landing: the one whose data dir has its run directory. */
  function placedOn(id: string): string | undefined {
    return [...cluster.hosts.values()].find((host) => existsSync(join(host.dataDir, 'runs', id)))?.id;
  }

  /** A landing's view once its workflow is no longer running; on a timeout, says where it is stuck. */
  async function finished(landing: Landing, timeoutMs: number): Promise<any> {
    try {
      return (
        await waitFor(
          () => cluster.api('GET', `/v1/landings/${landing.id}`),
          (response) => response.status === 200 && response.body.workflowStatus !== 'RUNNING',
          timeoutMs,
          `landing ${landing.id} to finish`,
        )
      ).body;
    } catch {
      const description = await cluster.client.workflow.getHandle(landing.id).describe();
      const pending = (description.raw.pendingActivities ?? []).map(
        (activity) => `${activity.activityType?.name} (attempt ${activity.attempt}, ${activity.lastFailure?.message ?? 'no failure'})`,
      );
      assert.fail(`landing ${landing.id}, placed on ${landing.host}, did not finish within ${timeoutMs / 1000} s; pending: ${pending.join('; ') || 'none'}`);
    }
  }

  /** Landed exactly once, exactly the gated tree: the target moved by one fast-forward onto base + the two branches' commits. */
  function assertLanded(view: any, landing: Landing): void {
    assert.equal(view.outcome?.status, 'landed', `${landing.id} (placed on ${landing.host}): ${view.outcome?.summary}`);
    const merged = branchHead(landing.repo.path, 'main');
    assert.equal(merged, view.outcome.mergedSha);
    assert.equal(git(landing.repo.path, 'rev-list', '--count', 'main'), '3', 'the target holds the base and exactly the two branches’ commits');
    assert.equal(git(landing.repo.path, 'rev-list', '--count', '--merges', 'main'), '0', 'by fast-forward, no merge commit');
    assert.equal(treeOf(landing.repo.path, merged), view.gates.at(-1).treeSha, 'the merged tree is the last one gated');
    assert.equal(view.gates.at(-1).status, 'passed');
    assert.equal(git(landing.repo.path, 'show', `${merged}:a.txt`), 'A');
    assert.equal(git(landing.repo.path, 'show', `${merged}:b.txt`), 'B');
  }

  it('places landings on both hosts: each landing is placed by one host and lives in that host’s data dir', async (t) => {
    for (let created = 0; (on(hostA).length < 2 || on(hostB).length < 2) && created < 12; created++) {
      const repo = createFixtureRepo({
        base: {
          'a.txt': 'a\n',
          'b.txt': 'b\n',
          Makefile: `test:\n\tsleep ${gateSeconds}\n\tgrep -q A a.txt && grep -q B b.txt\n`,
          '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['make', 'test'] }], { fixup: { maxRounds: 0 } }),
          // A tree of its own: each landing's gate runs (no gate-cache hit from another landing's).
          'landing.txt': `${created}\n`,
        },
        branches: [
          { name: 'feature/a', commits: [{ message: 'a: upper', files: { 'a.txt': 'A\n' } }] },
          { name: 'feature/b', commits: [{ message: 'b: upper', files: { 'b.txt': 'B\n' } }] },
        ],
      });
      const response = await cluster.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/a', 'feature/b'], target: 'main' });
      assert.equal(response.status, 201, JSON.stringify(response.body));
      const id = response.body.id as string;
      const host = await waitFor(
        async () => placedOn(id),
        (placed) => placed !== undefined,
        60_000,
        `landing ${id} to be placed on a host`,
      );
      landings.push({ id, repo, host: host! });
    }
    assert.ok(
      on(hostA).length >= 2 && on(hostB).length >= 2,
      `both hosts placed at least two landings: ${JSON.stringify(landings.map((landing) => landing.host))}`,
    );
    t.diagnostic(`${landings.length} landings: ${on(hostA).length} placed on ${hostA}, ${on(hostB).length} on ${hostB}`);
    for (const landing of landings) {
      const elsewhere = [...cluster.hosts.values()].filter((host) => host.id !== landing.host && existsSync(join(host.dataDir, 'runs', landing.id)));
      assert.deepEqual(elsewhere, [], `${landing.id} lives on one host only`);
    }
  });

  it('host A dies for good (SIGKILL, its containers gone with it) while its landings are in their gates; host B’s landings land', async () => {
    // Every landing of A is in its gate on A: the suite's step has started there and heartbeated its container.
    for (const landing of on(hostA)) {
      await waitFor(
        async () => (await cluster.client.workflow.getHandle(landing.id).describe()).raw.pendingActivities ?? [],
        (pending) => pending.some((activity) => activity.activityType?.name === 'gate.runSuite' && (activity.heartbeatDetails?.payloads?.length ?? 0) > 0),
        90_000,
        `the gate of ${landing.id} to run on ${hostA}`,
      );
    }
    await cluster.killHost(hostA);
    // A's machine is gone, and its Docker engine with it (this machine's one engine stands in for A's):
    // its runs' containers, and its gate pool's (waiting, or claimed by a run of A's).
    for (const landing of on(hostA)) {
      for (const info of await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tarmac.run=${landing.id}`] }) }))
        await docker.getContainer(info.Id).remove({ force: true });
    }
    await removePoolContainers(docker, gatePoolId(hostA, cluster.hosts.get(hostA)!.dataDir));
    for (const landing of on(hostB)) assertLanded(await finished(landing, 120_000), landing);
  });

  it('host A’s landings are placed again on host B, gated there, and land', async (t) => {
    const b = cluster.hosts.get(hostB)!;
    const since = Date.now();
    for (const landing of on(hostA)) {
      const view = await finished(landing, 240_000);
      assertLanded(view, landing);
      // The journal names the lost host; the gate that decided ran on B's queue, taken by B.
      const { events } = await cluster.client.workflow.getHandle(landing.id).query(eventsQuery, {});
      assert.deepEqual(
        events.filter((event) => event.kind === 'host').map((event) => event.kind === 'host' && event.hostId),
        [hostA],
        `${landing.id}: the journal names ${hostA} lost`,
      );
      const history = (await cluster.client.workflow.getHandle(landing.id).fetchHistory()).events ?? [];
      const gatesOnB = history.filter((event) => {
        const scheduled = event.activityTaskScheduledEventAttributes;
        if (scheduled?.activityType?.name !== 'gate.runSuite' || scheduled.taskQueue?.name !== hostQueue(hostB)) return false;
        const started = history.find((other) => other.activityTaskStartedEventAttributes?.scheduledEventId?.toString() === event.eventId?.toString());
        return processOf(started?.activityTaskStartedEventAttributes?.identity) === String(b.process.pid);
      });
      assert.ok(gatesOnB.length >= 1, `${landing.id}: its gate ran again on ${hostB}`);
    }
    t.diagnostic(`${on(hostA).length} landings of ${hostA} landed on ${hostB} within ${Math.round((Date.now() - since) / 1000)} s of ${hostB}'s own`);
  });

  it('B’s landings never saw a lost host; B stored every outcome and kept no workspace, snapshot or container of any landing; visibility on PostgreSQL lists every landing as landed', async () => {
    for (const landing of on(hostB)) {
      const { events } = await cluster.client.workflow.getHandle(landing.id).query(eventsQuery, {});
      assert.deepEqual(
        events.filter((event) => event.kind === 'host'),
        [],
        `${landing.id} stayed on ${hostB}`,
      );
    }
    const b = cluster.hosts.get(hostB)!;
    for (const landing of landings) {
      // B finished it: its outcome is stored in B's data dir, its workspace and snapshots are gone (logs stay).
      const paths = runPaths(b.dataDir, landing.id);
      assert.equal((await cleanedUp(b.dataDir, landing.id)).workflowStatus, 'COMPLETED', `${hostB}'s janitor cleaned up ${landing.id} once it closed`);
      assert.equal(JSON.parse(readFileSync(paths.outcome, 'utf8')).status, 'landed', `${hostB} stored the outcome of ${landing.id}`);
      assert.equal(existsSync(paths.worktree), false, `${hostB} removed the workspace of ${landing.id}`);
      assert.deepEqual(existsSync(paths.snapshots) ? readdirSync(paths.snapshots) : [], [], `${hostB} removed the gate snapshots of ${landing.id}`);
      const left = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tarmac.run=${landing.id}`] }) });
      assert.deepEqual(
        left.map((container) => container.Id),
        [],
        `no container of ${landing.id} is left`,
      );
    }
    // B's gate pool holds only containers that wait: every one a landing claimed went with its run.
    const pool = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tarmac.pool=${gatePoolId(hostB, b.dataDir)}`] }) });
    assert.deepEqual(
      pool.map((container) => container.State).filter((state) => state !== 'running'),
      [],
      `${hostB}'s pool left no used container`,
    );
    // The API lists them through Temporal's SQL visibility, by Tarmac's search attributes.
    const ids = landings.map((landing) => landing.id).sort();
    await waitFor(
      async () => (await cluster.api('GET', '/v1/landings?outcome=landed&limit=50')).body?.landings?.map((landing: { id: string }) => landing.id).sort() ?? [],
      (listed) => JSON.stringify(listed) === JSON.stringify(ids),
      30_000,
      'every landing to be listed as landed',
    );
  });
});
