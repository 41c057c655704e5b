import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { defaultMaxLogBytes } from '../../activities/containers/container-logs';
import { labelKeys, removeRunContainers, runStepContainer, type ContainerSpec } from '../../activities/containers/containers';
import { createGitActivities } from '../../activities/git/git';
import { createLandingCapsules } from '../../activities/git/landing-capsules';
import type { SessionOutcome, SessionRequest } from '../../core/session-types';
import { branchHead, createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { containersCreated, startStack, testToken, waitFor, type Stack } from '../helpers/stack';

const runnerImage = 'tarmac/runner:bookworm';

async function finished(stack: Stack, id: string) {
  const view = await waitFor(
    () => stack.api('GET', `/v1/landings/${id}`),
    (response) => response.status === 200 && response.body.workflowStatus !== 'RUNNING',
    300_000,
    `landing ${id} to finish`,
  );
  return view.body;
}

/** Activity attempts and timeouts in a workflow's history: a late heartbeat shows as a timeout and a second attempt. */
async function activityTrouble(stack: Stack, workflowId: string): Promise<{ timeouts: number; retried: string[] }> {
  const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
  const scheduled = new Map<string, string>();
  let timeouts = 0;
  const retried: string[] = [];
  for (const event of history.events ?? []) {
    if (event.activityTaskScheduledEventAttributes) scheduled.set(String(event.eventId), event.activityTaskScheduledEventAttributes.activityType?.name ?? '?');
    if (event.activityTaskTimedOutEventAttributes) timeouts += 1;
    const started = event.activityTaskStartedEventAttributes;
    if (started && (started.attempt ?? 1) > 1) retried.push(scheduled.get(String(started.scheduledEventId)) ?? '?');
  }
  return { timeouts, retried };
}

/** Runs an activity function in an activity context of its own (real Docker, real git; no worker). */
function inActivity<A extends unknown[], R>(fn: (...args: A) => Promise<R>, ...args: A): Promise<R> {
  return new MockActivityEnvironment().run(fn, ...args);
}

describe('security: limits — output, networks, merge idempotency, one container per step', () => {
  let stack: Stack;
  let scratch: string;
  before(async () => {
    stack = await startStack();
    scratch = mkdtempSync(join(tmpdir(), 'tarmac-limits-'));
  });
  after(async () => {
    await stack?.stop();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('a gate suite that prints 110 MB leaves a capped log with the truncation line, and the worker stays responsive', async () => {
    const flood = "yes 'flood 0123456789 0123456789 0123456789 0123456789 0123456789' | head -c 110000000; echo flood-finished";
    const repo = createFixtureRepo({
      base: { '.config/tarmac/land-gate.json': gateFile([{ id: 'flood', run: ['sh', '-c', flood], timeout: '5m' }]) },
      branches: [{ name: 'feature/flood', commits: [{ message: 'flood', files: { 'a.txt': 'a\n' } }] }],
    });
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/flood'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.id as string;
    const handle = stack.client.workflow.getHandle(id);

    // While the suite floods: the worker answers queries promptly, and the container's Docker log is capped too.
    let slowest = 0;
    let asked = 0;
    let logConfig: { Type?: string; Config?: Record<string, string> } | undefined;
    for (const deadline = Date.now() + 240_000; Date.now() < deadline;) {
      const started = Date.now();
      const status = await handle.query<{ phase: string; outcome?: unknown }>('status');
      slowest = Math.max(slowest, Date.now() - started);
      asked += 1;
      if (!logConfig) {
        const [gate] = await stack.docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tarmac.run=${id}`, 'tarmac.role=gate'] }) });
        if (gate) logConfig = (await stack.docker.getContainer(gate.Id).inspect()).HostConfig.LogConfig;
      }
      if (status.outcome || !['validate', 'prepare', 'rebase', 'questions', 'gate'].includes(status.phase)) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const view = await finished(stack, id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.equal(view.gates[0].status, 'passed');

    const logFile = join(stack.dataDir, view.gates[0].logRef);
    const size = statSync(logFile).size;
    assert.ok(size <= defaultMaxLogBytes, `the log copy is ${size} bytes, at most the cap ${defaultMaxLogBytes}`);
    assert.ok(size > defaultMaxLogBytes / 2, 'and it kept the output up to the cap');
    const text = readFileSync(logFile, 'utf8');
    assert.match(text.slice(-200), /\[tarmac\] log truncated after \d+ bytes: the rest of the container's output was not kept\n$/);
    assert.doesNotMatch(text, /flood-finished/, 'nothing after the cap was kept');

    assert.equal(logConfig?.Type, 'json-file', "Docker's own log of the container is a capped json-file");
    assert.equal(logConfig?.Config?.['max-size'], String(defaultMaxLogBytes));
    assert.equal(logConfig?.Config?.['max-file'], '2');
    assert.ok(asked >= 3, `the worker was asked ${asked} times during the run`);
    assert.ok(slowest < 3_000, `every status query was answered within 3 s (slowest ${slowest} ms)`);
    const trouble = await activityTrouble(stack, id);
    assert.deepEqual(trouble, { timeouts: 0, retried: [] }, 'no heartbeat was late: no activity timed out or ran twice');
  });

  it('a session request asking for the host network is refused naming limits.network, before any container', async () => {
    const repoUrl = createFixtureRepo({ base: { 'README.md': '# r\n' } }).url;
    const runId = `limits-net.${randomUUID().slice(0, 8)}`;
    const since = Math.floor(Date.now() / 1000);
    const request: SessionRequest = {
      runId,
      sessionId: 's-net',
      role: 'fixer',
      harnessModel: 'script#reviewer',
      ladder: ['script#reviewer'],
      task: { prompt: 'reach the Temporal frontend' },
      workspace: { kind: 'fresh', repo: repoUrl, ref: 'main' },
      // What an untyped client could send: the type allows only 'none'.
      limits: { network: 'host' } as unknown as SessionRequest['limits'],
    };
    const outcome = (await stack.client.workflow.execute('agentSession', {
      workflowId: runId,
      taskQueue: stack.config.taskQueue,
      args: [request],
    })) as SessionOutcome;
    assert.equal(outcome.status, 'invalid-request', outcome.summary);
    assert.equal(outcome.failure?.type, 'TARMAC_INVALID_REQUEST');
    assert.match(outcome.summary, /limits\.network expected 'none'/);
    assert.equal(outcome.attempts.length, 0);
    assert.equal(await containersCreated(stack.docker, since, `tarmac.run=${runId}`), 0, 'no container was started');
  });

  it('a container asked for the host network is refused by runStepContainer itself (a gate and an agent role), and none is made', async () => {
    for (const role of ['gate', 'fixer']) {
      const runId = `limits-net-direct.${randomUUID().slice(0, 8)}`;
      const since = Math.floor(Date.now() / 1000);
      const spec: ContainerSpec = {
        labels: { [labelKeys.run]: runId, [labelKeys.step]: 'step-1', [labelKeys.role]: role },
        image: runnerImage,
        cmd: ['true'],
        user: '1000:1000',
        env: [],
        binds: [],
        workingDir: '/',
        timeoutMs: 30_000,
        logFile: join(scratch, `${runId}.log`),
        networkMode: 'host',
      };
      await assert.rejects(inActivity(runStepContainer, stack.docker, spec), (error: unknown) => {
        assert.ok(error instanceof ApplicationFailure);
        assert.equal(error.type, 'TARMAC_INVALID_REQUEST');
        assert.match(error.message, new RegExp(`network "host" refused for a ${role} container`));
        return true;
      });
      assert.equal(await containersCreated(stack.docker, since, `tarmac.run=${runId}`), 0);
    }
  });

  it('two concurrent attempts of the same step make one container: the second reattaches to it', async () => {
    const runId = `limits-race.${randomUUID().slice(0, 8)}`;
    const since = Math.floor(Date.now() / 1000);
    const spec: ContainerSpec = {
      labels: { [labelKeys.run]: runId, [labelKeys.step]: 'gate-race-r1', [labelKeys.role]: 'gate' },
      image: runnerImage,
      cmd: ['sh', '-c', 'echo racing; sleep 2; echo done'],
      user: '1000:1000',
      env: ['HOME=/tmp'],
      binds: [],
      workingDir: '/',
      timeoutMs: 60_000,
      logFile: join(scratch, `${runId}.log`),
    };
    try {
      // Both settle before the check (and before the cleanup below), whatever happens to either.
      const settled = await Promise.allSettled([inActivity(runStepContainer, stack.docker, spec), inActivity(runStepContainer, stack.docker, spec)]);
      const results = settled.map((result) => {
        if (result.status === 'rejected') throw result.reason;
        return result.value;
      });
      assert.equal(await containersCreated(stack.docker, since, `tarmac.run=${runId}`), 1, 'Docker created one container');
      assert.equal(results[0]!.containerId, results[1]!.containerId, 'both attempts waited on the same container');
      assert.deepEqual(
        results.map((result) => result.exitCode),
        [0, 0],
      );
      assert.deepEqual(results.map((result) => result.reattached).sort(), [false, true], 'one made it, the other reattached');
      const [info] = await stack.docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tarmac.run=${runId}`] }) });
      assert.match(info!.Names[0]!, /^\/tarmac-limits-race\.[0-9a-f]{8}-gate-race-r1-[0-9a-f]{16}$/, 'named after its run and step');
    } finally {
      await removeRunContainers(stack.docker, runId);
    }
  });

  it('a landing whose target already contains its verified head (a retried merge) records landed, and the target is not rewound', async () => {
    const repo = createFixtureRepo({
      base: { '.config/tarmac/land-gate.json': gateFile([{ id: 'slow', run: ['sh', '-c', 'sleep 6; echo ok'], timeout: '2m' }]) },
      branches: [{ name: 'feature/merged', commits: [{ message: 'feature', files: { 'f.txt': 'f\n' } }] }],
    });
    const head = branchHead(repo.path, 'feature/merged');
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/merged'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.id as string;
    await waitFor(
      () => stack.client.workflow.getHandle(id).query<{ phase: string }>('status'),
      (status) => status.phase === 'gate',
      120_000,
      'the gate phase',
    );
    // While it gates, the verified head reaches main (the first merge attempt's push landed), and
    // another change lands on top of it before this landing's merge step runs again.
    repo.git('fetch', '--quiet', 'origin', 'feature/merged');
    repo.git('merge', '--quiet', '--ff-only', 'FETCH_HEAD');
    writeFileSync(join(repo.clone, 'later.txt'), 'later\n');
    repo.git('add', 'later.txt');
    repo.git('commit', '--quiet', '-m', 'a later landing');
    repo.git('push', '--quiet', 'origin', 'main');
    const later = branchHead(repo.path, 'main');

    const view = await finished(stack, id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.equal(view.outcome.mergedSha, head);
    assert.equal(branchHead(repo.path, 'main'), later, 'main keeps the later commit (nothing was forced or rewound)');
    const steps = view.steps.map((step: { name: string }) => step.name);
    assert.ok(!steps.includes('capsule.rebaseOnto'), `no re-rebase onto a "moved" target: ${steps.join(', ')}`);
  });

  describe('fastForwardTarget (the merge capsule, on real git)', () => {
    const hostId = 'limits-host';
    async function prepared(dataDir: string) {
      const repo = createFixtureRepo({
        base: { 'a.txt': 'a\n' },
        branches: [
          { name: 'feature/ff', commits: [{ message: 'feature', files: { 'f.txt': 'f\n' } }] },
          { name: 'elsewhere', commits: [{ message: 'a concurrent landing', files: { 'e.txt': 'e\n' } }] },
        ],
      });
      const runId = `ff.${randomUUID().slice(0, 8)}`;
      const head = branchHead(repo.path, 'feature/ff');
      const inspected = await inActivity(createGitActivities({ dataDir, hostId }).inspectTarget, {
        runId,
        repo: repo.url,
        target: 'main',
        heads: [
          { branch: 'feature/ff', sha: head },
          { branch: 'elsewhere', sha: branchHead(repo.path, 'elsewhere') },
        ],
      });
      const capsules = createLandingCapsules({ dataDir, hostId });
      await inActivity(capsules.prepareRun, { runId, repo: repo.url, targetSha: inspected.targetSha });
      const merge = () =>
        inActivity(capsules.fastForwardTarget, { runId, repo: repo.url, target: 'main', expectedTargetSha: inspected.targetSha, headSha: head });
      return { repo, head, base: inspected.targetSha, merge };
    }

    it('retried after its push landed — even with more on top — it reports alreadyMerged and pushes nothing', async () => {
      const { repo, head, merge } = await prepared(mkdtempSync(join(scratch, 'data-')));
      assert.deepEqual(await merge(), { mergedSha: head, alreadyMerged: false });
      assert.equal(branchHead(repo.path, 'main'), head);
      assert.deepEqual(await merge(), { mergedSha: head, alreadyMerged: true }, 'equal: merged');
      repo.git('fetch', '--quiet', 'origin', 'main');
      repo.git('merge', '--quiet', '--ff-only', 'FETCH_HEAD');
      repo.git('commit', '--quiet', '--allow-empty', '-m', 'on top');
      repo.git('push', '--quiet', 'origin', 'main');
      const onTop = branchHead(repo.path, 'main');
      assert.deepEqual(await merge(), { mergedSha: head, alreadyMerged: true }, 'an ancestor of the target: merged');
      assert.equal(branchHead(repo.path, 'main'), onTop, 'main was not rewound');
    });

    it('a push racing a concurrent move of the target is refused and reported target-moved; the other landing stays', async () => {
      const { repo, merge } = await prepared(mkdtempSync(join(scratch, 'data-')));
      const concurrent = branchHead(repo.path, 'elsewhere');
      // Origin moves main to another landing's commit while it receives our push: after our
      // lease check, before our update (pre-receive runs between the two, outside quarantine).
      const hook = join(repo.path, 'hooks', 'pre-receive');
      writeFileSync(
        hook,
        `#!/bin/sh\nenv -u GIT_QUARANTINE_PATH -u GIT_OBJECT_DIRECTORY -u GIT_ALTERNATE_OBJECT_DIRECTORIES git update-ref refs/heads/main ${concurrent}\n`,
      );
      chmodSync(hook, 0o755);
      await assert.rejects(merge(), (error: unknown) => {
        assert.ok(error instanceof ApplicationFailure);
        assert.equal(error.type, 'TARMAC_TARGET_MOVED');
        assert.match(error.message, /moved during the push/);
        return true;
      });
      assert.equal(branchHead(repo.path, 'main'), concurrent, 'the concurrent landing was not overwritten');
    });

    it('a target that moved before the push is reported target-moved, not pushed over', async () => {
      const { repo, merge } = await prepared(mkdtempSync(join(scratch, 'data-')));
      const concurrent = branchHead(repo.path, 'elsewhere');
      repo.git('push', '--quiet', '--force', 'origin', `${concurrent}:refs/heads/main`);
      await assert.rejects(merge(), (error: unknown) => error instanceof ApplicationFailure && error.type === 'TARMAC_TARGET_MOVED');
      assert.equal(branchHead(repo.path, 'main'), concurrent);
    });
  });

  it('one token holds at most 8 event streams; the 9th is refused with 429 in the error shape, and a closed one frees its slot', async () => {
    const repo = createFixtureRepo({
      base: { '.config/tarmac/land-gate.json': gateFile([{ id: 'slow', run: ['sleep', '30'], timeout: '2m' }]) },
      branches: [{ name: 'feature/streams', commits: [{ message: 's', files: { 's.txt': 's\n' } }] }],
    });
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/streams'], target: 'main' });
    const url = `${stack.apiUrl}/v1/landings/${created.body.id}/events`;
    const open = async () => {
      const controller = new AbortController();
      const response = await fetch(url, { headers: { authorization: `Bearer ${testToken}` }, signal: controller.signal });
      return { response, close: () => controller.abort() };
    };
    const streams = [];
    try {
      for (let index = 0; index < 8; index += 1) {
        const stream = await open();
        assert.equal(stream.response.status, 200, `stream ${index + 1} opens`);
        streams.push(stream);
      }
      const refused = await open();
      assert.equal(refused.response.status, 429);
      const body = (await refused.response.json()) as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'TARMAC_RATE_LIMITED');
      assert.match(body.error.message, /at most 8/);
      streams.shift()!.close();
      const again = await waitFor(
        async () => {
          const stream = await open();
          if (stream.response.status !== 200) await stream.response.body?.cancel();
          return stream;
        },
        (stream) => stream.response.status === 200,
        10_000,
        'a freed slot',
      );
      streams.push(again);
      const docs = await stack.api('GET', '/docs/json');
      assert.ok(docs.body.paths['/v1/landings/{id}/events'].get.responses['429'], 'the 429 is in the OpenAPI schema');
    } finally {
      for (const stream of streams) stream.close();
      // Finished before the stack stops: the finale removes the gate container.
      await stack.api('POST', `/v1/landings/${created.body.id}/cancel`, {});
      await finished(stack, created.body.id);
    }
  });
});
