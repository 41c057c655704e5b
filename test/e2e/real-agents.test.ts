/**
 * Real agents, end to end (issue 12): a conflicting landing resolved by the real Claude Code CLI in
 * its real image (tarmac/agent-claude-code, built offline by scripts/build-images.sh), in a
 * network-none session container that reaches a model only through the worker's model gateway,
 * whose upstream is the scripted endpoint (TARMAC_MODEL_UPSTREAM_ANTHROPIC). The worker holds a fake
 * key: the endpoint sees it (the gateway added it), nothing the agent or the records show does.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadRecipes } from '../../core/node/recipes';
import type { SessionOutcome, SessionRequest } from '../../core/session-types';
import { branchHead, createFixtureRepo, gateFile, type FixtureBranch } from '../../infra/fixture-repo';
import type { Script } from '../../infra/scripted-model/script';
import { startScriptedModel, type ScriptedModel } from '../../infra/scripted-model/server';
import { startStack, waitFor, type Stack } from '../helpers/stack';
import { skipUnlessBuilt } from '../helpers/agent-cli';
import { assertKeyNowhere, watchHarnessContainers } from '../helpers/agent-containers';
import { fileAt } from '../helpers/git';

const image = loadRecipes().harnesses['claude-code']!.image;
const secret = 'sk-test-secret-xyz';
const model = 'claude-sonnet-4-5';

const skip = skipUnlessBuilt([image]);

describe('real agents: Claude Code resolves a conflict through the model gateway', { skip, timeout: 600_000 }, () => {
  let stack: Stack;
  let endpoint: ScriptedModel;
  // The fixer: runs the failing check twice, is refused the third time (circuit breaker), reads, makes a
  // wrong fix and commits; the fix loop's re-run still fails, so the repair is a follow-up message in the
  // same conversation (the CLI resumes it): it reads again (a new session's gateway), fixes, commits.
  const fixerUsage = Array.from({ length: 11 }, (_, turn) => ({ inputTokens: 1000 + 100 * turn, outputTokens: 20 + turn }));
  const fixerConversation: Script['conversations'][number] = {
    name: 'fixer',
    match: 'want value=2',
    turns: [
      { toolCalls: [{ name: 'mcp__tarmac__run_command', input: { command: 'sh check.sh' } }] },
      { toolCalls: [{ name: 'mcp__tarmac__run_command', input: { command: 'sh check.sh' } }] },
      { toolCalls: [{ name: 'mcp__tarmac__run_command', input: { command: 'sh  check.sh' } }] },
      { toolCalls: [{ name: 'mcp__tarmac__read_file', input: { path: 'value.txt' } }] },
      { toolCalls: [{ name: 'mcp__tarmac__edit_file', input: { path: 'value.txt', find: 'value=0', replace: 'value=1' } }] },
      { toolCalls: [{ name: 'mcp__tarmac__run_command', input: { command: "git commit -qam 'value: 1'" } }] },
      { text: 'Set value to 1.' },
      { toolCalls: [{ name: 'mcp__tarmac__read_file', input: { path: 'value.txt' } }] },
      { toolCalls: [{ name: 'mcp__tarmac__edit_file', input: { path: 'value.txt', find: 'value=1', replace: 'value=2' } }] },
      { toolCalls: [{ name: 'mcp__tarmac__run_command', input: { command: "sh check.sh && git commit -qam 'value: 2'" } }] },
      { text: 'Set value to 2; check.sh passes.' },
    ].map((turn, index) => ({ ...turn, usage: fixerUsage[index]! })),
  };

  // Red gate, then blocking review findings: the fix loop's agent fixes the gate; the findings go to the
  // same agent as a follow-up in its conversation (turn 4 on), not to a fresh one.
  const reviewFollowUp: Script['conversations'][number] = {
    name: 'fixer-then-review',
    match: 'want value two',
    turns: [
      { toolCalls: [{ name: 'mcp__tarmac__read_file', input: { path: 'value.txt' } }] },
      { toolCalls: [{ name: 'mcp__tarmac__edit_file', input: { path: 'value.txt', find: 'value=0', replace: 'value=2' } }] },
      { toolCalls: [{ name: 'mcp__tarmac__run_command', input: { command: "git commit -qam 'value: 2'" } }] },
      { text: 'Set value to 2.' },
      { toolCalls: [{ name: 'mcp__tarmac__read_file', input: { path: 'app.js' } }] },
      { toolCalls: [{ name: 'mcp__tarmac__edit_file', input: { path: 'app.js', find: 'debugger;\n', replace: '' } }] },
      { toolCalls: [{ name: 'mcp__tarmac__run_command', input: { command: "git commit -qam 'app: no debugger'" } }] },
      { text: 'Removed the debugger statement.' },
    ].map((turn) => ({ ...turn, usage: { inputTokens: 500, outputTokens: 10 } })),
  };

  // The resolver has no built-in tool: it reads, writes and runs git only through the tool gateway (MCP).
  const usage = [
    { inputTokens: 1500, outputTokens: 90 },
    { inputTokens: 1700, outputTokens: 60 },
    { inputTokens: 1800, outputTokens: 40 },
    { inputTokens: 1900, outputTokens: 30 },
  ];
  const script: Script = {
    version: 1,
    conversations: [
      {
        name: 'resolver',
        match: 'shared.txt',
        turns: [
          { text: 'Reading the conflict in shared.txt.', toolCalls: [{ name: 'mcp__tarmac__read_file', input: { path: 'shared.txt' } }], usage: usage[0]! },
          { toolCalls: [{ name: 'mcp__tarmac__write_file', input: { path: '/workspace/shared.txt', content: 'target\none\n' } }], usage: usage[1]! },
          {
            toolCalls: [{ name: 'mcp__tarmac__run_command', input: { command: 'git add shared.txt && GIT_EDITOR=true git rebase --continue' } }],
            usage: usage[2]!,
          },
          { text: 'Resolved shared.txt (kept both sides) and continued the rebase.', usage: usage[3]! },
        ],
      },
      fixerConversation,
      reviewFollowUp,
    ],
  };

  before(async () => {
    endpoint = await startScriptedModel({ script, port: 0 });
    stack = await startStack({ workerEnv: { TARMAC_MODEL_UPSTREAM_ANTHROPIC: endpoint.url!, ANTHROPIC_API_KEY: secret } });
  });
  after(async () => {
    await stack?.stop();
    await endpoint?.close();
  });

  /** A target and a branch that conflict in shared.txt. */
  function conflictRepo() {
    const gate = gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], { fixup: { maxRounds: 0 } });
    const commits: FixtureBranch['commits'] = [
      { message: 'one: change shared', files: { 'shared.txt': 'one\n' } },
      { message: 'one: add notes', files: { 'notes.txt': 'notes\n' } },
    ];
    const repo = createFixtureRepo({
      base: { 'shared.txt': 'base\n', 'check.sh': 'test -f shared.txt\n', '.config/tarmac/land-gate.json': gate },
      branches: [{ name: 'feature/one', commits }],
    });
    repo.advanceTarget('target changes shared', { 'shared.txt': 'target\n' });
    return repo;
  }

  it('lands: every original patch present, meters = the scripted usage, the key nowhere but at the endpoint', async () => {
    const repo = conflictRepo();

    const agent = `claude-code#${model}`;
    const created = await stack.api('POST', '/v1/landings', {
      repo: repo.url,
      branches: ['feature/one'],
      target: 'main',
      agents: { resolver: agent, ladder: [agent] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.id as string;

    // The session container, inspected while it exists (the landing's cleanup removes it).
    const containers = watchHarnessContainers(stack.docker, 'claude-code');
    const view = await waitFor(
      () => stack.api('GET', `/v1/landings/${id}`),
      (response) => response.status === 200 && response.body.workflowStatus !== 'RUNNING',
      420_000,
      `landing ${id} to finish`,
    ).finally(() => containers.stop());
    const outcome = view.body.outcome;
    const turns = endpoint.requests.map((request) => [request.path, request.outcome, request.turn, request.message ?? '']);
    assert.equal(outcome.status, 'landed', `${outcome.summary}\nendpoint: ${JSON.stringify(turns)}\nsessions: ${JSON.stringify(outcome.sessions)}`);

    // The real CLI resolved the conflict through the gateway's tools; every original commit's patch is present.
    assert.equal(fileAt(repo.path, 'main', 'shared.txt').trim(), 'target\none', 'both sides kept by the resolver');
    assert.equal(fileAt(repo.path, 'main', 'notes.txt').trim(), 'notes');
    assert.equal(branchHead(repo.path, 'main'), outcome.mergedSha);
    const how = outcome.provenance.map((entry: { subject: string; how: string; rebased: string | null }) => [entry.subject, entry.how, Boolean(entry.rebased)]);
    assert.deepEqual(how, [
      ['one: change shared', 'resolved', true],
      ['one: add notes', 'identical', true],
    ]);
    assert.deepEqual(
      outcome.sessions.map((s: { role: string; harnessModel: string; status: string; attempts: number }) => [s.role, s.harnessModel, s.status, s.attempts]),
      [['resolver', agent, 'delivered', 1]],
    );

    // The endpoint saw exactly the scripted turns, each with the worker's key (added by the gateway).
    assert.deepEqual(
      endpoint.requests.map((request) => [request.method, request.path, request.outcome, request.turn]),
      usage.map((_, turn) => ['POST', '/v1/messages', 'turn', turn]),
      JSON.stringify(turns),
    );
    // The CLI was offered the gateway's tools and none of its own.
    const offered = ((endpoint.requests[0]!.body as { tools?: { name: string }[] }).tools ?? []).map((tool) => tool.name).sort();
    assert.deepEqual(offered, [
      'mcp__tarmac__edit_file',
      'mcp__tarmac__list_files',
      'mcp__tarmac__read_file',
      'mcp__tarmac__run_command',
      'mcp__tarmac__search',
      'mcp__tarmac__write_file',
    ]);
    // The tool gateway saw (and recorded) every call.
    const sessionDir = join(stack.dataDir, 'runs', outcome.runId, 'sessions', outcome.sessions[0].sessionId);
    const telemetry = readFileSync(join(sessionDir, 'gateway', 'telemetry.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    assert.deepEqual(
      telemetry.map((entry: { tool: string; path?: string; exitCode?: number }) => [entry.tool, entry.path ?? entry.exitCode]),
      [
        ['read_file', 'shared.txt'],
        ['write_file', 'shared.txt'],
        ['run_command', 0],
      ],
    );
    for (const request of endpoint.requests) assert.equal(request.headers['x-api-key'], secret, 'the gateway put the worker key in place of the placeholder');

    // Meters: exactly the scripted usage, metered by the gateway (claude-sonnet-4-5: $3 in, $15 out per million).
    const input = usage.reduce((sum, turn) => sum + turn.inputTokens, 0);
    const output = usage.reduce((sum, turn) => sum + turn.outputTokens, 0);
    assert.deepEqual([outcome.meters.inputTokens, outcome.meters.outputTokens], [input, output], JSON.stringify(outcome.meters));
    assert.ok(Math.abs(outcome.meters.costUsd - (input * 3 + output * 15) / 1e6) < 1e-9, `cost ${outcome.meters.costUsd}`);
    const sessionId = outcome.sessions[0].sessionId as string;
    const session = await stack.client.workflow.getHandle(`${outcome.runId}.${sessionId}`).result();
    assert.deepEqual(session.attempts[0].modelUsage, {
      inputTokens: input,
      outputTokens: output,
      costUsd: (input * 3 + output * 15) / 1e6,
      requests: usage.length,
      budgetRefusals: 0,
    });
    assert.deepEqual([session.meters.inputTokens, session.meters.outputTokens], [input, output]);

    // The key: never in the container (docker inspect), the outcome, the histories, or the run's files.
    assert.ok(containers.inspected.size >= 1, 'the session container was seen');
    for (const [containerId, text] of containers.inspected) {
      assert.ok(!text.includes(secret), `not in docker inspect of ${containerId}`);
      const details = JSON.parse(text) as { Config: { Env: string[] }; HostConfig: { NetworkMode: string } };
      assert.equal(details.HostConfig.NetworkMode, 'none');
      assert.ok(details.Config.Env.includes('ANTHROPIC_API_KEY=tarmac-model-gateway'), 'the container has the placeholder only');
    }
    await assertKeyNowhere(stack, secret, { id, view: view.body, workflowIds: [id, `${outcome.runId}.${sessionId}`] });
  });

  it('a budget crossed mid-session: the gateway refuses the next model request, the session and the landing end budget-exhausted, nothing merged', async () => {
    const repo = conflictRepo();
    const before = endpoint.requests.length;
    const mainBefore = branchHead(repo.path, 'main');
    const agent = `claude-code#${model}`;
    // The first turn alone (1590 tokens) spends more than the budget: the second request is refused.
    const created = await stack.api('POST', '/v1/landings', {
      repo: repo.url,
      branches: ['feature/one'],
      target: 'main',
      agents: { resolver: agent, ladder: [agent] },
      budget: { tokens: 1000, onExhausted: 'stop' },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const view = await waitFor(
      () => stack.api('GET', `/v1/landings/${created.body.id}`),
      (response) => response.status === 200 && response.body.workflowStatus !== 'RUNNING',
      300_000,
      'the landing',
    );
    const outcome = view.body.outcome;
    assert.equal(outcome.status, 'budget-exhausted', outcome.summary);
    assert.equal(branchHead(repo.path, 'main'), mainBefore, 'nothing merged');
    assert.equal(outcome.sessions.length, 1, 'no second resolver was started on a spent budget');
    assert.equal(outcome.sessions[0].status, 'budget-exhausted');
    const seen = endpoint.requests.slice(before).filter((request) => request.outcome !== 'side');
    assert.equal(seen.length, 1, 'only the first turn reached the model; the refused ones never left the gateway');
    assert.equal(outcome.meters.inputTokens, 1500);
    assert.equal(outcome.meters.outputTokens, 90);
  });

  it('red gate → fix loop → the real CLI edits through the gateway (a third failing run refused) → a follow-up in the same conversation → green → landed', async () => {
    const check = 'grep -qx value=2 value.txt || { echo "value.txt says $(cat value.txt), want value=2"; exit 1; }\n';
    const gate = gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], { fixup: { maxRounds: 1 } });
    const repo = createFixtureRepo({
      base: { 'check.sh': check, 'value.txt': 'value=2\n', '.config/tarmac/land-gate.json': gate },
      branches: [{ name: 'feature/value', commits: [{ message: 'value: 0, and a feature', files: { 'value.txt': 'value=0\n', 'feature.txt': 'feature\n' } }] }],
    });
    const before = endpoint.requests.length;
    const agent = `claude-code#${model}`;
    const created = await stack.api('POST', '/v1/landings', {
      repo: repo.url,
      branches: ['feature/value'],
      target: 'main',
      agents: { fixer: agent, ladder: [agent] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const view = await waitFor(
      () => stack.api('GET', `/v1/landings/${created.body.id}`),
      (response) => response.status === 200 && response.body.workflowStatus !== 'RUNNING',
      420_000,
      'the landing',
    );
    const outcome = view.body.outcome;
    const seen = endpoint.requests.slice(before);
    assert.equal(outcome.status, 'landed', `${outcome.summary}\n${JSON.stringify(seen.map((r) => [r.outcome, r.turn, r.message ?? '']))}`);
    assert.equal(fileAt(repo.path, 'main', 'value.txt').trim(), 'value=2');
    assert.equal(fileAt(repo.path, 'main', 'feature.txt').trim(), 'feature');

    // Two fixer sessions; the second continued the first's conversation: the endpoint saw every turn in order.
    assert.deepEqual(
      seen.filter((r) => r.outcome !== 'side').map((r) => r.turn),
      fixerUsage.map((_, turn) => turn),
    );
    const followUp = JSON.stringify((seen.find((r) => r.turn === 7)!.body as { messages: unknown[] }).messages);
    assert.match(followUp, /Set value to 1\./, 'the follow-up request carries the earlier turns');
    assert.match(followUp, /Your change did not fix it/, 'and the follow-up message');
    const loop = await stack.client.workflow.getHandle(`${created.body.id}.fixup-1`).result();
    assert.deepEqual([loop.outcome, loop.repairAttempts, loop.circuitBreakerTriggered], ['fixed', 1, true]);
    assert.equal(loop.sessions.length, 2);
    const second = await stack.client.workflow.getHandle(`${outcome.runId}.${loop.sessions[1].sessionId}`).result();
    assert.deepEqual(second.attempts[0].continued, { sessionId: loop.sessions[0].sessionId, attempt: 1, harnessModel: agent });

    // The gateway's telemetry: every tool call of the first session, the third run refused by the breaker.
    const telemetry = readFileSync(join(stack.dataDir, 'runs', outcome.runId, 'sessions', loop.sessions[0].sessionId, 'gateway', 'telemetry.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { tool: string; exitCode?: number; refused?: string });
    assert.deepEqual(
      telemetry.map((entry) => [entry.tool, entry.refused ? 'refused' : (entry.exitCode ?? 'ok')]),
      [
        ['run_command', 1],
        ['run_command', 1],
        ['run_command', 'refused'],
        ['read_file', 'ok'],
        ['edit_file', 'ok'],
        ['run_command', 0],
      ],
    );
    assert.match(telemetry[2]!.refused!, /circuit breaker/);

    // Meters: exactly the scripted usage of the eleven turns.
    const input = fixerUsage.reduce((sum, turn) => sum + turn.inputTokens, 0);
    const output = fixerUsage.reduce((sum, turn) => sum + turn.outputTokens, 0);
    assert.deepEqual([outcome.meters.inputTokens, outcome.meters.outputTokens], [input, output], JSON.stringify(outcome.meters));
  });

  it('review findings after a fixup round reach the same agent as a follow-up in its conversation', async () => {
    const check = 'grep -qx value=2 value.txt || { echo "value.txt says $(cat value.txt), want value two"; exit 1; }\n';
    const gate = gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], { fixup: { maxRounds: 2 }, review: { panel: 'script-trio', quorum: 3 } });
    const repo = createFixtureRepo({
      base: { 'check.sh': check, 'value.txt': 'value=2\n', '.config/tarmac/land-gate.json': gate },
      branches: [
        { name: 'feature/app', commits: [{ message: 'app, value 0', files: { 'value.txt': 'value=0\n', 'app.js': 'debugger;\nconsole.log(1);\n' } }] },
      ],
    });
    const before = endpoint.requests.length;
    const agent = `claude-code#${model}`;
    const created = await stack.api('POST', '/v1/landings', {
      repo: repo.url,
      branches: ['feature/app'],
      target: 'main',
      agents: { fixer: agent, ladder: [agent] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const view = await waitFor(
      () => stack.api('GET', `/v1/landings/${created.body.id}`),
      (response) => response.status === 200 && response.body.workflowStatus !== 'RUNNING',
      420_000,
      'the landing',
    );
    const outcome = view.body.outcome;
    const seen = endpoint.requests.slice(before).filter((r) => r.outcome !== 'side');
    assert.equal(outcome.status, 'landed', `${outcome.summary}\n${JSON.stringify(seen.map((r) => [r.conversation, r.turn, r.message ?? '']))}`);
    assert.equal(fileAt(repo.path, 'main', 'app.js').trim(), 'console.log(1);');
    assert.equal(fileAt(repo.path, 'main', 'value.txt').trim(), 'value=2');
    // One conversation, eight turns: the review's follow-up saw the fix loop's turns.
    assert.deepEqual(
      seen.map((r) => r.turn),
      [0, 1, 2, 3, 4, 5, 6, 7],
    );
    const followUp = JSON.stringify((seen[4]!.body as { messages: unknown[] }).messages);
    assert.match(followUp, /Set value to 2\./);
    assert.match(followUp, /The review panel requested changes/);
    const fixer = outcome.sessions.find((s: { sessionId: string }) => s.sessionId === 'fixer-2');
    assert.ok(fixer, JSON.stringify(outcome.sessions));
    const session = await stack.client.workflow.getHandle(`${outcome.runId}.fixer-2`).result();
    assert.equal(session.attempts[0].continued.sessionId, outcome.sessions[0].sessionId, 'it continued the fix loop agent');
  });
  it("a model off the operator's list: the gateway refuses it, nothing is charged, the session ends naming it", async () => {
    // The harness offers a model the operator never priced (recipes/pricing.json is the gateway's list).
    const recipes = loadRecipes();
    const claude = recipes.harnesses['claude-code']!;
    recipes.harnesses['claude-code'] = { ...claude, models: [...claude.models, 'claude-unlisted-9'] };
    const repo = createFixtureRepo({ base: { 'app.js': 'console.log(1);\n' }, branches: [] });
    const runId = `unlisted-model.${Date.now()}`;
    const spec = 'claude-code#claude-unlisted-9';
    const request: SessionRequest = {
      runId,
      sessionId: 'reviewer-1',
      role: 'reviewer',
      harnessModel: spec,
      ladder: [spec],
      task: { prompt: 'review', files: ['app.js'] },
      workspace: { kind: 'fresh', repo: repo.url, ref: 'main' },
      recipes,
    };
    const turnsBefore = endpoint.requests.filter((entry) => entry.outcome === 'turn').length;
    const outcome = (await stack.client.workflow.execute('agentSession', {
      workflowId: runId,
      taskQueue: stack.config.taskQueue,
      args: [request],
    })) as SessionOutcome;
    assert.equal(outcome.status, 'failed', outcome.summary);
    assert.match(
      outcome.summary,
      /^gave up after 1 attempt\(s\): the model gateway refused the model claude-code#claude-unlisted-9 asked for: model "claude-unlisted-9" is not on the operator's list of anthropic models/,
    );
    assert.deepEqual(
      outcome.attempts.map((attempt) => attempt.class),
      ['model-refused'],
      'one container, no respawn, no other rung',
    );
    assert.deepEqual([outcome.meters.costUsd, outcome.meters.inputTokens, outcome.meters.outputTokens], [0, 0, 0], 'nothing charged');
    assert.equal(endpoint.requests.filter((entry) => entry.outcome === 'turn').length, turnsBefore, 'no turn reached the model');
  });
});
