import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { branchHead, createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { cleanupMarker } from '../../activities/janitor/run-janitor';
import { cleanedUp, containersCreated, startStack, stepRunning, waitFor, type Stack } from '../helpers/stack';

const passingBase = {
  Makefile: 'test:\n\tnode test.js\n',
  'value.js': 'module.exports = 1;\n',
  'test.js': "if (require('./value.js') < 1) process.exit(1);\nconsole.log('suite ok');\n",
};

function featureBranch(files: Record<string, string> = { 'value.js': 'module.exports = 2;\n' }) {
  return [{ name: 'feature/x', commits: [{ message: 'feature: bump value', files }] }];
}

async function finished(stack: Stack, id: string) {
  const view = await waitFor(
    () => stack.api('GET', `/v1/landings/${id}`),
    (response) => response.status === 200 && response.body.workflowStatus !== 'RUNNING',
    180_000,
    `landing ${id} to finish`,
  );
  return view.body;
}

describe('landing, end to end: HTTP → Temporal → worker → container → git push', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(async () => {
    await stack?.stop();
  });

  it('lands a branch: the target on the bare origin advances to exactly the gated SHA', async () => {
    const repo = createFixtureRepo({
      base: { ...passingBase, '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['make', 'test'], timeout: '2m' }]) },
      branches: featureBranch(),
    });
    const head = branchHead(repo.path, 'feature/x');
    const since = Math.floor(Date.now() / 1000);
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/x'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.body.heads, [{ branch: 'feature/x', sha: head }]);

    const again = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/x'], target: 'main' });
    assert.equal(again.status, 200, 'the same request finds the existing run');
    assert.equal(again.body.id, created.body.id);
    assert.equal(again.body.duplicate, true);

    const view = await finished(stack, created.body.id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.equal(view.phase, 'done');
    assert.equal(branchHead(repo.path, 'main'), head, 'main on origin is the gated head');
    assert.equal(view.outcome.mergedSha, head);
    assert.equal(view.gates.length, 1);
    assert.equal(view.gates[0].status, 'passed');
    assert.equal(view.gates[0].treeSha, view.outcome.treeSha, 'the gate ran on the landed tree');
    const log = readFileSync(join(stack.dataDir, view.gates[0].logRef), 'utf8');
    assert.match(log, /suite ok/, 'the container log is in the run dir');
    assert.deepEqual(
      view.steps.map((step: { name: string }) => step.name),
      [
        'capsule.inspectTarget',
        'capsule.prepareRun',
        'capsule.rebaseBranches',
        'gate.runSuite:test#1',
        'capsule.verifyLanding',
        'queue.requestAdmission',
        'capsule.fastForwardTarget',
        'capsule.finishRun',
      ],
    );
    assert.equal(await containersCreated(stack.docker, since, `tarmac.run=${created.body.id}`), 1, 'one gate container');
    // The host's janitor cleans up once the run has closed (a moment after its result).
    const cleanup = await cleanedUp(stack.dataDir, created.body.id);
    assert.equal(cleanup.workflowStatus, 'COMPLETED');
    assert.ok(cleanup.removedPaths?.includes(join(stack.dataDir, 'runs', created.body.id, 'worktree')), JSON.stringify(cleanup));
    const leftovers = await stack.docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tarmac.run=${created.body.id}`] }) });
    assert.equal(leftovers.length, 0, 'cleanup removed the run containers');
    assert.equal(existsSync(join(stack.dataDir, 'runs', created.body.id, 'worktree')), false, 'cleanup removed the worktree');
    const stored = JSON.parse(readFileSync(join(stack.dataDir, 'runs', created.body.id, 'outcome.json'), 'utf8'));
    assert.equal(stored.status, 'landed', 'the outcome is stored in the run dir');

    // The Web UI lists workflows through visibility; the same query finds the landing by repo.
    const found: string[] = [];
    for await (const execution of stack.client.workflow.list({ query: `TarmacRepo = '${repo.url}' AND TarmacKind = 'landing'` }))
      found.push(execution.workflowId);
    assert.deepEqual(found, [created.body.id]);
    const listed = await stack.api('GET', '/v1/landings');
    assert.ok(listed.body.landings.some((landing: { id: string; outcome?: string }) => landing.id === created.body.id && landing.outcome === 'landed'));
  });

  it('red gate: outcome gate-failed with the exit code and a log reference; target unchanged', async () => {
    const repo = createFixtureRepo({
      base: {
        ...passingBase,
        '.config/tarmac/land-gate.json': gateFile(
          [
            { id: 'unit', run: ['make', 'test'] },
            { id: 'lint', run: ['sh', '-c', 'echo lint found 2 problems; exit 3'] },
          ],
          { fixup: { maxRounds: 0 } },
        ),
      },
      branches: featureBranch(),
    });
    const before = branchHead(repo.path, 'main');
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/x'], target: 'main' });
    assert.equal(created.status, 201);
    const view = await finished(stack, created.body.id);
    assert.equal(view.outcome.status, 'gate-failed');
    assert.equal(view.outcome.endedInPhase, 'gate');
    const lint = view.outcome.gates.find((gate: { suiteId: string }) => gate.suiteId === 'lint');
    assert.equal(lint.exitCode, 3);
    assert.equal(lint.status, 'failed');
    assert.match(view.outcome.summary, /lint exited 3/);
    assert.match(view.outcome.summary, new RegExp(lint.logRef.replace(/[.]/g, '\\.')));
    assert.match(readFileSync(join(stack.dataDir, lint.logRef), 'utf8'), /lint found 2 problems/);
    assert.equal(branchHead(repo.path, 'main'), before, 'target unchanged');
  });

  it('invalid land-gate.json: ends in its first phase naming file and field; no container; target unchanged', async () => {
    const repo = createFixtureRepo({
      base: { ...passingBase, '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['make', 'test'], timeout: 'ten minutes' }]) },
      branches: featureBranch(),
    });
    const before = branchHead(repo.path, 'main');
    const since = Math.floor(Date.now() / 1000);
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/x'], target: 'main' });
    const view = await finished(stack, created.body.id);
    assert.equal(view.outcome.status, 'invalid-gate-file');
    assert.equal(view.outcome.endedInPhase, 'validate');
    assert.equal(view.outcome.failure.file, '.config/tarmac/land-gate.json');
    assert.equal(view.outcome.failure.field, 'suites[0].timeout');
    assert.match(view.outcome.summary, /\.config\/tarmac\/land-gate\.json: suites\[0\]\.timeout/);
    assert.equal(view.outcome.meters.containersRun, 0);
    assert.equal(await containersCreated(stack.docker, since, `tarmac.run=${created.body.id}`), 0, 'no container was created');
    assert.equal(branchHead(repo.path, 'main'), before);
  });

  it('a branch cut from an older target head is rebased onto the current one and landed', async () => {
    const repo = createFixtureRepo({
      base: { ...passingBase, '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['make', 'test'] }]) },
      branches: featureBranch(),
    });
    // The target moves on after the branch was cut.
    repo.git('commit', '--allow-empty', '-q', '-m', 'target moves on');
    repo.git('push', '-q', 'origin', 'main');
    const before = branchHead(repo.path, 'main');
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/x'], target: 'main' });
    const view = await finished(stack, created.body.id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    const merged = branchHead(repo.path, 'main');
    assert.equal(merged, view.outcome.mergedSha);
    assert.equal(repo.git('-C', repo.path, 'rev-parse', `${merged}^`), before, 'the rebased commit sits on the moved target');
    assert.deepEqual(
      view.outcome.provenance.map((entry: { how: string }) => entry.how),
      ['identical'],
    );
  });

  it("the host's janitor never cleans up a run that is still running: a run marked while it runs (a forged marker, a worker restarted) lands, and is cleaned up once it has closed", async () => {
    const repo = createFixtureRepo({
      base: {
        ...passingBase,
        'slow.sh': 'sleep 4\n',
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', '-c', 'sh slow.sh && make test'], timeout: '2m' }]),
      },
      branches: featureBranch(),
    });
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/x'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.id as string;
    await stepRunning(stack, id, 'gate.runSuite', 'the gate to run', 90_000);
    const worktree = join(stack.dataDir, 'runs', id, 'worktree');
    assert.ok(existsSync(worktree), 'the workspace is there while the gate runs');
    // Marked as if the run had finished, and the worker started again: its janitor takes the mark up at once.
    writeFileSync(join(stack.dataDir, 'runs', id, cleanupMarker), `${JSON.stringify({ runId: id, markedAt: new Date().toISOString() })}\n`);
    await stack.killWorker('SIGKILL');
    await stack.startWorker();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    assert.ok(existsSync(worktree), 'the janitor left the workspace of the running run alone');
    const view = await finished(stack, id);
    assert.equal(view.outcome.status, 'landed', `verified and pushed from its own workspace: ${view.outcome.summary}`);
    assert.equal(branchHead(repo.path, 'main'), view.outcome.mergedSha);
    const cleanup = await cleanedUp(stack.dataDir, id);
    assert.equal(cleanup.workflowStatus, 'COMPLETED');
    assert.equal(existsSync(worktree), false, 'removed once the run closed');
    assert.ok(existsSync(join(stack.dataDir, 'runs', id, 'outcome.json')), 'the outcome stays');
  });
});
