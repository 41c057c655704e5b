/**
 * Honest defaults (issue 26), as a new user meets them: only ANTHROPIC_API_KEY set, the public
 * upstreams, the shipped recipes. The shipped default panel names reviewers this worker cannot run
 * (Codex and opencode need OPENAI_API_KEY), so a landing whose gate file names it is refused in its
 * first phase, naming each and the key — never a review-incomplete after the gate. The key is a
 * placeholder: nothing here reaches a model.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { startStack, waitFor, type Stack } from '../helpers/stack';

describe('honest defaults: only ANTHROPIC_API_KEY set', { timeout: 300_000 }, () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({
      workerEnv: {
        ANTHROPIC_API_KEY: 'sk-ant-placeholder-never-sent',
        OPENAI_API_KEY: '',
        TARMAC_MODEL_UPSTREAM_ANTHROPIC: '',
        TARMAC_MODEL_UPSTREAM_OPENAI: '',
      },
    });
  });
  after(async () => await stack?.stop());

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
    const view = await waitFor(
      () => stack.api('GET', `/v1/landings/${created.body.id}`),
      (response) => response.status === 200 && response.body.workflowStatus !== 'RUNNING',
      120_000,
      'the landing',
    );
    const outcome = view.body.outcome;
    assert.equal(outcome.status, 'agent-unavailable', outcome.summary);
    assert.match(
      outcome.summary,
      /^the default panel cannot run here: codex#gpt-5-codex needs OPENAI_API_KEY, opencode#openai\/gpt-5 needs (image \S+ and )?OPENAI_API_KEY; set what is missing, or mark the panel "unavailable": "skip" in recipes\/panels\.json; nothing was started$/,
    );
    assert.equal(outcome.endedInPhase, 'validate');
    assert.deepEqual(
      view.body.steps.map((step: { name: string }) => step.name),
      ['capsule.inspectTarget', 'capsule.finishRun'],
      'the target read, then the finale: no workspace, gate or agent step',
    );

    // A standalone review of the default panel is refused at the door, the same words.
    const review = await stack.api('POST', '/v1/reviews', { repo: repo.url, base: 'main', head: 'feature/two', panel: 'default' });
    assert.equal(review.status, 400, JSON.stringify(review.body));
    assert.match(review.body.error.message, /^the default panel cannot run here: codex#gpt-5-codex needs OPENAI_API_KEY/);
  });
});
