import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { SessionOutcome, SessionRequest, SessionStatusView } from '../../core/session-types';
import { createFixtureRepo } from '../../infra/fixture-repo';
import { containersCreated, runningContainer, startStack, waitFor, type Stack } from '../helpers/stack';

describe('agentSession on the real stack (script harness in containers)', () => {
  let stack: Stack;
  let repoUrl: string;
  before(async () => {
    stack = await startStack();
    repoUrl = createFixtureRepo({
      base: { 'README.md': '# fixture\n', 'src/app.js': "console.log('hi');\n// TODO: tidy\n" },
      branches: [{ name: 'work', commits: [{ message: 'work', files: { 'src/extra.js': 'debugger;\n' } }] }],
    }).url;
  });
  after(async () => {
    await stack?.stop();
  });

  function request(overrides: Partial<SessionRequest> & Pick<SessionRequest, 'harnessModel'>): SessionRequest {
    const id = randomUUID().slice(0, 8);
    return {
      runId: `session-test.${id}`,
      sessionId: `s-${id}`,
      role: 'reviewer',
      task: { prompt: 'review the change', files: ['src/app.js', 'src/extra.js'] },
      workspace: { kind: 'fresh', repo: repoUrl, ref: 'work' },
      ...overrides,
    };
  }

  async function start(body: SessionRequest) {
    return await stack.client.workflow.start('agentSession', { workflowId: body.runId, taskQueue: stack.config.taskQueue, args: [body] });
  }

  async function run(body: SessionRequest): Promise<SessionOutcome> {
    return (await (await start(body)).result()) as SessionOutcome;
  }

  const classes = (outcome: SessionOutcome) => outcome.attempts.map((attempt) => attempt.class);
  const actions = (outcome: SessionOutcome) => outcome.decisions.map((decision) => decision.action);

  it('a reviewer delivers its findings', async () => {
    const outcome = await run(request({ harnessModel: 'script#reviewer', ladder: ['script#reviewer'] }));
    assert.equal(outcome.status, 'delivered', outcome.summary);
    assert.deepEqual(classes(outcome), ['delivered']);
    const rules = (outcome.result?.findings ?? []).map((finding) => `${finding.file}:${finding.line}:${finding.severity}`).sort();
    assert.deepEqual(rules, ['src/app.js:1:minor', 'src/app.js:2:minor', 'src/extra.js:1:blocking']);
    assert.equal(outcome.meters.sessionsSpawned, 1);
  });

  it('exit before first turn → classified, respawned, delivered', async () => {
    const outcome = await run(request({ harnessModel: 'script#flaky-start', ladder: ['script#flaky-start'] }));
    assert.equal(outcome.status, 'delivered', outcome.summary);
    assert.deepEqual(classes(outcome), ['died-before-first-turn', 'delivered']);
    assert.deepEqual(actions(outcome), ['respawn', 'done']);
    assert.equal(outcome.meters.respawns, 1);
  });

  it('exceeding memory → oom', async () => {
    const outcome = await run(request({ harnessModel: 'script#oom', ladder: ['script#oom'], limits: { memoryMb: 64, maxRespawns: 0 } }));
    assert.equal(outcome.status, 'failed');
    assert.deepEqual(classes(outcome), ['oom']);
    assert.equal(outcome.attempts[0]!.oomKilled, true);
    assert.deepEqual(actions(outcome), ['give-up']);
  });

  it('hanging → timeout (killed at the session deadline)', async () => {
    const outcome = await run(request({ harnessModel: 'script#hang', ladder: ['script#hang'], limits: { timeout: '3s', maxRespawns: 0 } }));
    assert.equal(outcome.status, 'failed');
    assert.deepEqual(classes(outcome), ['timeout']);
    assert.match(outcome.summary, /timeout/);
  });

  it('repeated failure escalates exactly one ladder index per step, in array order', async () => {
    const ladder = ['script#crash', 'script#die-before-first-turn', 'script#reviewer'];
    const outcome = await run(request({ harnessModel: 'script#crash', ladder, limits: { maxRespawns: 1 } }));
    assert.equal(outcome.status, 'delivered', outcome.summary);
    assert.deepEqual(
      outcome.attempts.map((attempt) => `${attempt.harnessModel}:${attempt.class}`),
      [
        'script#crash:crashed',
        'script#crash:crashed',
        'script#die-before-first-turn:died-before-first-turn',
        'script#die-before-first-turn:died-before-first-turn',
        'script#reviewer:delivered',
      ],
    );
    assert.deepEqual(actions(outcome), ['respawn', 'escalate', 'respawn', 'escalate', 'done']);
    const escalations = outcome.decisions.filter((decision) => decision.action === 'escalate').map((decision) => decision.harnessModel);
    assert.deepEqual(escalations, ['script#die-before-first-turn', 'script#reviewer']);
    assert.equal(outcome.meters.escalations, 2);
  });

  it('claude-code#falbe-5 fails in validate, naming the nearest known model; no container', async () => {
    const since = Math.floor(Date.now() / 1000);
    const body = request({ harnessModel: 'claude-code#falbe-5' });
    const outcome = await run(body);
    assert.equal(outcome.status, 'invalid-request');
    assert.equal(outcome.failure?.type, 'TARMAC_UNKNOWN_MODEL');
    assert.match(outcome.summary, /unknown model "falbe-5" of harness "claude-code" \(nearest known: claude-code#claude-/);
    assert.equal(outcome.attempts.length, 0);
    assert.equal(await containersCreated(stack.docker, since, `tarmac.run=${body.runId}`), 0);
  });

  it('a script model naming a scenario the worker does not have: agent-unavailable naming the missing file; no container', async () => {
    const since = Math.floor(Date.now() / 1000);
    const body = request({ role: 'fixer', harnessModel: 'script#fixer:nowhere', ladder: ['script#fixer:nowhere'] });
    const outcome = await run(body);
    assert.equal(outcome.status, 'agent-unavailable', outcome.summary);
    assert.match(outcome.summary, /script#fixer:nowhere cannot run: scenario file \/\S+\/nowhere\.json is missing/);
    assert.equal(await containersCreated(stack.docker, since, `tarmac.run=${body.runId}`), 0);
  });

  it('a fixer that claims success without a commit is a failed session', async () => {
    const outcome = await run(request({ role: 'fixer', harnessModel: 'script#claims-success', ladder: ['script#claims-success'], limits: { maxRespawns: 0 } }));
    assert.equal(outcome.status, 'failed');
    assert.deepEqual(classes(outcome), ['no-evidence']);
    assert.equal(outcome.attempts[0]!.result?.status, 'ok', 'it did claim success');
    assert.equal(outcome.attempts[0]!.commitsAdded, 0);
  });

  it('a fixer that commits is delivered with its commit', async () => {
    stack.scriptScenario('remove-debugger', { edits: [{ file: 'src/extra.js', find: 'debugger;', replace: '// fixed' }] });
    const outcome = await run(
      request({
        role: 'fixer',
        harnessModel: 'script#fixer:remove-debugger',
        ladder: ['script#fixer:remove-debugger'],
        task: { prompt: 'remove the debugger statement' },
      }),
    );
    assert.equal(outcome.status, 'delivered', outcome.summary);
    assert.equal(outcome.attempts[0]!.commitsAdded, 1);
    assert.match(outcome.headSha ?? '', /^[0-9a-f]{40}$/);
  });

  it('the session container is sandboxed per the contract (docker inspect)', async () => {
    stack.scriptScenario('wait-4s', { slowMs: 4000 });
    const body = request({
      harnessModel: 'script#slow:wait-4s',
      ladder: ['script#slow:wait-4s'],
      task: { prompt: 'take your time' },
      limits: { memoryMb: 256, cpus: 0.5, pids: 100 },
    });
    const handle = await start(body);
    const info = await runningContainer(stack.docker, [`tarmac.session=${body.sessionId}`], 'the session container to run', 60_000);
    const inspected = await stack.docker.getContainer(info.Id).inspect();
    assert.notEqual(inspected.Config.User, '');
    assert.notEqual(inspected.Config.User.split(':')[0], '0', 'not root');
    assert.equal(inspected.HostConfig.NetworkMode, 'none');
    assert.equal(inspected.HostConfig.ReadonlyRootfs, true);
    assert.deepEqual(inspected.HostConfig.CapDrop, ['ALL']);
    assert.ok(inspected.HostConfig.SecurityOpt?.includes('no-new-privileges'));
    assert.equal(inspected.HostConfig.Memory, 256 * 1024 * 1024);
    assert.equal(inspected.HostConfig.NanoCpus, 0.5e9);
    assert.equal(inspected.HostConfig.PidsLimit, 100);
    for (const [key, value] of Object.entries({
      'tarmac.run': body.runId,
      'tarmac.session': body.sessionId,
      'tarmac.role': 'reviewer',
      'tarmac.harness': 'script',
      'tarmac.model': 'slow:wait-4s',
    })) {
      assert.equal(inspected.Config.Labels[key], value, key);
    }
    const binds = inspected.HostConfig.Binds ?? [];
    // A reviewer reads its own copy of the workspace, read-only (docs/SECURITY.md).
    const workspaceBind = binds.find((bind) => bind.endsWith(':/workspace:ro'));
    assert.ok(workspaceBind, 'the reviewer’s workspace is mounted read-only');
    assert.match(workspaceBind, new RegExp(`/sessions/${body.sessionId}/a1/workspace:`), 'a copy of the attempt’s own, not the run workspace');
    assert.ok(binds.some((bind) => bind.endsWith(':/tarmac/task.json:ro')));
    assert.ok(binds.some((bind) => bind.endsWith(':/tarmac/out:rw')));
    const outcome = (await handle.result()) as SessionOutcome;
    assert.equal(outcome.status, 'delivered');
  });

  it('a token budget smaller than the usage pauses the run; extending it through the API resumes it', async () => {
    // Both rungs report 600 tokens; the second one commits FIXED.md.
    stack.scriptScenario('write-fixed-md-spend-600', {
      edits: [{ file: 'FIXED.md', replace: 'fixed\n' }],
      reportUsage: { inputTokens: 400, outputTokens: 200, costUsd: 0.01 },
    });
    const body = request({
      role: 'fixer',
      harnessModel: 'script#claims-success:write-fixed-md-spend-600',
      ladder: ['script#claims-success:write-fixed-md-spend-600', 'script#fixer:write-fixed-md-spend-600'],
      limits: { maxRespawns: 0 },
      budget: { tokens: 500, onExhausted: 'pause' },
      task: { prompt: 'fix it' },
    });
    const handle = await start(body);
    const paused = await waitFor(
      () => handle.query<SessionStatusView>('status'),
      (status) => status.state === 'paused-budget',
      60_000,
      'the run to pause for its budget',
    );
    assert.match(paused.pausedFor ?? '', /tokens: 600 used of 500/);
    assert.equal(paused.attempt, 1, 'paused after the session that crossed the budget');

    const wrong = await stack.api('POST', `/v1/runs/${body.runId}/budget`, { action: 'extend' });
    assert.equal(wrong.status, 400, 'an extension without amounts is refused');
    const extended = await stack.api('POST', `/v1/runs/${body.runId}/budget`, { action: 'extend', tokens: 5000 });
    assert.equal(extended.status, 200, JSON.stringify(extended.body));
    const outcome = (await handle.result()) as SessionOutcome;
    assert.equal(outcome.status, 'delivered', outcome.summary);
    assert.deepEqual(actions(outcome), ['escalate', 'pause', 'resume', 'done']);
    assert.equal(outcome.meters.inputTokens + outcome.meters.outputTokens, 1200);
    assert.equal(outcome.meters.budgetPauses, 1);
    const status = await stack.api('GET', `/v1/runs/${body.runId}`);
    assert.equal(status.body.workflowStatus, 'COMPLETED');
  });

  it('with onExhausted "stop" the run stops instead of pausing', async () => {
    stack.scriptScenario('spend-600', { reportUsage: { inputTokens: 400, outputTokens: 200, costUsd: 0 } });
    const outcome = await run(
      request({
        role: 'fixer',
        harnessModel: 'script#claims-success:spend-600',
        ladder: ['script#claims-success:spend-600', 'script#fixer:spend-600'],
        limits: { maxRespawns: 0 },
        budget: { tokens: 100, onExhausted: 'stop' },
        task: { prompt: 'fix it' },
      }),
    );
    assert.equal(outcome.status, 'budget-exhausted');
    assert.equal(outcome.attempts.length, 1);
  });

  it('SIGKILL the worker mid-session: the same container is awaited and collected; one container ever', async () => {
    stack.scriptScenario('wait-8s', { slowMs: 8000 });
    const body = request({ harnessModel: 'script#slow:wait-8s', ladder: ['script#slow:wait-8s'], task: { prompt: 'slow review', files: ['src/extra.js'] } });
    const since = Math.floor(Date.now() / 1000);
    const handle = await start(body);
    const info = await runningContainer(stack.docker, [`tarmac.session=${body.sessionId}`], 'the session container to run', 60_000);
    await stack.killWorker('SIGKILL');
    await stack.startWorker();
    const outcome = (await handle.result()) as SessionOutcome;
    assert.equal(outcome.status, 'delivered', outcome.summary);
    assert.equal(outcome.attempts.length, 1);
    assert.equal(outcome.attempts[0]!.reattached, true);
    assert.equal(outcome.attempts[0]!.containerId, info.Id, 'the same container id was awaited');
    assert.equal(outcome.meters.reattachments, 1);
    assert.equal(await containersCreated(stack.docker, since, `tarmac.session=${body.sessionId}`), 1);
  });

  it('a host that dies mid-session and stays gone → lost-host → the session starts over on another host and delivers', async () => {
    stack.scriptScenario('wait-12s', { slowMs: 12_000 });
    const body = request({
      harnessModel: 'script#slow:wait-12s',
      ladder: ['script#slow:wait-12s'],
      limits: { hostLostAfter: '5s' },
      task: { prompt: 'slow review', files: ['src/extra.js'] },
    });
    const handle = await start(body);
    await runningContainer(stack.docker, [`tarmac.session=${body.sessionId}`], 'the first attempt to run on test-host', 60_000);
    // The first host dies mid-session and does not come back; then a second host joins. (In this
    // order the kill lands inside the agent's 12 s whatever a worker's start-up takes on a busy machine.)
    await stack.killWorker('SIGKILL');
    await stack.startExtraWorker({ TARMAC_HOST_ID: 'test-host-b' });
    try {
      const outcome = (await handle.result()) as SessionOutcome;
      assert.equal(outcome.status, 'delivered', outcome.summary);
      assert.deepEqual(classes(outcome), ['lost-host', 'delivered']);
      assert.deepEqual(actions(outcome), ['respawn', 'done']);
      assert.deepEqual(
        outcome.attempts.map((attempt) => attempt.hostId),
        ['test-host', 'test-host-b'],
        'the first attempt was lost with its host; the second ran on the live one',
      );
      assert.equal(outcome.meters.respawns, 1);
    } finally {
      await stack.startWorker();
    }
  });
});
