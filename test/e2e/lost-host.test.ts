import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { defaultRecipesDir } from '../../core/node/recipes';
import { eventsQuery } from '../../core/messages';
import { hostQueue } from '../../core/queues';
import { branchHead, createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { cleanedUp, landingFinished, startStack, stepRunning, waitFor, type Stack } from '../helpers/stack';
import { fileAt, treeOf } from '../helpers/git';

/** The processes' identity as the SDK gives it by default: `<pid>@<hostname>`. */
const processOf = (identity: string | null | undefined) => identity?.split('@')[0];

describe('limits a recipe sets: a host lost for good, a question left unanswered', () => {
  let stack: Stack;
  const recipesDir = mkdtempSync(join(tmpdir(), 'tarmac-test-recipes-'));
  const otherDataDir = mkdtempSync(join(tmpdir(), 'tarmac-test-host-b-'));
  const thirdDataDir = mkdtempSync(join(tmpdir(), 'tarmac-test-host-c-'));
  /** Host B, which the first test starts when A dies (the later tests start from there). */
  let hostB: ChildProcess | undefined;
  before(async () => {
    // A host that picks up no step for 6 s is lost (the recipe's limits.session.hostLostAfter; default 5m).
    cpSync(defaultRecipesDir, recipesDir, { recursive: true });
    const limits = JSON.parse(readFileSync(join(recipesDir, 'limits.json'), 'utf8'));
    limits.session.hostLostAfter = '6s';
    limits.questions = { wait: '3s' };
    writeFileSync(join(recipesDir, 'limits.json'), `${JSON.stringify(limits, null, 2)}\n`);
    stack = await startStack({ recipesDir });
  });
  after(async () => {
    await stack?.stop();
    rmSync(recipesDir, { recursive: true, force: true });
    rmSync(otherDataDir, { recursive: true, force: true });
    rmSync(thirdDataDir, { recursive: true, force: true });
  });

  it('host A dies mid-gate with its Docker engine; host B re-places the run from origin, re-gates, and merges exactly the gated tree', async () => {
    const repo = createFixtureRepo({
      base: {
        'a.txt': 'a\n',
        'b.txt': 'b\n',
        Makefile: 'test:\n\tsleep 8\n\tgrep -q A a.txt && grep -q B b.txt\n',
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['make', 'test'] }], { fixup: { maxRounds: 0 } }),
      },
      branches: [
        { name: 'feature/a', commits: [{ message: 'a: upper', files: { 'a.txt': 'A\n' } }] },
        { name: 'feature/b', commits: [{ message: 'b: upper', files: { 'b.txt': 'B\n' } }] },
      ],
    });
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/a', 'feature/b'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.id as string;
    const handle = stack.client.workflow.getHandle(id);
    // The gate step runs on A (it has heartbeated its container).
    await stepRunning(stack, id, 'gate.runSuite', 'the gate step to run on A', 90_000);
    const hostA = stack.worker().pid;
    // A dies for good, and its Docker engine with it (the shared engine of this machine stands in
    // for A's own: its containers go); then B joins.
    await stack.killWorker('SIGKILL');
    for (const info of await stack.docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tarmac.run=${id}`] }) })) {
      await stack.docker.getContainer(info.Id).remove({ force: true });
    }
    const during = await stack.api('GET', `/v1/landings/${id}`);
    assert.equal(during.body.workflowStatus, 'RUNNING', `A died before the landing ended: ${JSON.stringify(during.body)}`);
    assert.match(during.body.statusUnavailable, /^no worker answered the status query/, 'with no worker up, the view says why it is thin');
    const other = await stack.startExtraWorker({ TARMAC_HOST_ID: 'test-host-b', TARMAC_DATA_DIR: otherDataDir });
    hostB = other;

    const view = await landingFinished(stack, id, 240_000);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    const merged = branchHead(repo.path, 'main');
    assert.equal(merged, view.outcome.mergedSha);
    assert.equal(treeOf(repo.path, merged), view.outcome.gates.at(-1).treeSha, 'the merged tree is the one gated on B');
    assert.equal(fileAt(repo.path, merged, 'a.txt'), 'A\n');

    // The journal says which host was lost, and why.
    const { events } = await handle.query(eventsQuery, {});
    const lost = events.filter((event) => event.kind === 'host');
    assert.deepEqual(
      lost.map((event) => event.kind === 'host' && event.hostId),
      ['test-host'],
    );
    assert.match(lost[0]!.kind === 'host' ? lost[0]!.reason : '', /no worker of host test-host picked up a step within 6 s/);

    // From the history: a step on A's queue timed out unstarted; the run went on on B's queue, by B.
    const history = (await handle.fetchHistory()).events ?? [];
    const timedOut = history.filter(
      (event) =>
        event.activityTaskTimedOutEventAttributes?.failure?.timeoutFailureInfo?.timeoutType ===
        temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START,
    );
    assert.ok(timedOut.length >= 1, 'a step on the lost host timed out before any worker started it');
    const scheduled = history.flatMap((event) => {
      const attributes = event.activityTaskScheduledEventAttributes;
      if (!attributes) return [];
      const started = history.find((other) => other.activityTaskStartedEventAttributes?.scheduledEventId?.toString() === event.eventId?.toString());
      return [
        { type: attributes.activityType!.name!, queue: attributes.taskQueue!.name!, by: processOf(started?.activityTaskStartedEventAttributes?.identity) },
      ];
    });
    const onB = scheduled.filter((entry) => entry.queue === hostQueue('test-host-b'));
    assert.ok(onB.some((entry) => entry.type === 'gate.runSuite') && onB.every((entry) => entry.by === String(other.pid)), JSON.stringify(scheduled));
    assert.ok(
      scheduled.filter((entry) => entry.queue === hostQueue('test-host')).every((entry) => entry.by === undefined || entry.by === String(hostA)),
      'nothing of A ran anywhere else',
    );
    // The placement on B is recorded (a local activity of B's, or through the placement queue).
    const placements = history.filter((event) => {
      const marker = event.markerRecordedEventAttributes;
      if (marker?.markerName !== 'core_local_activity' || marker.failure) return false;
      const data = defaultPayloadConverter.fromPayload<{ activity_type?: string; activityType?: string }>(marker.details!.data!.payloads![0]!);
      return (data.activity_type ?? data.activityType) === 'capsule.placeLanding';
    });
    assert.equal(placements.length + scheduled.filter((entry) => entry.type === 'capsule.placeLanding').length, 2, 'placed twice: on A, then on B');
    // B cleaned up what it made (its janitor, once the run closed); nothing of the run is left on B.
    assert.equal((await cleanedUp(otherDataDir, id)).workflowStatus, 'COMPLETED');
    assert.equal(existsSync(join(otherDataDir, 'runs', id, 'worktree')), false, "B removed the run's workspace");
    const left = await stack.docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tarmac.run=${id}`] }) });
    assert.deepEqual(
      left.map((container) => container.Id),
      [],
    );
  });

  it("an agent's question left unanswered past the recipe's limits.questions.wait → needs-decision naming the wait; nothing merged", async () => {
    stack.scriptScenario('ask-nobody', { ask: ['Which side wins?'], edits: [] });
    const repo = createFixtureRepo({
      base: { 'shared.txt': 'base\n', 'check.sh': 'true\n', '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }]) },
      branches: [{ name: 'feature/one', commits: [{ message: 'one', files: { 'shared.txt': 'one\n' } }] }],
    });
    repo.advanceTarget('target', { 'shared.txt': 'target\n' });
    const before = branchHead(repo.path, 'main');
    const created = await stack.api('POST', '/v1/landings', {
      repo: repo.url,
      branches: ['feature/one'],
      target: 'main',
      agents: { resolver: 'script#resolver:ask-nobody', ladder: ['script#resolver:ask-nobody'] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const view = await landingFinished(stack, created.body.id, 120_000);
    assert.equal(view.outcome.status, 'needs-decision', view.outcome.summary);
    assert.match(
      view.outcome.summary,
      /^no answer to resolver-1 \(resolver, script#resolver:ask-nobody\) question resolver-1-q1 within 3 s \(the recipe's limits\.questions\.wait\); nothing was merged$/,
    );
    assert.deepEqual(
      view.outcome.questions.map((question: { id: string; answer?: string }) => [question.id, question.answer]),
      [['resolver-1-q1', undefined]],
    );
    assert.equal(branchHead(repo.path, 'main'), before);
  });

  it('a fix loop whose host is lost for good places a new workspace on a live host, starts over there and publishes its fix', async () => {
    // As the first test left it: A is gone, B is the one host. The loop is placed on B.
    assert.ok(hostB && hostB.exitCode === null, 'B runs (the first test started it)');
    stack.scriptScenario('write-fixed', { edits: [{ file: 'FIXED', replace: 'yes\n' }] });
    const repo = createFixtureRepo({ base: { 'check.sh': 'sleep 6; test -f FIXED || { echo "FIXED is missing"; exit 3; }\n' } });
    const created = await stack.api('POST', '/v1/fix-loops', {
      repo: repo.url,
      branch: 'main',
      request: 'the check fails: FIXED is missing',
      reproCommand: 'sh check.sh',
      agents: { implementer: 'script#fixer:write-fixed', ladder: ['script#fixer:write-fixed'] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.id as string;
    const handle = stack.client.workflow.getHandle(id);
    await stepRunning(stack, id, 'gate.runSuite', "the fix loop's repro to run on B", 90_000);
    // B dies for good with its Docker engine; C joins.
    const bPid = hostB.pid;
    hostB.kill('SIGKILL');
    for (const info of await stack.docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tarmac.run=${id}`] }) })) {
      await stack.docker.getContainer(info.Id).remove({ force: true });
    }
    await stack.startExtraWorker({ TARMAC_HOST_ID: 'test-host-c', TARMAC_DATA_DIR: thirdDataDir });

    const run = await waitFor(
      () => stack.api('GET', `/v1/runs/${id}`),
      (response) => response.body?.workflowStatus !== 'RUNNING',
      240_000,
      `fix loop ${id} to finish`,
    );
    const outcome = run.body.result;
    assert.equal(outcome.outcome, 'fixed', outcome.summary);
    assert.equal(outcome.fixBranch, `tarmac/fix/${id}`);
    assert.equal(fileAt(repo.path, outcome.fixBranch, 'FIXED'), 'yes\n', 'the fix was published from C');
    const { events } = await handle.query(eventsQuery, {});
    assert.deepEqual(
      events.filter((event) => event.kind === 'host').map((event) => event.kind === 'host' && event.hostId),
      ['test-host-b'],
    );
    const history = (await handle.fetchHistory()).events ?? [];
    const onC = history.filter((event) => event.activityTaskScheduledEventAttributes?.taskQueue?.name === hostQueue('test-host-c'));
    assert.ok(onC.length > 0, 'the loop went on on C');
    assert.ok(
      history.every(
        (event) =>
          !event.activityTaskStartedEventAttributes ||
          processOf(event.activityTaskStartedEventAttributes.identity) !== String(bPid) ||
          Number(event.eventId) < Number(onC[0]!.eventId),
      ),
      'nothing ran on B after the loop moved',
    );
    assert.equal(existsSync(join(thirdDataDir, 'runs', id, 'worktree')), false, 'C cleaned up after itself');
  });
});
