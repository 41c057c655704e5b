/**
 * Availability is known before work starts (issue 12): a fresh install with no provider key
 * and the default upstreams. A request naming an agent no worker can run is refused at the
 * door with what is missing; a request relying on the defaults starts, and its agent step ends
 * at once `agent-unavailable` naming the missing key — one try, no container, never "thrashing".
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadRecipes as loadRepositoryRecipes } from '../../core/node/recipes';
import type { SessionOutcome, SessionRequest } from '../../core/session-types';
import { createFixtureRepo, gateFile, type FixtureBranch } from '../../infra/fixture-repo';
import { landingFinished, startStack, waitFor, type Stack } from '../helpers/stack';
import { tarmac } from '../helpers/tarmac-cli';

/**
 * The repository's recipes with opencode's image renamed to one no setup builds: setup builds every
 * harness image, and this test needs one that is missing.
 */
const recipesDir = mkdtempSync(join(tmpdir(), 'tarmac-test-recipes-'));
cpSync(join(__dirname, '../../recipes'), recipesDir, { recursive: true });
const harnessesFile = join(recipesDir, 'harnesses.json');
const harnessesRecipe = JSON.parse(readFileSync(harnessesFile, 'utf8')) as { harnesses: Record<string, { image: string }> };
harnessesRecipe.harnesses.opencode!.image = 'tarmac/agent-opencode:never-built';
writeFileSync(harnessesFile, JSON.stringify(harnessesRecipe, null, 2));
const loadRecipes = () => loadRepositoryRecipes(recipesDir);

