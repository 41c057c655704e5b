/**
 * Honest defaults (issue 26), as a new user meets them: only ANTHROPIC_API_KEY set, the shipped
 * recipes. The shipped default panel names reviewers this worker cannot run (Codex and opencode
 * need OPENAI_API_KEY), so a landing whose gate file names it is refused in its first phase, naming
 * each and the key — never a review-incomplete after the gate. The shipped default ladder runs: its
 * OpenAI rung is passed over with one step naming the next, and Claude Code resolves. Anthropic is
 * the scripted endpoint (no network here), reached with the placeholder key the gateway adds.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { branchHead, createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import type { Script } from '../../infra/scripted-model/script';
import { startScriptedModel, type ScriptedModel } from '../../infra/scripted-model/server';
import { landingFinished, startStack, waitFor, type Stack } from '../helpers/stack';
import { fileAt } from '../helpers/git';

// The resolver's turns: it reads the conflict, writes both sides and continues the rebase, through the tool gateway.
const script: Script = {
  version: 1,
  conversations: [
    {
      name: 'resolver',
      match: 'shared.txt',
      turns: [
        { toolCalls: [{ name: 'mcp__tarmac__read_file', input: { path: 'shared.txt' } }] },
        { toolCalls: [{ name: 'mcp__tarmac__write_file', input: { path: '/workspace/shared.txt', content: 'target\none\n' } }] },
        { toolCalls: [{ name: 'mcp__tarmac__run_command', input: { command: 'git add shared.txt && GIT_EDITOR=true git rebase --continue' } }] },
        { text: 'Resolved shared.txt and continued the rebase.' },
      ].map((turn) => ({ ...turn, usage: { inputTokens: 1000, outputTokens: 20 } })),
    },
  ],
};

describe('honest defaults: only ANTHROPIC_API_KEY set', { timeout: 300_000 }, () => {
  let stack: Stack;
  let endpoint: ScriptedModel;
  before(async () => {
    endpoint = await startScriptedModel({ script, port: 0 });
    stack = await startStack({
      workerEnv: {
        ANTHROPIC_API_KEY: 'sk-ant-placeholder',
        OPENAI_API_KEY: '',
        TARMAC_MODEL_UPSTREAM_ANTHROPIC: endpoint.url!,
        TARMAC_MODEL_UPSTREAM_OPENAI: '',
      },
    });
  });
  after(async () => {
    await stack?.stop();
    await endpoint?.close();
  });

  it('a landing with the shipped default panel is refused before anything starts, naming the OpenAI reviewers and OPENAI_API_KEY; the notice says it first', async () => {
    // What the worker reported: Claude Code runs, the default panel does not, and why.
    const agents = await waitFor(
      () => stack.api('GET', '/v1/agents'),
      (response) => response.status === 200 && response.body.workers.some((worker: { fresh: boolean }) => worker.fresh),
      60_000,
      'the worker to report its agents',
    );
    const worker = agents.body.workers.find((entry: { fresh: boolean }) => entry.fresh);
    const runnable = (name: string) => worker.agents.find((entry: { harnessModel: string }) => entry.harnessModel === name).runnable;
    assert.deepEqual([runnable('claude-code#claude-sonnet-4-5'), runnable('codex#gpt-5-codex')], [true, false]);
    assert.match(
      worker.notice,
      /^the default panel cannot run here: codex#gpt-5-codex needs OPENAI_API_KEY, opencode#openai\/gpt-5 needs (image \S+ and )?OPENAI_API_KEY; /,
    );
    assert.ok(!/ANTHROPIC_API_KEY/.test(worker.notice), 'the key that is set is not asked for');
    assert.ok(!/default ladder/.test(worker.notice), 'the default ladder can run (its Claude Code rungs)');

    const repo = createFixtureRepo({
      base: {
        'src/app.js': 'console.log(1);\n',
        'check.sh': 'true\n',
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], { review: { panel: 'default', quorum: 2 } }),
      },
      branches: [{ name: 'feature/two', commits: [{ message: 'two', files: { 'src/app.js': 'console.log(2);\n' } }] }],
    });
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/two'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const view = await landingFinished(stack, created.body.id);
    const outcome = view.outcome;
    assert.equal(outcome.status, 'agent-unavailable', outcome.summary);
    assert.match(
      outcome.summary,
      /^the default panel cannot run here: codex#gpt-5-codex needs OPENAI_API_KEY, opencode#openai\/gpt-5 needs (image \S+ and )?OPENAI_API_KEY; set what is missing, or mark the panel "unavailable": "skip" in recipes\/panels\.json; nothing was started$/,
    );
    assert.equal(outcome.endedInPhase, 'validate');
    assert.deepEqual(
      view.steps.map((step: { name: string }) => step.name),
      ['capsule.inspectTarget', 'capsule.finishRun'],
      'the target read, then the finale: no workspace, gate or agent step',
    );

    // A standalone review of the default panel is refused at the door, the same words.
    const review = await stack.api('POST', '/v1/reviews', { repo: repo.url, base: 'main', head: 'feature/two', panel: 'default' });
    assert.equal(review.status, 400, JSON.stringify(review.body));
    assert.match(review.body.error.message, /^the default panel cannot run here: codex#gpt-5-codex needs OPENAI_API_KEY/);
  });
  it('the shipped default ladder runs: its OpenAI rung is passed over with one step naming the next, Claude Code resolves, landed', async () => {
    const repo = createFixtureRepo({
      base: {
        'shared.txt': 'base\n',
        'check.sh': 'test -f shared.txt\n',
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }]),
      },
      branches: [{ name: 'feature/one', commits: [{ message: 'one: change shared', files: { 'shared.txt': 'one\n' } }] }],
    });
    repo.advanceTarget('target changes shared', { 'shared.txt': 'target\n' });
    // No agents named: the resolver takes the recipe's ladder, first rung first.
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/one'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const view = await landingFinished(stack, created.body.id);
    const outcome = view.outcome;
    assert.equal(outcome.status, 'landed', `${outcome.summary}\n${JSON.stringify(view.steps)}`);
    assert.equal(fileAt(repo.path, 'main', 'shared.txt'), 'target\none\n');
    assert.equal(branchHead(repo.path, 'main'), outcome.mergedSha);
    const names = view.steps.map((step: { name: string }) => step.name);
    const skipped = view.steps.find((step: { name: string }) => step.name === 'session.resolver:resolver-1 skipped opencode#openai/gpt-5-mini');
    assert.ok(skipped, names.join('\n'));
    assert.equal(skipped.status, 'agent-unavailable');
    assert.match(skipped.detail, /key OPENAI_API_KEY is not set; no container was started; moved to claude-code#claude-haiku-4-5$/);
    assert.equal(names[names.indexOf(skipped.name) + 1], 'session.resolver:resolver-1', 'the skip shows just before its session');
    assert.deepEqual(
      outcome.sessions.map((entry: { harnessModel: string; status: string; attempts: number }) => [entry.harnessModel, entry.status, entry.attempts]),
      [['claude-code#claude-haiku-4-5', 'delivered', 2]],
    );
    assert.equal(outcome.meters.agentSessions, 1, 'one container: the skipped rung started none');
  });
});
