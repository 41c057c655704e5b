import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { defaultRecipesDir } from '../../core/node/recipes';
import { WorkflowNotFoundError } from '@temporalio/client';
import { eventsQuery } from '../../core/messages';
import type { SessionRequest } from '../../core/session-types';
import { branchHead, createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { landingFinished, runningContainer, startStack, waitFor, type Stack } from '../helpers/stack';
import { fileAt, git, treeOf } from '../helpers/git';

describe('the failures the doctrine names: questions first, the resolver on every rebase, verify → fixup → re-verify', () => {
  let stack: Stack;
  const question = "Which line should shared.txt keep: the target's or the branch's?";
  // Its own recipes: the shipped ones and a panel whose first reviewer asks before it reviews.
  const recipesDir = mkdtempSync(join(tmpdir(), 'tarmac-test-recipes-'));
  before(async () => {
    cpSync(defaultRecipesDir, recipesDir, { recursive: true });
    const panels = JSON.parse(readFileSync(join(recipesDir, 'panels.json'), 'utf8'));
    panels.panels['script-asker'] = {
      reviewers: ['script#reviewer-a:ask-review', 'script#reviewer-b'],
      quorum: 2,
      blockingSeverities: ['blocking'],
      promptVersion: 'v1',
      prompt: 'Review the listed files.',
    };
    writeFileSync(join(recipesDir, 'panels.json'), `${JSON.stringify(panels, null, 2)}\n`);
    stack = await startStack({ recipesDir });
    stack.scriptScenario('ask-review', { ask: ['Is the TODO in notes.txt on purpose?'] });
    // A resolver that asks before it resolves, and writes the answer as the resolution.
    stack.scriptScenario('ask-keep', { ask: [question], edits: [{ file: 'shared.txt', replace: '{{answer}}\n' }] });
    // A fixer that mends a committed conflict in notes.txt.
    // A fixer that asks first, and writes the answer where the gate wants it.
    stack.scriptScenario('ask-fix', { ask: ['Should FIXED say yes or no?'], edits: [{ file: 'FIXED', replace: '{{answer}}\n' }] });
    stack.scriptScenario('mend-notes', { edits: [{ file: 'notes.txt', replace: 'ours\ntheirs\n' }] });
  });
  after(async () => {
    await stack?.stop();
    rmSync(recipesDir, { recursive: true, force: true });
  });

  async function land(body: Record<string, unknown>) {
    const created = await stack.api('POST', '/v1/landings', body);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return created.body.id as string;
  }

  /** A branch that changes shared.txt, and a target that changed the same line after it was cut. */
  function conflictRepo(check = 'test -f shared.txt\n') {
    const repo = createFixtureRepo({
      base: {
        'shared.txt': 'base\n',
        'check.sh': check,
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], { fixup: { maxRounds: 0 } }),
      },
      branches: [{ name: 'feature/one', commits: [{ message: 'one: change shared', files: { 'shared.txt': 'one\n' } }] }],
    });
    return repo;
  }
  const asker = { resolver: 'script#resolver:ask-keep', ladder: ['script#resolver:ask-keep'] };

  /** The landing's view once it waits on a question. */
  const waitingView = (id: string) =>
    waitFor(
      () => stack.api('GET', `/v1/landings/${id}`),
      (view) => (view.body?.pendingQuestions?.length ?? 0) > 0 || view.body?.workflowStatus !== 'RUNNING',
      180_000,
      `landing ${id} to wait on a question`,
    );

  /** The input of a child session of the landing, or undefined when it was never started. */
  async function sessionInput(id: string): Promise<SessionRequest | undefined> {
    try {
      const history = await stack.client.workflow.getHandle(id).fetchHistory();
      const started = history.events![0]!.workflowExecutionStartedEventAttributes!;
      const { defaultPayloadConverter } = await import('@temporalio/common');
      return defaultPayloadConverter.fromPayload<SessionRequest>(started.input!.payloads![0]!);
    } catch (error) {
      if (error instanceof WorkflowNotFoundError || (error as { code?: number }).code === 5) return undefined;
      throw error;
    }
  }

  it("a resolver's question pauses the landing before more agent time; the answer reaches the session that asked (a follow-up in its conversation); landed", async () => {
    const repo = conflictRepo();
    repo.advanceTarget('target changes shared', { 'shared.txt': 'target\n' });
    const id = await land({ repo: repo.url, branches: ['feature/one'], target: 'main', agents: asker });

    const waiting = await waitingView(id);
    assert.equal(waiting.body.workflowStatus, 'RUNNING', JSON.stringify(waiting.body.outcome));
    const [pending] = waiting.body.pendingQuestions;
    assert.equal(pending.id, 'resolver-1-q1');
    assert.equal(pending.question, question);
    assert.equal(pending.from, 'resolver-1 (resolver, script#resolver:ask-keep)', 'who asked');
    assert.match(pending.why, /rebase of feature\/one onto main stopped at a conflict in shared\.txt/, 'why it asks now');
    assert.equal(waiting.body.phase, 'rebase');
    // Nothing more runs while the question waits: no second resolver, no gate.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.equal(await sessionInput(`${id}.resolver-2`), undefined, 'no follow-up before the answer');
    const still = await stack.api('GET', `/v1/landings/${id}`);
    assert.deepEqual(
      still.body.steps.filter((step: { name: string }) => step.name.startsWith('gate.')),
      [],
      'no gate ran',
    );
    // The journal (the events stream) carries the question with who asked and why.
    const page = await stack.client.workflow.getHandle(id).query(eventsQuery, {});
    const asked = page.events.find((event) => event.kind === 'question');
    assert.deepEqual(asked && { id: asked.id, from: asked.from }, { id: 'resolver-1-q1', from: pending.from });

    const answer = 'target and one, in that order';
    const answered = await stack.api('POST', `/v1/landings/${id}/answers`, { text: answer });
    assert.equal(answered.status, 200, JSON.stringify(answered.body));
    assert.equal(answered.body.questionId, 'resolver-1-q1');

    const view = await landingFinished(stack, id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.equal(fileAt(repo.path, 'main', 'shared.txt').trim(), answer, "the resolution is the operator's answer");
    const followUp = await sessionInput(`${id}.resolver-2`);
    assert.deepEqual(
      followUp?.continues && { sessionId: followUp.continues.sessionId, harnessModel: followUp.continues.harnessModel },
      { sessionId: 'resolver-1', harnessModel: 'script#resolver:ask-keep' },
      'the follow-up continues the session that asked',
    );
    assert.match(
      followUp!.task.prompt,
      new RegExp(`^You asked, and the operator answered:\\n1\\. ${question.replace(/[?.']/g, '.')}\\nAnswer from the operator: ${answer}$`, 'm'),
    );
    assert.deepEqual(view.outcome.questions, [{ id: 'resolver-1-q1', question, from: pending.from, why: pending.why, answer }]);
    assert.deepEqual(
      view.outcome.sessions.map((entry: { sessionId: string; status: string }) => `${entry.sessionId}:${entry.status}`),
      ['resolver-1:asked', 'resolver-2:delivered'],
    );
  });

  it('an empty answer is a decision not to go on → needs-decision naming the question; no follow-up; nothing merged', async () => {
    const repo = conflictRepo();
    repo.advanceTarget('target changes shared', { 'shared.txt': 'target\n' });
    const before = branchHead(repo.path, 'main');
    const id = await land({ repo: repo.url, branches: ['feature/one'], target: 'main', agents: asker });
    const waiting = await waitingView(id);
    assert.equal(waiting.body.pendingQuestions[0]?.id, 'resolver-1-q1', JSON.stringify(waiting.body.outcome));
    assert.equal((await stack.api('POST', `/v1/landings/${id}/answers`, { text: '   ' })).status, 200);
    const view = await landingFinished(stack, id);
    assert.equal(view.outcome.status, 'needs-decision', view.outcome.summary);
    assert.equal(view.outcome.failure.type, 'TARMAC_NEEDS_DECISION');
    assert.match(view.outcome.summary, /resolver-1 \(resolver, script#resolver:ask-keep\) question resolver-1-q1 was empty/);
    assert.equal(await sessionInput(`${id}.resolver-2`), undefined, 'no agent time after the decision');
    assert.equal(branchHead(repo.path, 'main'), before, 'nothing merged');
  });

  it('the target moves under the merge and conflicts with the landing → a resolver resolves the re-rebase → re-gated and landed', async () => {
    // The gate takes a few seconds: the target moves while it runs, so the merge finds it moved.
    const repo = conflictRepo('sleep 3; test -f shared.txt\n');
    const id = await land({ repo: repo.url, branches: ['feature/one'], target: 'main', agents: { resolver: 'script#resolver', ladder: ['script#resolver'] } });
    await runningContainer(stack.docker, [`tarmac.run=${id}`], 'the first gate to run');
    repo.advanceTarget('target changes shared', { 'shared.txt': 'target\n' });
    const moved = branchHead(repo.path, 'main');

    const view = await landingFinished(stack, id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    const merged = branchHead(repo.path, 'main');
    assert.equal(merged, view.outcome.mergedSha);
    assert.equal(git(repo.path, 'merge-base', '--is-ancestor', moved, merged), '', 'the landing sits on the moved target');
    assert.equal(fileAt(repo.path, 'main', 'shared.txt').trim(), 'target\none', 'the resolver kept both sides');
    const steps = view.steps.map((step: { name: string }) => step.name);
    assert.ok(steps.includes('capsule.rebaseOnto'), steps.join(', '));
    assert.ok(steps.includes('session.resolver:resolver-1'), steps.join(', '));
    assert.equal(steps.indexOf('session.resolver:resolver-1') > steps.indexOf('capsule.rebaseOnto'), true, 'the resolver ran for the re-rebase');
    // The merged tree is the re-gated one.
    assert.equal(treeOf(repo.path, merged), view.outcome.gates.at(-1).treeSha);
    assert.equal(new Set(view.outcome.gates.map((gate: { treeSha: string }) => gate.treeSha)).size, 2, 'gated before and after the move');
  });

  it('verify refuses leftover conflict markers the gate missed → one fixup round with the refusal as input → re-gated, re-verified, landed', async () => {
    const committedConflict = 'ours\n<<<<<<< HEAD\nmine\n=======\nyours\n>>>>>>> feature\ntheirs\n';
    const repo = createFixtureRepo({
      base: {
        'check.sh': 'test -f notes.txt\n',
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], { fixup: { maxRounds: 1 } }),
      },
      branches: [{ name: 'feature/notes', commits: [{ message: 'notes (a bad merge left its markers)', files: { 'notes.txt': committedConflict } }] }],
    });
    const id = await land({
      repo: repo.url,
      branches: ['feature/notes'],
      target: 'main',
      agents: { fixer: 'script#fixer:mend-notes', ladder: ['script#fixer:mend-notes'] },
    });
    const view = await landingFinished(stack, id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.equal(fileAt(repo.path, 'main', 'notes.txt').trim(), 'ours\ntheirs', 'the landed file is the mended one');
    const steps = view.steps.map((step: { name: string; detail?: string }) => step.name);
    assert.deepEqual(steps.filter((name: string) => name === 'capsule.verifyLanding').length, 2, `verified, then re-verified: ${steps.join(', ')}`);
    assert.ok(steps.indexOf('session.fixer:fixer-1') > steps.indexOf('capsule.verifyLanding'), 'the fixup round came after the refusal');
    const fixer = await sessionInput(`${id}.fixer-1`);
    assert.match(
      fixer!.task.prompt,
      /refused the merge: leftover conflict markers: notes\.txt:2, notes\.txt:4, notes\.txt:6/,
      "the refusal is the fixer's input",
    );
    // Gated again on the mended tree, which is the one merged.
    assert.equal(treeOf(repo.path, 'main'), view.outcome.gates.at(-1).treeSha);
    assert.equal(new Set(view.outcome.gates.map((gate: { treeSha: string }) => gate.treeSha)).size, 2);
  });

  it('still refused after its fixup round → verify-failed naming the problem; nothing merged', async () => {
    const repo = createFixtureRepo({
      base: { 'check.sh': 'true\n', '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], { fixup: { maxRounds: 1 } }) },
      branches: [{ name: 'feature/notes', commits: [{ message: 'notes', files: { 'notes.txt': '<<<<<<< HEAD\na\n=======\nb\n>>>>>>> x\n' } }] }],
    });
    const before = branchHead(repo.path, 'main');
    // This fixer commits, but not a fix: the markers stay.
    stack.scriptScenario('touch-other', { edits: [{ file: 'other.txt', replace: 'x\n' }] });
    const id = await land({
      repo: repo.url,
      branches: ['feature/notes'],
      target: 'main',
      agents: { fixer: 'script#fixer:touch-other', ladder: ['script#fixer:touch-other'] },
    });
    const view = await landingFinished(stack, id);
    assert.equal(view.outcome.status, 'verify-failed', view.outcome.summary);
    assert.match(
      view.outcome.summary,
      /^verification refused the merge after its fixup round: leftover conflict markers: notes\.txt:1, notes\.txt:3, notes\.txt:5; nothing was merged$/,
    );
    assert.equal(branchHead(repo.path, 'main'), before);
  });

  it("a fix loop's agent asks inside a landing: the landing shows the question, the answer given to the landing reaches the fix loop's agent; landed", async () => {
    const repo = createFixtureRepo({
      base: {
        'check.sh': 'test "$(cat FIXED 2>/dev/null)" = yes || { echo "FIXED is not yes"; exit 3; }\n',
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], { fixup: { maxRounds: 1 } }),
      },
      branches: [{ name: 'feature/f', commits: [{ message: 'feature', files: { 'feature.txt': 'f\n' } }] }],
    });
    const id = await land({
      repo: repo.url,
      branches: ['feature/f'],
      target: 'main',
      agents: { fixer: 'script#fixer:ask-fix', ladder: ['script#fixer:ask-fix'] },
    });
    const waiting = await waitingView(id);
    const [pending] = waiting.body.pendingQuestions;
    assert.deepEqual(
      { id: pending?.id, from: pending?.from, phase: waiting.body.phase },
      { id: 'fixup-1-implementer-1-q1', from: 'fixup-1-implementer-1 (implementer, script#fixer:ask-fix)', phase: 'fixup' },
      JSON.stringify(waiting.body),
    );
    assert.match(pending.why, /agent round 1 on `sh check\.sh` \(exit 3\)/);
    // The fix loop shows it too, as its own.
    const loop = await stack.client.workflow.getHandle(`${id}.fixup-1`).query<{ pendingQuestions: { id: string }[] }>('status');
    assert.deepEqual(
      loop.pendingQuestions.map((question) => question.id),
      ['fixup-1-implementer-1-q1'],
    );

    assert.equal((await stack.api('POST', `/v1/landings/${id}/answers`, { text: 'yes' })).status, 200);
    const view = await landingFinished(stack, id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.equal(fileAt(repo.path, 'main', 'FIXED').trim(), 'yes', "the fix is the operator's answer");
    const followUp = await sessionInput(`${id}.fixup-1-implementer-1-answered-1`);
    assert.equal(followUp?.continues?.sessionId, 'fixup-1-implementer-1', 'the follow-up continues the agent that asked');
    assert.match(followUp.task.prompt, /Answer from the operator: yes$/m);
    assert.deepEqual(
      view.outcome.questions.map((question: { id: string; answer?: string }) => [question.id, question.answer]),
      [['fixup-1-implementer-1-q1', 'yes']],
    );
  });

  it("a reviewer's question: the landing shows it, the answer reaches a follow-up of that reviewer, whose report counts; empty → needs-decision", async () => {
    const reviewed = (answer: string) => {
      const repo = createFixtureRepo({
        base: {
          'check.sh': 'true\n',
          '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], { review: { panel: 'script-asker', quorum: 2 } }),
        },
        branches: [{ name: 'feature/n', commits: [{ message: 'notes', files: { 'notes.txt': `notes ${answer}\n` } }] }],
      });
      return repo;
    };
    const repo = reviewed('yes');
    const id = await land({ repo: repo.url, branches: ['feature/n'], target: 'main' });
    const waiting = await waitingView(id);
    const [pending] = waiting.body.pendingQuestions;
    assert.equal(waiting.body.phase, 'review', JSON.stringify(waiting.body));
    assert.match(pending.id, /^review-[0-9a-f]{12}-script_reviewer-a_ask-review-q1$/);
    assert.match(pending.from, /\(reviewer, script#reviewer-a:ask-review\)$/);
    assert.match(pending.why, /^reviewing tree [0-9a-f]{12} for panel script-asker$/);
    assert.equal((await stack.api('POST', `/v1/landings/${id}/answers`, { text: 'yes, on purpose' })).status, 200);
    const view = await landingFinished(stack, id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.equal(view.outcome.reviews[0].status, 'approved');
    const panelId = `${id}.review-1`;
    const followUp = await sessionInput(`${panelId}.script_reviewer-a_ask-review-answered-1`);
    assert.match(followUp!.task.prompt, /^Answer from the operator: yes, on purpose$/m);
    assert.match(followUp!.continues!.sessionId, /^review-[0-9a-f]{12}-script_reviewer-a_ask-review$/, 'the follow-up continues the reviewer that asked');

    const declined = reviewed('no');
    const before = branchHead(declined.path, 'main');
    const second = await land({ repo: declined.url, branches: ['feature/n'], target: 'main' });
    await waitingView(second);
    assert.equal((await stack.api('POST', `/v1/landings/${second}/answers`, { text: '' })).status, 200);
    const stopped = await landingFinished(stack, second);
    assert.equal(stopped.outcome.status, 'needs-decision', stopped.outcome.summary);
    assert.match(stopped.outcome.summary, /^review: the answer to .* question review-.*-q1 was empty: a decision not to go on; nothing was merged$/);
    assert.equal(branchHead(declined.path, 'main'), before);
  });
});
