/**
 * Aider, end to end (issue 26): a conflicting landing resolved by the real aider in its real image
 * (tarmac/agent-aider, built offline by scripts/build-images.sh from the pinned wheels), in a
 * network-none session container that reaches a model only through the worker's model gateway,
 * whose upstream is the scripted endpoint (TARMAC_MODEL_UPSTREAM_ANTHROPIC). Aider has no MCP
 * client: the scripted model answers in aider's edit format (a SEARCH/REPLACE block), aider edits
 * the conflicted file, the image's launcher stages it and continues the rebase; the session's
 * telemetry is its diff. The branch carries a hostile .aider.conf.yml and .env, which aider must
 * not read. The worker holds a fake key: the endpoint sees it, nothing else does.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadRecipes } from '../../core/node/recipes';
import { branchHead, createFixtureRepo, gateFile, type FixtureBranch } from '../../infra/fixture-repo';
import type { Script, ScriptUsage } from '../../infra/scripted-model/script';
import { startScriptedModel, type ScriptedModel } from '../../infra/scripted-model/server';
import { startStack, waitFor, type Stack } from '../helpers/stack';
import { skipUnlessBuilt } from '../helpers/agent-cli';
import { fileAt } from '../helpers/git';

const image = loadRecipes().harnesses.aider!.image;
const model = 'claude-sonnet-4-5';
const agent = `aider#${model}`;
const secret = 'sk-test-secret-aider-7c2d';
/** Text only a branch-configured aider would send: the hostile files name it as read-only context. */
const hostile = 'HOSTILE-CONTEXT-7f3a';

const skip = skipUnlessBuilt([image]);

/** Every file under `dir` (text), for searching a value in what a run wrote. */
function everythingUnder(dir: string): string {
  let text = '';
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const stat = statSync(path, { throwIfNoEntry: false });
    if (!stat) continue;
    if (stat.isDirectory()) text += everythingUnder(path);
    else if (stat.isFile() && stat.size < 50 * 1024 * 1024) text += readFileSync(path, 'latin1');
  }
  return text;
}

/**
 * Aider's opening request already holds model turns of its own making: the worked example of its
 * whole-file format and "Ok." to "I switched to a new code base" (claude-sonnet-4-5 takes examples as
 * messages, not in the system prompt), and "Ok." to the files it added to the chat. The scripted
 * endpoint counts those, so the script's answer is its turn 3; turns 0–2 are never asked.
 */
const preamble = 3;
const usage: ScriptUsage = { inputTokens: 2100, outputTokens: 95 };
/** A resolver answers in aider's whole-file format (a conflict's ======= line is the divider of its SEARCH/REPLACE blocks). */
const resolution = ['Both sides keep their line.', '', 'shared.txt', '```', 'target', 'one', '```', '', 'Resolved shared.txt: kept both sides.'].join('\n');

