import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { branchHead, createFixtureRepo, gateFile, type Files } from '../../infra/fixture-repo';
import { findingsCachePath } from '../../policies/findings-cache-key';
import { readEvents } from '../helpers/sse';
import { containersCreated, startStack, testToken, waitFor, type Stack } from '../helpers/stack';
import { runResult } from '../helpers/runs';

/** Every repo made from these files has the same trees: the cache is keyed by tree, not by repo. */
function reviewedRepo(panel: string, feature: Files, base: Files = {}, quorum = 3) {
  return createFixtureRepo({
    base: {
      'check.sh': 'true\n',
      '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], { review: { panel, quorum } }),
      ...base,
    },
    branches: [{ name: 'feature/r', commits: [{ message: 'feature', files: feature }] }],
  });
}
const cleanFeature = { 'src/feature.js': 'module.exports = 1; // TODO: name it\n' };

describe('review panel with a per-model findings cache', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
    // Panels of recipes/panels.json name these scenarios: a reviewer that crashes on its first attempt
    // (script-crash-once), reviewers that report usage (script-spenders).
    stack.scriptScenario('crash-first-attempt', { crashAttempts: 1 });
    stack.scriptScenario('review-spend', { reportUsage: { inputTokens: 400, outputTokens: 200, costUsd: 0.01 } });
  });
  after(async () => {
    await stack?.stop();
  });

  async function landRepo(url: string, agents?: Record<string, unknown>, extra: Record<string, unknown> = {}) {
    const since = Math.floor(Date.now() / 1000);
    const created = await stack.api('POST', '/v1/landings', { repo: url, branches: ['feature/r'], target: 'main', ...(agents ? { agents } : {}), ...extra });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.id as string;
    const view = await waitFor(
      () => stack.api('GET', `/v1/landings/${id}`),
      (response) => response.body?.workflowStatus === 'COMPLETED',
      240_000,
      `landing ${id}`,
    );
    // This run's reviewers only: Docker's event log is read by the second, and the previous landing may share it.
    const reviewerContainers = await containersCreated(stack.docker, since, ['tarmac.role=reviewer', `tarmac.run=${id}`]);
    return { id, outcome: view.body.outcome, view: view.body, reviewerContainers };
  }
  const cacheFile = (treeSha: string, harnessModel: string) =>
    join(stack.dataDir, 'cache', 'reviews', findingsCachePath({ treeSha, harnessModel, promptVersion: 'v1' }));

  let tree: string;

  it('first landing: miss, 3 reviewer sessions; the identical tree again: hit, 0 sessions', async () => {
    const first = await landRepo(reviewedRepo('script-trio', cleanFeature).url);
    assert.equal(first.outcome.status, 'landed', first.outcome.summary);
    assert.equal(first.outcome.reviews.length, 1);
    assert.equal(first.outcome.reviews[0].cache, 'miss');
    assert.equal(first.outcome.reviews[0].sessionsStarted, 3);
    assert.equal(first.reviewerContainers, 3);
    assert.equal(first.view.reviews[0].cache, 'miss', 'visible in the status view too');
    tree = first.outcome.reviews[0].treeSha;
    assert.equal(tree, first.outcome.treeSha);
    for (const reviewer of ['script#reviewer-a', 'script#reviewer-b', 'script#reviewer-c'])
      assert.ok(existsSync(cacheFile(tree, reviewer)), `${reviewer} sealed`);

    const second = await landRepo(reviewedRepo('script-trio', cleanFeature).url);
    assert.equal(second.outcome.status, 'landed', second.outcome.summary);
    assert.equal(second.outcome.treeSha, tree, 'the same tree');
    assert.equal(second.outcome.reviews[0].cache, 'hit');
    assert.deepEqual(second.outcome.reviews[0].restored, ['script#reviewer-a', 'script#reviewer-b', 'script#reviewer-c']);
    assert.equal(second.outcome.reviews[0].sessionsStarted, 0);
    assert.equal(second.reviewerContainers, 0, 'no reviewer container was started (counted through Docker labels)');
    assert.match(second.view.steps.find((step: { name: string }) => step.name.startsWith('review.panel')).detail, /REVIEW_CACHE=hit/);
  });

  it("deleting one reviewer's entry → partial, one session", async () => {
    rmSync(cacheFile(tree, 'script#reviewer-c'));
    const run = await landRepo(reviewedRepo('script-trio', cleanFeature).url);
    assert.equal(run.outcome.status, 'landed', run.outcome.summary);
    assert.equal(run.outcome.reviews[0].cache, 'partial');
    assert.deepEqual(run.outcome.reviews[0].restored, ['script#reviewer-a', 'script#reviewer-b']);
    assert.equal(run.reviewerContainers, 1);
  });

  it('corrupt entries (truncated, a flipped byte, valid JSON of another tree) are misses, never hits', async () => {
    truncateSync(cacheFile(tree, 'script#reviewer-a'), 40);
    const flipped = readFileSync(cacheFile(tree, 'script#reviewer-b'), 'utf8').replace('TODO', 'TODX');
    writeFileSync(cacheFile(tree, 'script#reviewer-b'), flipped);
    const other = JSON.parse(readFileSync(cacheFile(tree, 'script#reviewer-c'), 'utf8'));
    other.key.treeSha = 'f'.repeat(40);
    writeFileSync(cacheFile(tree, 'script#reviewer-c'), JSON.stringify(other));
    const run = await landRepo(reviewedRepo('script-trio', cleanFeature).url);
    assert.equal(run.outcome.status, 'landed', run.outcome.summary);
    assert.equal(run.outcome.reviews[0].cache, 'miss');
    assert.equal(run.reviewerContainers, 3, 'every corrupted reviewer ran again');
    const reasons = (await stack.client.workflow.getHandle(`${run.id}.review-1`).result()) as { misses: { harnessModel: string; reason: string }[] };
    const byReviewer = Object.fromEntries(reasons.misses.map((miss) => [miss.harnessModel, miss.reason]));
    assert.match(byReviewer['script#reviewer-a']!, /unreadable/);
    assert.match(byReviewer['script#reviewer-b']!, /digest/);
    assert.match(byReviewer['script#reviewer-c']!, /another key/);
    assert.doesNotMatch(readFileSync(cacheFile(tree, 'script#reviewer-b'), 'utf8'), /TODX/, 'the re-run resealed a good entry');
  });

  it('2 of 3 with a reviewer that crashes on every attempt: respawned per the session policy, still no verdict → review-incomplete naming it and why; nothing merged', async () => {
    const repo = reviewedRepo('script-with-crash', { 'src/other.js': 'module.exports = 2;\n' }, {}, 2);
    const before = branchHead(repo.path, 'main');
    const run = await landRepo(repo.url);
    assert.equal(run.outcome.status, 'review-incomplete', run.outcome.summary);
    // Two reports delivered meet the quorum of 2: the errored third still makes it incomplete.
    assert.match(run.outcome.summary, /review-incomplete: an errored reviewer never yields a verdict, whatever the quorum \(2 delivered, quorum 2\)/);
    assert.match(
      run.outcome.summary,
      /missing script#crash \(failed: gave up after 2 attempt\(s\): crashed repeated on script#crash/,
      'the reviewer and why are named',
    );
    assert.match(run.outcome.summary, /nothing was merged/);
    const [review] = run.outcome.reviews;
    assert.deepEqual(review.missing, ['script#crash']);
    const crashed = review.reviewers.find((reviewer: { harnessModel: string }) => reviewer.harnessModel === 'script#crash');
    assert.deepEqual(
      [crashed.status, crashed.sessionStatus, crashed.attempts, crashed.respawns],
      ['errored', 'failed', 2, 1],
      'the crash was respawned once, as the policy allows (maxRespawns 1), then given up',
    );
    assert.deepEqual(
      review.reviewers
        .filter((reviewer: { status: string }) => reviewer.status === 'delivered')
        .map((reviewer: { harnessModel: string }) => reviewer.harnessModel),
      ['script#reviewer-a', 'script#reviewer-b'],
    );
    assert.equal(run.reviewerContainers, 4, 'a, b and two attempts of the crashing reviewer');
    assert.equal(review.meters.sessionsSpawned, 4);
    assert.equal(review.meters.respawns, 1);
    assert.equal(run.outcome.meters.agentSessions, 4, "the panel's containers are in the landing's meters");
    assert.equal(existsSync(cacheFile(review.treeSha, 'script#reviewer-a')), true, 'the survivors are sealed');
    assert.equal(existsSync(cacheFile(review.treeSha, 'script#crash')), false, 'an errored reviewer is never sealed');
    assert.equal(branchHead(repo.path, 'main'), before);
  });

  it('2 of 3 whose third reviewer crashes on its first attempt: the respawn delivers → the panel decides on three verdicts', async () => {
    const repo = reviewedRepo('script-crash-once', { 'src/once.js': 'module.exports = 5; // TODO: name it\n' }, {}, 2);
    const run = await landRepo(repo.url);
    assert.equal(run.outcome.status, 'landed', run.outcome.summary);
    const [review] = run.outcome.reviews;
    assert.equal(review.status, 'approved');
    assert.deepEqual(review.missing, []);
    const once = review.reviewers.find((reviewer: { harnessModel: string }) => reviewer.harnessModel === 'script#reviewer-c:crash-first-attempt');
    assert.deepEqual([once.status, once.sessionStatus, once.attempts, once.respawns], ['delivered', 'delivered', 2, 1]);
    const verdict = (await stack.client.workflow.getHandle(`${run.id}.review-1`).result()) as {
      delivered: number;
      findings: { rule?: string; votes: string[] }[];
      meters: { respawns: number };
    };
    assert.equal(verdict.delivered, 3, 'three verdicts');
    assert.deepEqual(
      verdict.findings.map((finding) => [finding.rule, finding.votes.length]),
      [['todo', 3]],
      "the respawned reviewer's report counts with the others",
    );
    assert.equal(verdict.meters.respawns, 1);
    // The session's own record: a crash, the policy's respawn, a delivery.
    const session = (await stack.client.workflow.getHandle(`${run.id}.review-1.script_reviewer-c_crash-first-attempt`).result()) as {
      attempts: { class: string }[];
      decisions: { action: string }[];
    };
    assert.deepEqual(
      session.attempts.map((attempt) => attempt.class),
      ['crashed', 'delivered'],
    );
    assert.deepEqual(
      session.decisions.map((decision) => decision.action),
      ['respawn', 'done'],
    );
    assert.equal(run.reviewerContainers, 4);
  });

  it("a panel's tokens and cost are in the landing's meters (and its review record)", async () => {
    const repo = reviewedRepo('script-spenders', { 'src/spend.js': 'module.exports = 6;\n' });
    const run = await landRepo(repo.url);
    assert.equal(run.outcome.status, 'landed', run.outcome.summary);
    // Three reviewers, each reporting 400 in, 200 out, $0.01 (scenario review-spend); nothing else in this landing spends.
    assert.deepEqual(run.outcome.reviews[0].meters, {
      sessionsSpawned: 3,
      respawns: 0,
      inputTokens: 1200,
      outputTokens: 600,
      costUsd: run.outcome.reviews[0].meters.costUsd,
    });
    assert.ok(Math.abs(run.outcome.reviews[0].meters.costUsd - 0.03) < 1e-9, String(run.outcome.reviews[0].meters.costUsd));
    const { meters } = run.outcome;
    assert.deepEqual([meters.agentSessions, meters.inputTokens, meters.outputTokens], [3, 1200, 600]);
    assert.ok(Math.abs(meters.costUsd - 0.03) < 1e-9, String(meters.costUsd));
    assert.deepEqual([run.view.meters.inputTokens, run.view.meters.outputTokens], [1200, 600], 'the status view too');
  });

  it("review spend exhausts the landing's budget → it stops before the next child (the findings' fixer); nothing merged", async () => {
    const repo = reviewedRepo('script-spenders', { 'src/spend.js': 'debugger;\nmodule.exports = 7;\n' });
    const before = branchHead(repo.path, 'main');
    const since = Math.floor(Date.now() / 1000);
    const run = await landRepo(repo.url, { fixer: 'script#fixer', ladder: ['script#fixer'] }, { budget: { tokens: 1000, onExhausted: 'stop' } });
    assert.equal(run.outcome.status, 'budget-exhausted', run.outcome.summary);
    assert.match(run.outcome.summary, /tokens: 1800 used of 1000/, 'the panel spent it (3 × 600)');
    assert.deepEqual(
      run.outcome.reviews.map((review: { status: string }) => review.status),
      ['changes-requested'],
    );
    assert.equal(run.outcome.sessions?.length ?? 0, 0, 'no fixer session was started');
    assert.equal(
      run.view.steps.some((step: { name: string }) => step.name.startsWith('session.fixer')),
      false,
    );
    assert.equal(await containersCreated(stack.docker, since, [`tarmac.run=${run.id}`, 'tarmac.role=fixer']), 0, 'no fixer container either');
    assert.equal(branchHead(repo.path, 'main'), before);
  });

  it('blocking findings → fixup round → re-review of the new tree → merge', async () => {
    const repo = reviewedRepo('script-trio', { 'src/debug.js': 'debugger;\nmodule.exports = 3;\n' });
    stack.scriptScenario('remove-debugger', { edits: [{ file: 'src/debug.js', find: 'debugger;', replace: '// fixed' }] });
    const run = await landRepo(repo.url, { fixer: 'script#fixer:remove-debugger', ladder: ['script#fixer:remove-debugger'] });
    assert.equal(run.outcome.status, 'landed', run.outcome.summary);
    assert.deepEqual(
      run.outcome.reviews.map((review: { status: string }) => review.status),
      ['changes-requested', 'approved'],
    );
    assert.equal(run.outcome.reviews[0].blocking[0].file, 'src/debug.js');
    assert.equal(run.outcome.reviews[0].blocking[0].votes.length, 3, 'the three reviewers agreed; merged with their votes');
    assert.notEqual(run.outcome.reviews[1].treeSha, run.outcome.reviews[0].treeSha, 're-reviewed on the fixed tree');
    assert.equal(run.outcome.reviews[1].treeSha, run.outcome.treeSha);
    assert.equal(run.outcome.sessions.map((session: { role: string }) => session.role).join(), 'fixer');
  });

  it('SIGKILL the worker mid-panel: the 2 delivered are not re-run, the third is reattached; one container per reviewer', async () => {
    const repo = reviewedRepo('script-slow-third', { 'src/slow.js': 'module.exports = 4;\n' });
    const since = Math.floor(Date.now() / 1000);
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/r'], target: 'main' });
    const id = created.body.id as string;
    const panel = stack.client.workflow.getHandle(`${id}.review-1`);
    await waitFor(
      async (): Promise<{ sealed: string[]; running: string[] }> =>
        await panel.query<{ sealed: string[]; running: string[] }>('status').catch(() => ({ sealed: [], running: [] })),
      (status) => status.sealed.length === 2 && status.running.includes('script#slow'),
      120_000,
      'two reviewers sealed while the slow one runs',
    );
    await stack.killWorker('SIGKILL');
    await stack.startWorker();
    const view = await waitFor(
      () => stack.api('GET', `/v1/landings/${id}`),
      (response) => response.body?.workflowStatus === 'COMPLETED',
      180_000,
      'the landing',
    );
    assert.equal(view.body.outcome.status, 'landed', view.body.outcome.summary);
    for (const reviewer of ['script_reviewer-a', 'script_reviewer-b', 'script_slow']) {
      const label = `tarmac.session=review-${view.body.outcome.treeSha.slice(0, 12)}-${reviewer}`;
      assert.equal(await containersCreated(stack.docker, since, label), 1, `${reviewer}: exactly one container`);
    }
    const slow = (await stack.client.workflow.getHandle(`${id}.review-1.script_slow`).result()) as { attempts: { reattached: boolean }[] };
    assert.equal(slow.attempts.length, 1);
    assert.equal(slow.attempts[0]!.reattached, true, 'the third reviewer was reattached, not respawned');
  });
});