describe('agent availability: no key at all, default upstreams', { timeout: 600_000 }, () => {
  let stack: Stack;
  const since = Math.floor(Date.now() / 1000);
  before(async () => {
    // Whatever the machine has, this worker has no provider key and talks to the public endpoints.
    stack = await startStack({
      recipesDir,
      workerEnv: { ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '', TARMAC_MODEL_UPSTREAM_ANTHROPIC: '', TARMAC_MODEL_UPSTREAM_OPENAI: '' },
    });
  });
  after(async () => await stack?.stop());

  /** Containers created for a run (Docker's event log: removed ones count too). */
  function containersCreatedFor(runId: string): string[] {
    const until = Math.floor(Date.now() / 1000) + 1;
    const out = execFileSync(
      'docker',
      [
        'events',
        '--since',
        String(since),
        '--until',
        String(until),
        '--filter',
        'type=container',
        '--filter',
        'event=create',
        '--filter',
        `label=tarmac.run=${runId}`,
        '--format',
        '{{index .Actor.Attributes "tarmac.role"}}',
      ],
      { encoding: 'utf8' },
    );
    return out.split('\n').filter(Boolean);
  }

  function conflictRepo() {
    const commits: FixtureBranch['commits'] = [{ message: 'one: change shared', files: { 'shared.txt': 'one\n' } }];
    const repo = createFixtureRepo({
      base: { 'shared.txt': 'base\n', 'check.sh': 'true\n', '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }]) },
      branches: [{ name: 'feature/one', commits }],
    });
    repo.advanceTarget('target changes shared', { 'shared.txt': 'target\n' });
    return repo;
  }

  it('a request naming an agent with no key or no image → 400 TARMAC_AGENT_UNAVAILABLE naming it; nothing started', async () => {
    const repo = conflictRepo();
    const claude = loadRecipes().harnesses['claude-code']!;
    const opencode = loadRecipes().harnesses.opencode!;
    const before = await stack.api('GET', '/v1/landings');
    const noKey = await stack.api('POST', '/v1/landings', {
      repo: repo.url,
      branches: ['feature/one'],
      target: 'main',
      agents: { resolver: `claude-code#${claude.models[0]}` },
    });
    assert.equal(noKey.status, 400, JSON.stringify(noKey.body));
    assert.equal(noKey.body.error.code, 'TARMAC_AGENT_UNAVAILABLE');
    assert.match(noKey.body.error.message, /^agents\.resolver claude-code#\S+ cannot run on any worker \(.+\): key ANTHROPIC_API_KEY is not set/);
    assert.equal(noKey.body.error.details.field, 'agents.resolver');

    const noImage = await stack.api('POST', '/v1/landings', {
      repo: repo.url,
      branches: ['feature/one'],
      target: 'main',
      agents: { ladder: ['script#resolver', `opencode#${opencode.models[0]}`] },
    });
    assert.equal(noImage.status, 400, JSON.stringify(noImage.body));
    assert.equal(noImage.body.error.code, 'TARMAC_AGENT_UNAVAILABLE');
    assert.match(
      noImage.body.error.message,
      new RegExp(
        `^agents\\.ladder\\[1\\] opencode#\\S+ cannot run on any worker \\(.+\\): image ${opencode.image.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is not built`,
      ),
    );

    const fix = await stack.api('POST', '/v1/fix-loops', {
      repo: repo.url,
      branch: 'feature/one',
      request: 'the tests fail',
      reproCommand: 'false',
      agents: { implementer: `claude-code#${claude.models[0]}` },
    });
    assert.equal(fix.status, 400, JSON.stringify(fix.body));
    assert.equal(fix.body.error.details.field, 'agents.implementer');

    const afterList = await stack.api('GET', '/v1/landings');
    assert.equal(afterList.body.landings.length, before.body.landings.length, 'no landing was started');
    // An agent the worker can run is accepted as before.
    const ok = await stack.api('POST', '/v1/landings', {
      repo: repo.url,
      branches: ['feature/one'],
      target: 'main',
      agents: { resolver: 'script#resolver', ladder: ['script#resolver'] },
    });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
  });

  it('defaults and no key: the conflicting landing ends with the resolver step agent-unavailable (the key named) after one try, 0 agent containers', async () => {
    const repo = conflictRepo();
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/one'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const view = await waitFor(
      () => stack.api('GET', `/v1/landings/${created.body.id}`),
      (response) => response.status === 200 && response.body.workflowStatus !== 'RUNNING',
      180_000,
      'the landing',
    );
    const outcome = view.body.outcome;
    assert.equal(outcome.status, 'agent-unavailable', outcome.summary);
    assert.match(outcome.summary, /ANTHROPIC_API_KEY is not set/);
    assert.equal(outcome.failure.type, 'TARMAC_AGENT_UNAVAILABLE');
    const steps = view.body.steps.filter((step: { name: string }) => step.name.startsWith('session.'));
    assert.deepEqual(
      steps.map((step: { name: string; status: string }) => [step.name, step.status]),
      [['session.resolver:resolver-1', 'agent-unavailable']],
    );
    assert.match(steps[0].detail, /key ANTHROPIC_API_KEY is not set/);
    assert.equal(outcome.sessions.length, 1, 'one try, not one per resolver round');
    assert.equal(outcome.meters.agentSessions, 0);
    assert.deepEqual(
      containersCreatedFor(outcome.runId).filter((role) => role !== 'gate' && role !== 'runner'),
      [],
      'no agent container was created',
    );
  });

  it('defaults and no key: a fix loop that needs an agent ends agent-unavailable, never thrashing', async () => {
    const repo = createFixtureRepo({ base: { 'check.sh': 'echo broken; exit 1\n' }, branches: [] });
    const created = await stack.api('POST', '/v1/fix-loops', { repo: repo.url, branch: 'main', request: 'the check fails', reproCommand: 'sh check.sh' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const done = await waitFor(
      () => stack.api('GET', `/v1/runs/${created.body.id}`),
      (response) => response.status === 200 && response.body.workflowStatus !== 'RUNNING',
      180_000,
      'the fix loop',
    );
    const outcome = done.body.result;
    assert.equal(outcome.outcome, 'agent-unavailable', outcome.summary);
    assert.match(outcome.summary, /is not set/);
    assert.equal(outcome.meters.agentSessions, 0);
  });

  it('a ladder whose rungs cannot run here moves on at once, one try each, no container for them; the runnable rung delivers', async () => {
    const repo = createFixtureRepo({ base: { 'src/app.js': 'console.log(1);\n' }, branches: [] });
    const claude = `claude-code#${loadRecipes().harnesses['claude-code']!.models[0]}`;
    const opencode = `opencode#${loadRecipes().harnesses.opencode!.models[0]}`;
    const runId = `availability.${Date.now()}`;
    const request: SessionRequest = {
      runId,
      sessionId: 'reviewer-1',
      role: 'reviewer',
      harnessModel: claude,
      ladder: [claude, opencode, 'script#reviewer'],
      task: { prompt: 'review', files: ['src/app.js'] },
      workspace: { kind: 'fresh', repo: repo.url, ref: 'main' },
    };
    const outcome = (await stack.client.workflow.execute('agentSession', {
      workflowId: runId,
      taskQueue: stack.config.taskQueue,
      args: [request],
    })) as SessionOutcome;
    assert.equal(outcome.status, 'delivered', outcome.summary);
    assert.deepEqual(
      outcome.attempts.map((attempt) => [attempt.harnessModel, attempt.class, attempt.containerId === '']),
      [
        [claude, 'agent-unavailable', true],
        [opencode, 'agent-unavailable', true],
        ['script#reviewer', 'delivered', false],
      ],
    );
    assert.match(outcome.attempts[0]!.unavailable!, /key ANTHROPIC_API_KEY is not set/);
    assert.match(outcome.attempts[1]!.unavailable!, /image \S+ is not built/);
    // One rung at a time: each decision names what the rung lacked and the rung it moved to.
    assert.deepEqual(
      outcome.decisions.map((decision) => [decision.action, decision.harnessModel]),
      [
        ['escalate', opencode],
        ['escalate', 'script#reviewer'],
        ['done', undefined],
      ],
    );
    assert.match(outcome.decisions[0]!.reason, /key ANTHROPIC_API_KEY is not set\): skipped, moved to rung 1 opencode#/);
    assert.match(outcome.decisions[1]!.reason, /is not built.*\): skipped, moved to rung 2 script#reviewer$/);
    assert.equal(outcome.meters.sessionsSpawned, 1, 'only the runnable rung started a container');
    assert.deepEqual(containersCreatedFor(runId), ['reviewer']);
  });

  /** A repository whose change a panel reviews: src/app.js changed on feature/two. */
  function reviewRepo(gate?: Record<string, unknown>) {
    return createFixtureRepo({
      base: {
        'src/app.js': 'console.log(1);\n',
        'check.sh': 'true\n',
        ...(gate ? { '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], gate) } : {}),
      },
      branches: [{ name: 'feature/two', commits: [{ message: 'two', files: { 'src/app.js': 'console.log(2);\n' } }] }],
    });
  }

  // The shipped default panel's reviewers cannot run here: what each needs is said up front.
  const defaultPanelRefusal =
    /^the default panel cannot run here: claude-code#claude-sonnet-4-5 needs ANTHROPIC_API_KEY, codex#gpt-5-codex needs OPENAI_API_KEY, opencode#openai\/gpt-5 needs (image \S+ and )?OPENAI_API_KEY; set what is missing, or mark the panel "unavailable": "skip" in recipes\/panels\.json/;

  it('a gate file naming the shipped default panel, its reviewers unable to run: refused before anything starts, naming each and its key; no container', async () => {
    const repo = reviewRepo({ review: { panel: 'default', quorum: 2 } });
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/two'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const { outcome } = await landingFinished(stack, created.body.id);
    assert.equal(outcome.status, 'agent-unavailable', outcome.summary);
    assert.match(outcome.summary, defaultPanelRefusal);
    assert.match(outcome.summary, /; nothing was started$/);
    assert.deepEqual([outcome.endedInPhase, outcome.failure.type, outcome.failure.field], ['validate', 'TARMAC_AGENT_UNAVAILABLE', 'review.panel']);
    assert.notEqual(outcome.status, 'review-incomplete');
    assert.deepEqual(containersCreatedFor(outcome.runId), [], 'no gate and no agent container');
  });

  it('POST /v1/reviews: the default panel is refused (400, the reviewer and key named); "unavailable": "skip" reviews with the rest and lists whom it skipped', async () => {
    const repo = reviewRepo();
    const refused = await stack.api('POST', '/v1/reviews', { repo: repo.url, base: 'main', head: 'feature/two', panel: 'default' });
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'TARMAC_AGENT_UNAVAILABLE');
    assert.match(refused.body.error.message, defaultPanelRefusal);
    assert.equal(refused.body.error.details.field, 'panel');

    const started = await stack.api('POST', '/v1/reviews', { repo: repo.url, base: 'main', head: 'feature/two', panel: 'script-skip-unavailable' });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    const done = await waitFor(
      () => stack.api('GET', `/v1/runs/${started.body.id}`),
      (response) => response.status === 200 && response.body.workflowStatus !== 'RUNNING',
      180_000,
      'the review',
    );
    const verdict = done.body.result;
    assert.equal(verdict.status, 'approved', verdict.summary);
    assert.equal(verdict.delivered, 2);
    assert.deepEqual(
      verdict.skipped.map((entry: { harnessModel: string }) => entry.harnessModel),
      ['claude-code#claude-sonnet-4-5'],
    );
    assert.match(verdict.skipped[0].reason, /key ANTHROPIC_API_KEY is not set/);
    assert.match(verdict.summary, /skipped \(cannot run here\): claude-code#claude-sonnet-4-5 \(.*key ANTHROPIC_API_KEY is not set/);
    assert.deepEqual(containersCreatedFor(started.body.id).sort(), ['reviewer', 'reviewer'], 'the skipped reviewer started no container');
  });

  it('GET /v1/agents and `tarmac agents`: each harness#model of the recipes, runnable or not and why, and the notice for the defaults', async () => {
    const agents = await stack.api('GET', '/v1/agents');
    assert.equal(agents.status, 200, JSON.stringify(agents.body));
    const worker = agents.body.workers.find((entry: { fresh: boolean }) => entry.fresh);
    assert.ok(worker, `a fresh report: ${JSON.stringify(agents.body)}`);
    const row = (name: string) => worker.agents.find((entry: { harnessModel: string }) => entry.harnessModel === name);
    const codex = row('codex#gpt-5-codex');
    assert.equal(codex.runnable, false);
    assert.match(codex.reason, /key OPENAI_API_KEY is not set/);
    assert.deepEqual(codex.missing, [{ kind: 'key', name: 'OPENAI_API_KEY' }]);
    assert.ok(codex.usedBy.includes('panels.default') && codex.usedBy.some((use: string) => use.startsWith('ladder[')), codex.usedBy.join(', '));
    assert.deepEqual([row('script#reviewer-a').runnable, row('script#reviewer-a').usedBy.includes('panels.script-skip-unavailable')], [true, true]);
    assert.match(worker.notice, /^the default panel cannot run here: .+\. And the default ladder cannot run here: .*claude-code#\S+ needs ANTHROPIC_API_KEY/);

    // GET /v1/recipes says the same rules: each panel's, and the operator's model list with its dates.
    const recipes = (await stack.api('GET', '/v1/recipes')).body;
    const rule = (name: string) => recipes.panels.find((panel: { name: string }) => panel.name === name).unavailable;
    assert.deepEqual([rule('default'), rule('script-skip-unavailable')], ['incomplete', 'skip']);
    assert.deepEqual(
      recipes.models.find((model: { name: string }) => model.name === 'claude-sonnet-4-5'),
      { name: 'claude-sonnet-4-5', provider: 'anthropic', taken: loadRecipes().pricing['claude-sonnet-4-5']!.taken },
    );

    const cli = await tarmac(['agents'], { apiUrl: stack.apiUrl });
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, new RegExp(`^worker ${worker.hostId} \\(reported `, 'm'));
    assert.match(cli.stdout, /^ {2}! the default panel cannot run here: /m);
    assert.match(
      cli.stdout,
      /^ {2}✗ codex#gpt-5-codex +codex#gpt-5-codex cannot run: key OPENAI_API_KEY is not set · harnesses\.codex, ladder\[\d\], panels\.default/m,
    );
    assert.match(cli.stdout, /^ {2}✓ script#reviewer-a +harnesses\.script, panels\./m);
  });
});