describe('real agents: aider resolves a conflict through the model gateway', { skip, timeout: 600_000 }, () => {
  let stack: Stack;
  let endpoint: ScriptedModel;
  const script: Script = {
    version: 1,
    conversations: [
      {
        name: 'aider-resolver',
        turns: [...Array.from({ length: preamble }, () => ({ text: 'never asked', usage: { inputTokens: 0, outputTokens: 0 } })), { text: resolution, usage }],
      },
    ],
    // Aider declares no tools: its requests are the conversation, not side calls.
    sideCalls: { detect: 'never' },
  };

  before(async () => {
    endpoint = await startScriptedModel({ script, port: 0 });
    stack = await startStack({ workerEnv: { TARMAC_MODEL_UPSTREAM_ANTHROPIC: endpoint.url!, ANTHROPIC_API_KEY: secret } });
  });
  after(async () => {
    await stack?.stop();
    await endpoint?.close();
  });

  it('lands: every original patch present, meters = the scripted usage, the diff in the telemetry, the key nowhere but at the endpoint', async () => {
    const gate = gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], { fixup: { maxRounds: 0 } });
    const commits: FixtureBranch['commits'] = [
      { message: 'one: change shared', files: { 'shared.txt': 'one\n' } },
      { message: 'one: add notes', files: { 'notes.txt': 'notes\n' } },
    ];
    const repo = createFixtureRepo({
      base: {
        'shared.txt': 'base\n',
        'check.sh': 'test -f shared.txt\n',
        '.config/tarmac/land-gate.json': gate,
        // Were aider to read the branch's configuration, it would add context.txt to the chat.
        '.aider.conf.yml': 'read: [context.txt]\nmodel: gpt-4o\n',
        '.env': 'AIDER_READ=context.txt\nOPENAI_API_BASE=http://127.0.0.1:9/v1\n',
        'context.txt': `${hostile}\n`,
      },
      branches: [{ name: 'feature/one', commits }],
    });
    repo.advanceTarget('target changes shared', { 'shared.txt': 'target\n' });

    const created = await stack.api('POST', '/v1/landings', {
      repo: repo.url,
      branches: ['feature/one'],
      target: 'main',
      agents: { resolver: agent, ladder: [agent] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.id as string;

    // The session container, inspected while it exists (the landing's cleanup removes it).
    const inspected = new Map<string, string>();
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const found = await stack.docker.listContainers({ all: true, filters: JSON.stringify({ label: ['tarmac.harness=aider'] }) }).catch(() => []);
        for (const info of found) {
          if (inspected.has(info.Id)) continue;
          const details = await stack.docker
            .getContainer(info.Id)
            .inspect()
            .catch(() => undefined);
          if (details) inspected.set(info.Id, JSON.stringify(details));
        }
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
    })();
    const view = await waitFor(
      () => stack.api('GET', `/v1/landings/${id}`),
      (response) => response.status === 200 && response.body.workflowStatus !== 'RUNNING',
      420_000,
      `landing ${id} to finish`,
    ).finally(() => (watching = false));
    await watcher;
    const outcome = view.body.outcome;
    const turns = endpoint.requests.map((request) => [request.path, request.outcome, request.turn, request.message ?? '']);
    assert.equal(outcome.status, 'landed', `${outcome.summary}\nendpoint: ${JSON.stringify(turns)}\nsessions: ${JSON.stringify(outcome.sessions)}`);

    // Aider resolved the conflict; every original commit's patch is present.
    assert.equal(fileAt(repo.path, 'main', 'shared.txt'), 'target\none\n', 'both sides kept by the resolver');
    assert.equal(fileAt(repo.path, 'main', 'notes.txt').trim(), 'notes');
    assert.equal(branchHead(repo.path, 'main'), outcome.mergedSha);
    assert.deepEqual(
      outcome.provenance.map((entry: { subject: string; how: string; rebased: string | null }) => [entry.subject, entry.how, Boolean(entry.rebased)]),
      [
        ['one: change shared', 'resolved', true],
        ['one: add notes', 'identical', true],
      ],
    );
    assert.deepEqual(
      outcome.sessions.map((s: { role: string; harnessModel: string; status: string; attempts: number }) => [s.role, s.harnessModel, s.status, s.attempts]),
      [['resolver', agent, 'delivered', 1]],
    );

    // One model request, the scripted answer, with the worker's key (added by the gateway); aider's
    // request carried the conflicted file and none of what the branch's configuration would add.
    assert.deepEqual(
      endpoint.requests.map((request) => [request.method, request.path, request.outcome, request.turn, request.model]),
      [['POST', '/v1/messages', 'turn', preamble, model]],
      JSON.stringify(turns),
    );
    assert.equal(endpoint.requests[0]!.headers['x-api-key'], secret, 'the gateway put the worker key in place of the placeholder');
    const sent = JSON.stringify(endpoint.requests[0]!.body);
    assert.ok(sent.includes('<<<<<<< HEAD'), 'the conflicted shared.txt was in the chat');
    assert.ok(!sent.includes(hostile), "the branch's .aider.conf.yml and .env were not read");

    // Meters: exactly the scripted usage, metered by the gateway (claude-sonnet-4-5: $3 in, $15 out per million).
    const cost = (usage.inputTokens * 3 + usage.outputTokens * 15) / 1e6;
    assert.deepEqual([outcome.meters.inputTokens, outcome.meters.outputTokens], [usage.inputTokens, usage.outputTokens], JSON.stringify(outcome.meters));
    assert.ok(Math.abs(outcome.meters.costUsd - cost) < 1e-9, `cost ${outcome.meters.costUsd}`);
    const sessionId = outcome.sessions[0].sessionId as string;
    const session = await stack.client.workflow.getHandle(`${outcome.runId}.${sessionId}`).result();
    assert.deepEqual(session.attempts[0].modelUsage, {
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      costUsd: cost,
      requests: 1,
      budgetRefusals: 0,
    });
    assert.equal(session.result.summary.trim().split('\n').at(-1), 'Resolved shared.txt: kept both sides.');

    // The telemetry: no tool gateway call (aider has no MCP client), the resulting diff instead.
    const sessionDir = join(stack.dataDir, 'runs', outcome.runId, 'sessions', sessionId);
    const telemetry = readFileSync(join(sessionDir, 'gateway', 'telemetry.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { tool: string; harness: string; path: string; added: number; removed: number });
    assert.deepEqual(
      telemetry.map((entry) => [entry.tool, entry.harness, entry.path, entry.added, entry.removed]),
      [
        ['diff', 'aider', 'notes.txt', 1, 0],
        ['diff', 'aider', 'shared.txt', 1, 0],
      ],
    );
    // Aider looked nothing up and reached nothing but the forwarder.
    const log = readFileSync(join(stack.dataDir, 'runs', outcome.runId, 'logs', `session-${sessionId}-a1.log`), 'utf8');
    assert.ok(!log.includes('tarmac-aider: refused'), log);
    assert.match(log, /git rebase --continue exited 0/);

    // The key: never in the container (docker inspect), the outcome, the histories, or the run's files.
    assert.ok(inspected.size >= 1, 'the session container was seen');
    for (const [containerId, text] of inspected) {
      assert.ok(!text.includes(secret), `not in docker inspect of ${containerId}`);
      const details = JSON.parse(text) as { Config: { Env: string[] }; HostConfig: { NetworkMode: string } };
      assert.equal(details.HostConfig.NetworkMode, 'none');
      assert.ok(details.Config.Env.includes('ANTHROPIC_API_KEY=tarmac-model-gateway'), 'the container has the placeholder only');
    }
    assert.ok(!JSON.stringify(view.body).includes(secret), 'not in the landing view or outcome');
    for (const workflowId of [id, `${outcome.runId}.${sessionId}`]) {
      const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
      assert.ok(!JSON.stringify(history).includes(secret), `not in the history of ${workflowId}`);
    }
    assert.ok(!everythingUnder(join(stack.dataDir, 'runs')).includes(secret), 'not in the run dirs (transcript, usage, logs)');
    assert.ok(!readFileSync(stack.workerLog, 'utf8').includes(secret), "not in the worker's log");
  });
});