describe('POST /v1/reviews: a panel on its own', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(async () => {
    await stack?.stop();
  });

  it('reviews base...head with the panel and reports the verdict; a repeat request is idempotent', async () => {
    const repo = reviewedRepo('script-trio', { 'src/debug.js': 'debugger;\n' });
    const body = { repo: repo.url, base: 'main', head: 'feature/r', panel: 'script-trio' };
    const created = await stack.api('POST', '/v1/reviews', body);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const again = await stack.api('POST', '/v1/reviews', body);
    assert.equal(again.status, 200);
    assert.equal(again.body.id, created.body.id);
    const result = await runResult(stack, created.body.id, 'the review', 120_000);
    assert.equal(result.status, 'changes-requested');
    assert.equal(result.cache, 'miss');
    assert.deepEqual(
      result.blocking.map((finding: { file: string }) => finding.file),
      ['src/debug.js'],
    );
    assert.equal(existsSync(join(stack.dataDir, 'runs', created.body.id, 'worktree')), false, 'its workspace was cleaned up');

    // Its own live events: the cache status, each reviewer's session, the verdict.
    const events = await readEvents(`${stack.apiUrl}/v1/runs/${created.body.id}/events?logs=false`, testToken, { stop: (event) => event.event === 'end' });
    const of = (kind: string) => events.filter((event) => event.event === kind).map((event) => event.data);
    assert.deepEqual(
      of('cache').map((event) => event.cache),
      ['miss'],
    );
    const delivered = of('session')
      .filter((event) => event.type === 'delivered')
      .map((event) => event.sessionId);
    assert.equal(new Set(delivered).size, 3, `three reviewers delivered: ${delivered.join(', ')}`);
    assert.deepEqual(
      of('outcome').map((event) => event.status),
      ['changes-requested'],
    );
    assert.equal(events.at(-1)!.data.outcome.status, 'changes-requested');
  });

  it('refuses an unknown panel and a missing head branch, naming the field', async () => {
    const repo = reviewedRepo('script-trio', cleanFeature);
    const unknown = await stack.api('POST', '/v1/reviews', { repo: repo.url, base: 'main', head: 'feature/r', panel: 'nope' });
    assert.equal(unknown.status, 400);
    assert.equal(unknown.body.error.details.field, 'panel');
    const missing = await stack.api('POST', '/v1/reviews', { repo: repo.url, base: 'main', head: 'feature/none', panel: 'script-trio' });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.details.field, 'head');
  });
});
