import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { branchHead, createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { containersCreated, runningContainer, startStack, waitFor, type Stack } from '../helpers/stack';
import { keepRefLog, refUpdates } from '../helpers/git';

describe('worker restart mid-gate', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(async () => {
    await stack?.stop();
  });

  it('SIGKILL the worker while a gate container runs: the landing completes once, reattached', async () => {
    const repo = createFixtureRepo({
      base: {
        'slow-test.sh': 'echo started; sleep 8; echo finished\n',
        '.config/tarmac/land-gate.json': gateFile([{ id: 'slow', run: ['sh', 'slow-test.sh'], timeout: '5m' }]),
      },
      branches: [{ name: 'feature/slow', commits: [{ message: 'feature', files: { 'feature.txt': 'new\n' } }] }],
    });
    // Record every update of the origin's branches, so "advanced exactly once" is observable.
    keepRefLog(repo.path);
    const head = branchHead(repo.path, 'feature/slow');
    const since = Math.floor(Date.now() / 1000);
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/slow'], target: 'main' });
    assert.equal(created.status, 201);
    const runLabel = `tarmac.run=${created.body.id}`;

    const running = await runningContainer(stack.docker, [runLabel], 'the gate container to run', 60_000);
    const containerId = running.Id;
    // The placement may start the container ahead of the gate step: kill while the step itself runs.
    await waitFor(
      () => stack.api('GET', `/v1/landings/${created.body.id}`),
      (response) => response.body?.steps?.some((step: { name: string; status: string }) => step.name.startsWith('gate.runSuite') && step.status === 'running'),
      60_000,
      'the gate step to run',
    );
    await stack.killWorker('SIGKILL');
    const stillRunning = await stack.docker.getContainer(containerId).inspect();
    assert.equal(stillRunning.State.Running, true, 'the gate container outlives the worker');

    await stack.startWorker();
    const view = await waitFor(
      () => stack.api('GET', `/v1/landings/${created.body.id}`),
      (response) => response.body?.workflowStatus === 'COMPLETED',
      120_000,
      'the landing to complete',
    );
    const outcome = view.body.outcome;
    assert.equal(outcome.status, 'landed', outcome.summary);
    assert.equal(outcome.gates.length, 1);
    assert.equal(outcome.gates[0].reattached, true, 'the retried activity reattached to the running container');
    assert.equal(outcome.gates[0].exitCode, 0);
    assert.equal(await containersCreated(stack.docker, since, runLabel), 1, 'no second gate container was started');
    assert.equal(branchHead(repo.path, 'main'), head);
    assert.deepEqual(refUpdates(repo.path), [head], 'main was updated exactly once after the fixture was made');
  });

  it('SIGKILL the worker during the fixup session: the landing completes correctly, once', async () => {
    const repo = createFixtureRepo({
      base: {
        'check.sh': 'test -f FIXED\n',
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }]),
      },
      branches: [{ name: 'feature/needs-fix', commits: [{ message: 'feature', files: { 'f.txt': 'f\n' } }] }],
    });
    keepRefLog(repo.path);
    const since = Math.floor(Date.now() / 1000);
    // The slow fixer waits 6 s (time to kill the worker mid-session), then commits FIXED.
    stack.scriptScenario('slow-write-fixed', { slowMs: 6000, edits: [{ file: 'FIXED', replace: 'yes\n' }] });
    const created = await stack.api('POST', '/v1/landings', {
      repo: repo.url,
      branches: ['feature/needs-fix'],
      target: 'main',
      agents: { fixer: 'script#slow-fixer:slow-write-fixed', ladder: ['script#slow-fixer:slow-write-fixed'] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const fixerLabel = `tarmac.role=implementer`;
    const fixer = await runningContainer(stack.docker, [`tarmac.run=${created.body.id}`, fixerLabel], 'the fix loop’s session container to run', 90_000);
    await stack.killWorker('SIGKILL');
    await stack.startWorker();
    const view = await waitFor(
      () => stack.api('GET', `/v1/landings/${created.body.id}`),
      (response) => response.body?.workflowStatus === 'COMPLETED',
      180_000,
      'the landing to complete',
    );
    const outcome = view.body.outcome;
    assert.equal(outcome.status, 'landed', outcome.summary);
    assert.deepEqual(
      outcome.sessions.map((session: { role: string; attempts: number }) => `${session.role}:${session.attempts}`),
      ['implementer:1'],
    );
    const session = (await stack.client.workflow.getHandle(`${created.body.id}.fixup-1-implementer-1`).result()) as {
      attempts: { containerId: string; reattached: boolean }[];
    };
    assert.equal(session.attempts[0]!.containerId, fixer.Id, 'the fixer container was reattached, not replaced');
    assert.equal(session.attempts[0]!.reattached, true);
    // This run's session only (the session id alone is the same in every landing with a fixup).
    assert.equal(await containersCreated(stack.docker, since, [`tarmac.run=${created.body.id}`, 'tarmac.session=fixup-1-implementer-1']), 1);
    assert.deepEqual(refUpdates(repo.path), [outcome.mergedSha], 'main was updated exactly once');
  });
});
