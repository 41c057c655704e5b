import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Docker from 'dockerode';
import { containerStdout, removeRunContainers, startStepContainerAhead } from '../../activities/containers/containers';
import { createGateActivities } from '../../activities/containers/gates';
import { runPaths } from '../../activities/stores/run-store';
import { createFixtureRepo } from '../../infra/fixture-repo';
import { cloneRepo, git, treeOf } from '../helpers/git';

/**
 * Found by the chaos suite (a clean landing ended gate-failed after a worker kill): the placement
 * makes the first gate round's container while it exports the tree, as a local activity. A worker
 * killed mid-export leaves the container created and its snapshot incomplete; the lost workflow task
 * runs the placement again, which found the container by its labels and started it on the partial
 * snapshot. The repeated placement must complete the snapshot before the container can start.
 */
describe('a gate container made ahead by a placement that died mid-export', () => {
  const docker = new Docker();
  const dataDir = mkdtempSync(join(tmpdir(), 'tarmac-gate-ahead-'));
  const runId = `land.gate-ahead.${process.pid}`;
  after(async () => {
    await removeRunContainers(docker, runId);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('the repeated placement completes the snapshot before the container starts; the suite sees the whole tree', async () => {
    const repo = createFixtureRepo({ base: { 'a.txt': 'A\n', 'b.txt': 'B\n' } });
    const commitSha = git(repo.path, 'rev-parse', 'main');
    const treeSha = treeOf(repo.path, 'main');
    const paths = runPaths(dataDir, runId);
    mkdirSync(paths.runDir, { recursive: true });
    cloneRepo(repo.path, paths.worktree);
    const gates = createGateActivities({ dataDir, hostId: 'test-host', docker });
    const input = {
      runId,
      repo: repo.url,
      commitSha,
      treeSha,
      suite: { id: 'test', run: ['sh', '-c', 'cat a.txt b.txt'] },
      image: 'tarmac/runner:bookworm',
      timeoutMs: 60_000,
      round: 1,
    };

    // The first placement made the container and began the export; its worker died before the end.
    await gates.prepareGateSuite(input);
    const snapshot = join(
      paths.snapshots,
      readdirSync(paths.snapshots).find((name) => !name.endsWith('.ready'))!,
    );
    rmSync(`${snapshot}.ready`);
    rmSync(join(snapshot, 'b.txt'));
    const [made] = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tarmac.run=${runId}`] }) });
    assert.equal(made?.State, 'created', 'the container was made and never started');

    // The lost workflow task runs the placement again; it starts the container it made ahead.
    const container = await gates.prepareGateSuite(input);
    assert.equal(container.id, made.Id, 'the same container, not a second one');
    assert.ok(existsSync(`${snapshot}.ready`), 'the snapshot was completed');
    await startStepContainerAhead(container);
    const { StatusCode } = (await container.wait()) as { StatusCode: number };
    assert.equal(StatusCode, 0, 'the suite found every file of the tree');
    assert.equal(await containerStdout(docker, container.id), 'A\nB\n');
  });
});
