import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { mirrorPath } from '../../activities/stores/run-store';
import { landingId } from '../../core/node/landing-id';
import { branchHead, createFixtureRepo, gateFile, type FixtureBranch, type Files } from '../../infra/fixture-repo';
import { cleanedUp, landingFinished, runningContainer, startStack, waitFor, type Stack } from '../helpers/stack';
import { cloneRepo, fileAt, git, keepRefLog, refUpdates, treeOf } from '../helpers/git';

describe('landing flows: rebase, resolver, patch check, fixup, questions, cancel', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
    // Scripted fixers' scenarios: write FIXED (the fixup repo's gate wants it); write 1 and report 600 tokens (the budget tests).
    stack.scriptScenario('write-fixed', { edits: [{ file: 'FIXED', replace: 'yes\n' }] });
    stack.scriptScenario('write-1-spend-600', { edits: [{ file: 'FIXED', replace: '1\n' }], reportUsage: { inputTokens: 400, outputTokens: 200, costUsd: 0 } });
  });
  after(async () => {
    await stack?.stop();
  });

  async function land(body: Record<string, unknown>) {
    const created = await stack.api('POST', '/v1/landings', body);
    assert.ok(created.status === 201, JSON.stringify(created.body));
    return created.body.id as string;
  }
  const finished = (id: string) => landingFinished(stack, id);

  const gate = (extra: Record<string, unknown> = {}) => gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], extra);
  function conflictRepo(branchCommits: FixtureBranch['commits'], base: Files = {}) {
    const repo = createFixtureRepo({
      base: { 'shared.txt': 'base\n', 'check.sh': 'test -f shared.txt\n', '.config/tarmac/land-gate.json': gate(), ...base },
      branches: [{ name: 'feature/one', commits: branchCommits }],
    });
    // The target moves on the same line after the branch was cut: the rebase must conflict.
    repo.advanceTarget('placeholder', {});
    repo.advanceTarget('target changes shared', { 'shared.txt': 'target\n' });
    return repo;
  }
  const resolverAgents = { resolver: 'script#resolver', ladder: ['script#resolver'] };

  it('two branches land together; the merged SHA is the one whose tree was gated', async () => {
    const repo = createFixtureRepo({
      base: {
        'a.txt': 'a\n',
        'b.txt': 'b\n',
        'check.sh': 'grep -q A a.txt && grep -q B b.txt\n',
        '.config/tarmac/land-gate.json': gate({ fixup: { maxRounds: 0 } }),
      },
      branches: [
        { name: 'feature/a', commits: [{ message: 'a: upper', files: { 'a.txt': 'A\n' } }] },
        { name: 'feature/b', commits: [{ message: 'b: upper', files: { 'b.txt': 'B\n' } }] },
      ],
    });
    const id = await land({ repo: repo.url, branches: ['feature/a', 'feature/b'], target: 'main' });
    const view = await finished(id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    const merged = branchHead(repo.path, 'main');
    assert.equal(merged, view.outcome.mergedSha);
    assert.equal(treeOf(repo.path, merged), view.gates[0].treeSha, 'the gated tree is the merged tree');
    assert.deepEqual(
      view.outcome.provenance.map((entry: { branch: string; how: string }) => `${entry.branch}:${entry.how}`),
      ['feature/a:identical', 'feature/b:identical'],
    );
    assert.equal(fileAt(repo.path, 'main', 'a.txt').trim(), 'A');
    assert.equal(fileAt(repo.path, 'main', 'b.txt').trim(), 'B');
  });

  it('a conflicting branch is resolved by the scripted resolver and merged; every original patch is present', async () => {
    const repo = conflictRepo([
      { message: 'one: change shared', files: { 'shared.txt': 'one\n' } },
      { message: 'one: add notes', files: { 'notes.txt': 'notes\n' } },
    ]);
    const id = await land({ repo: repo.url, branches: ['feature/one'], target: 'main', agents: resolverAgents });
    const view = await finished(id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.equal(fileAt(repo.path, 'main', 'shared.txt').trim(), 'target\none', 'both sides kept by the resolver');
    assert.equal(fileAt(repo.path, 'main', 'notes.txt').trim(), 'notes');
    const how = view.outcome.provenance.map((entry: { subject: string; how: string; rebased: string | null }) => [
      entry.subject,
      entry.how,
      Boolean(entry.rebased),
    ]);
    assert.deepEqual(how, [
      ['one: change shared', 'resolved', true],
      ['one: add notes', 'identical', true],
    ]);
    assert.equal(view.outcome.sessions[0].role, 'resolver');
  });

  it('a resolver that silently drops a commit → dropped-commits naming it; target unchanged', async () => {
    const repo = conflictRepo([
      { message: 'one: change shared', files: { 'shared.txt': 'one\n' } },
      { message: 'one: add notes', files: { 'notes.txt': 'notes\n' } },
    ]);
    const before = branchHead(repo.path, 'main');
    const id = await land({
      repo: repo.url,
      branches: ['feature/one'],
      target: 'main',
      agents: { resolver: 'script#resolver-drops', ladder: ['script#resolver-drops'] },
    });
    const view = await finished(id);
    assert.equal(view.outcome.status, 'dropped-commits', view.outcome.summary);
    assert.match(view.outcome.summary, /"one: change shared" \(feature\/one\)/);
    assert.doesNotMatch(view.outcome.summary, /add notes/);
    assert.equal(branchHead(repo.path, 'main'), before);
  });

  it('a stale rerere resolution is not replayed by the automated rebase', async () => {
    const repo = conflictRepo([{ message: 'one: change shared', files: { 'shared.txt': 'one\n' } }]);
    const heads = [{ branch: 'feature/one', sha: branchHead(repo.path, 'feature/one') }];
    const targetSha = branchHead(repo.path, 'main');
    // Pre-seed the run's workspace with rerere on and a stale recorded resolution of this very conflict.
    const workspace = join(stack.dataDir, 'runs', landingId(repo.url, 'main', heads), 'worktree');
    cloneRepo(repo.url, workspace);
    git(workspace, 'config', 'rerere.enabled', 'true');
    git(workspace, 'checkout', '-q', '--detach', targetSha);
    const upstream = git(workspace, 'merge-base', targetSha, heads[0]!.sha);
    assert.throws(() => git(workspace, 'rebase', '--onto', targetSha, upstream, heads[0]!.sha), 'the seed rebase conflicts');
    execFileSync('sh', ['-c', `printf 'STALE\\n' > ${join(workspace, 'shared.txt')}`]);
    git(workspace, 'add', 'shared.txt');
    git(workspace, '-c', 'core.editor=true', 'rebase', '--continue');
    assert.ok(existsSync(join(workspace, '.git', 'rr-cache')), 'rerere recorded the stale resolution');
    git(workspace, 'checkout', '-q', '--detach', targetSha);

    const id = await land({ repo: repo.url, branches: ['feature/one'], target: 'main', agents: resolverAgents });
    const view = await finished(id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.equal(fileAt(repo.path, 'main', 'shared.txt').trim(), 'target\none', 'the resolver resolved it; rerere did not');
    assert.equal(view.outcome.sessions.length, 1, 'the conflict reached the resolver');
  });

  const fixupRepo = () =>
    createFixtureRepo({
      base: { 'check.sh': 'test -f FIXED || { echo "FIXED is missing"; exit 4; }\n', '.config/tarmac/land-gate.json': gate() },
      branches: [{ name: 'feature/f', commits: [{ message: 'feature without the fix', files: { 'feature.txt': 'f\n' } }] }],
    });
  const fixerAgents = (behaviour: string) => ({ fixer: `${behaviour}:write-fixed`, ladder: [`${behaviour}:write-fixed`] });

  it('red gate → fixer commits → green re-gate supersedes the red → merged', async () => {
    const repo = fixupRepo();
    const id = await land({ repo: repo.url, branches: ['feature/f'], target: 'main', agents: fixerAgents('script#fixer') });
    const view = await finished(id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.deepEqual(
      view.outcome.gates.map((result: { status: string; round: number }) => `${result.round}:${result.status}`),
      ['1:failed', '2:passed'],
    );
    assert.equal(view.outcome.supersedes.length, 1);
    assert.equal(view.outcome.supersedes[0].supersededBy.treeSha, view.outcome.treeSha);
    assert.equal(fileAt(repo.path, 'main', 'FIXED').trim(), 'yes');
    assert.equal(branchHead(repo.path, 'main'), view.outcome.mergedSha);
    // The red gate was repaired by a child fix loop whose repro is the failing suite.
    assert.deepEqual(
      view.outcome.fixLoops.map((loop: { id: string; outcome: string; filesChanged: string[] }) => [loop.id, loop.outcome, loop.filesChanged]),
      [[`${id}.fixup-1`, 'fixed', ['FIXED']]],
    );
    assert.deepEqual(
      view.outcome.sessions.map((entry: { sessionId: string; role: string }) => `${entry.sessionId}:${entry.role}`),
      ['fixup-1-implementer-1:implementer'],
    );
    const fixLoop = (await stack.client.workflow.getHandle(`${id}.fixup-1`).result()) as { reproCommand: string; reproExitCode: number };
    assert.equal(fixLoop.reproCommand, 'sh check.sh', 'the repro is the failing suite');
    assert.equal(fixLoop.reproExitCode, 0, 'the fix loop verified its fix before the landing re-gated');
    assert.ok(view.steps.some((step: { name: string }) => step.name === 'fix.loop:fixup-1'));
  });

  it('a red gate with a known failure is repaired by a playbook, with no agent session', async () => {
    const repo = createFixtureRepo({
      base: {
        Makefile: 'build:\n\ttrue\n',
        'scripts/test.sh': 'echo tests pass\n',
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['make', 'test'] }]),
      },
      branches: [{ name: 'feature/p', commits: [{ message: 'a feature', files: { 'feature.txt': 'p\n' } }] }],
    });
    const id = await land({ repo: repo.url, branches: ['feature/p'], target: 'main' });
    const view = await finished(id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.equal(view.outcome.fixLoops[0].playbookUsed, 'make-target-from-script');
    assert.equal(view.outcome.sessions, undefined, 'no agent was needed');
    assert.match(fileAt(repo.path, 'main', 'Makefile').trim(), /^test:/m, 'the landed Makefile has the test target');
  });

  it('a fixer that commits the right fix and exits non-zero → still merged (the gate decides)', async () => {
    const repo = fixupRepo();
    const id = await land({ repo: repo.url, branches: ['feature/f'], target: 'main', agents: fixerAgents('script#fixer-exit-1') });
    const view = await finished(id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.equal(view.outcome.sessions[0].role, 'implementer');
  });

  it('a fixer that commits nothing → fixup-failed; target unchanged', async () => {
    const repo = fixupRepo();
    const before = branchHead(repo.path, 'main');
    const id = await land({ repo: repo.url, branches: ['feature/f'], target: 'main', agents: fixerAgents('script#claims-success') });
    const view = await finished(id);
    assert.equal(view.outcome.status, 'fixup-failed', view.outcome.summary);
    assert.equal(view.outcome.fixLoops[0].outcome, 'thrashing', 'two rounds that changed nothing end the fix loop');
    assert.equal(branchHead(repo.path, 'main'), before);
  });

  describe('a landing-wide budget shared by its sessions', () => {
    // The gate wants FIXED = 2; the scripted fixer writes 1 and reports 600 tokens a session.
    const budgetRepo = () =>
      createFixtureRepo({
        // The failure names what FIXED holds: a round that changed it is not "the same failure twice".
        base: {
          'check.sh': 'v=$(cat FIXED 2>/dev/null || echo missing); test "$v" = 2 || { echo "FIXED is $v, not 2"; exit 4; }\n',
          '.config/tarmac/land-gate.json': gate({ fixup: { maxRounds: 2 } }),
        },
        branches: [{ name: 'feature/b', commits: [{ message: 'feature', files: { 'feature.txt': 'b\n' } }] }],
      });
    const spender = { fixer: 'script#fixer:write-1-spend-600', ladder: ['script#fixer:write-1-spend-600'] };
    const pausedView = (id: string) =>
      waitFor(
        () => stack.api('GET', `/v1/landings/${id}`),
        (view) => view.body?.pausedFor !== undefined || view.body?.workflowStatus !== 'RUNNING',
        180_000,
        `landing ${id} to pause for its budget`,
      );

    it('spent after the first fixup round → pauses; an operator extends it → the second round runs', async () => {
      const id = await land({
        repo: budgetRepo().url,
        branches: ['feature/b'],
        target: 'main',
        agents: spender,
        budget: { tokens: 500, onExhausted: 'pause' },
      });
      const paused = await pausedView(id);
      assert.match(paused.body.pausedFor, /^tokens: 600 used of 500$/, JSON.stringify(paused.body.outcome ?? paused.body.pausedFor));
      assert.equal(paused.body.budget.tokens, 500);
      assert.equal(paused.body.phase, 'fixup', 'it waits at the start of the second fixup round, not inside a session');
      assert.deepEqual(
        paused.body.steps.filter((step: { name: string }) => step.name.startsWith('fix.loop:')).map((step: { name: string }) => step.name),
        ['fix.loop:fixup-1'],
      );
      // The first round's fix loop stopped itself before a second agent: its budget was the landing's.
      const firstLoop = (await stack.client.workflow.getHandle(`${id}.fixup-1`).result()) as { outcome: string; failureType: string; sessions: unknown[] };
      assert.deepEqual([firstLoop.outcome, firstLoop.failureType, firstLoop.sessions.length], ['exhausted', 'budget-exhausted', 1]);
      const extended = await stack.api('POST', `/v1/runs/${id}/budget`, { action: 'extend', tokens: 10_000 });
      assert.equal(extended.status, 200, JSON.stringify(extended.body));
      const view = await finished(id);
      assert.equal(view.outcome.status, 'fixup-failed', view.outcome.summary);
      assert.equal(view.outcome.fixLoops.length, 2, 'the second round ran after the extension');
      assert.equal(view.budget.tokens, 10_500);
    });

    it('onExhausted stop, or an operator who stops the paused landing → budget-exhausted; nothing merged', async () => {
      const stopRepo = budgetRepo();
      const before = branchHead(stopRepo.path, 'main');
      const stopped = await finished(
        await land({ repo: stopRepo.url, branches: ['feature/b'], target: 'main', agents: spender, budget: { tokens: 500, onExhausted: 'stop' } }),
      );
      assert.equal(stopped.outcome.status, 'budget-exhausted', stopped.outcome.summary);
      assert.match(stopped.outcome.summary, /tokens: 600 used of 500/);
      assert.equal(branchHead(stopRepo.path, 'main'), before);

      const id = await land({ repo: budgetRepo().url, branches: ['feature/b'], target: 'main', agents: spender, budget: { tokens: 500 } });
      await pausedView(id);
      assert.equal((await stack.api('POST', `/v1/runs/${id}/budget`, { action: 'stop' })).status, 200);
      const view = await finished(id);
      assert.equal(view.outcome.status, 'budget-exhausted', view.outcome.summary);
      assert.match(view.outcome.summary, /stopped by an operator/);
    });
  });

  it('a landing that edits the gate file waits for an answer: an approval continues, empty ends needs-decision', async () => {
    const edits = (name: string) =>
      createFixtureRepo({
        base: { 'check.sh': 'true\n', '.config/tarmac/land-gate.json': gate() },
        branches: [{ name, commits: [{ message: 'loosen the gate', files: { '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['true'] }]) } }] }],
      });
    const ask = async (id: string) =>
      (
        await waitFor(
          () => stack.api('GET', `/v1/landings/${id}`),
          (response) => response.body.pendingQuestions?.length === 1,
          60_000,
          'the question',
        )
      ).body;

    const approved = edits('feature/gate');
    const first = await land({ repo: approved.url, branches: ['feature/gate'], target: 'main' });
    const waiting = await ask(first);
    assert.equal(waiting.phase, 'questions');
    assert.match(waiting.pendingQuestions[0].question, /land-gate\.json/);
    assert.equal((await stack.api('POST', `/v1/landings/${first}/answers`, { text: 'approved' })).status, 200);
    const landed = await finished(first);
    assert.equal(landed.outcome.status, 'landed', landed.outcome.summary);
    assert.equal(landed.outcome.questions[0].answer, 'approved');

    const refused = edits('feature/gate2');
    const before = branchHead(refused.path, 'main');
    const second = await land({ repo: refused.url, branches: ['feature/gate2'], target: 'main' });
    await ask(second);
    assert.equal((await stack.api('POST', `/v1/landings/${second}/answers`, { text: '' })).status, 200);
    const stopped = await finished(second);
    assert.equal(stopped.outcome.status, 'needs-decision');
    assert.equal(branchHead(refused.path, 'main'), before);
    const late = await stack.api('POST', `/v1/landings/${second}/answers`, { text: 'too late' });
    assert.equal(late.status, 409, 'an answer to a finished landing is refused');
    assert.equal(late.body.error.code, 'TARMAC_CONFLICT');
  });

  it('two landings on one target at once both merge, one at a time; the second is re-gated on the first; no force-push', async () => {
    const repo = createFixtureRepo({
      base: { 'check.sh': 'sleep 2\n', '.config/tarmac/land-gate.json': gate() },
      branches: [
        { name: 'feature/x', commits: [{ message: 'x', files: { 'x.txt': 'x\n' } }] },
        { name: 'feature/y', commits: [{ message: 'y', files: { 'y.txt': 'y\n' } }] },
      ],
    });
    keepRefLog(repo.path);
    const start = branchHead(repo.path, 'main');
    const ids = await Promise.all(['feature/x', 'feature/y'].map((branch) => land({ repo: repo.url, branches: [branch], target: 'main' })));
    const views = await Promise.all(ids.map((id) => finished(id)));
    for (const view of views) assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    const [first, second] = [...views].sort((a, b) => (a.outcome.targetSha === start ? -1 : b.outcome.targetSha === start ? 1 : 0));
    assert.equal(first.outcome.targetSha, start, 'the first merged onto the original head');
    assert.equal(second.outcome.targetSha, first.outcome.mergedSha, 'the second was rebased onto the first');
    const regate = second.outcome.gates.find((result: { round: number }) => result.round === 2);
    assert.ok(regate, 'the second was re-gated');
    assert.equal(regate.status, 'passed');
    assert.equal(regate.treeSha, treeOf(repo.path, 'main'), 'the re-gate ran on the tree that was merged');
    assert.equal(branchHead(repo.path, 'main'), second.outcome.mergedSha);
    // Every update of main was a fast-forward of the one before: no force-push.
    const updates = refUpdates(repo.path);
    assert.deepEqual(updates, [first.outcome.mergedSha, second.outcome.mergedSha]);
    assert.equal(git(repo.path, 'rev-parse', `${second.outcome.mergedSha}^`), first.outcome.mergedSha);
  });

  it('cancel mid-gate → cancelled; no container with the run label; unrelated mirror refs and worktrees untouched', async () => {
    const repo = createFixtureRepo({
      base: { 'check.sh': 'sleep 60\n', '.config/tarmac/land-gate.json': gate() },
      branches: [{ name: 'feature/slow', commits: [{ message: 'slow', files: { 's.txt': 's\n' } }] }],
    });
    const before = branchHead(repo.path, 'main');
    const id = await land({ repo: repo.url, branches: ['feature/slow'], target: 'main' });
    await runningContainer(stack.docker, [`tarmac.run=${id}`], 'the gate container', 60_000);
    // Someone else's things in the same mirror: cleanup must not touch them.
    const mirror = mirrorPath(stack.dataDir, repo.url);
    git(mirror, 'update-ref', 'refs/heads/someone-else', before);
    const otherWorktree = join(mkdtempSync(join(tmpdir(), 'tarmac-other-')), 'wt');
    git(mirror, 'worktree', 'add', '-q', '--detach', otherWorktree, before);

    const cancelled = await stack.api('POST', `/v1/landings/${id}/cancel`);
    assert.equal(cancelled.status, 202);
    const view = await finished(id);
    assert.equal(view.outcome.status, 'cancelled', view.outcome.summary);
    assert.equal((await cleanedUp(stack.dataDir, id)).workflowStatus, 'COMPLETED');
    const left = await stack.docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tarmac.run=${id}`] }) });
    assert.equal(left.length, 0, 'no container with the run label is left');
    assert.equal(git(mirror, 'rev-parse', 'refs/heads/someone-else'), before);
    assert.ok(existsSync(join(otherWorktree, 'check.sh')), 'the unrelated worktree is still there');
    assert.match(git(mirror, 'worktree', 'list'), /tarmac-other-/);
    assert.equal(existsSync(join(stack.dataDir, 'runs', id, 'worktree')), false, 'the run workspace is gone');
    assert.equal(branchHead(repo.path, 'main'), before);
    assert.equal(JSON.parse(readFileSync(join(stack.dataDir, 'runs', id, 'outcome.json'), 'utf8')).status, 'cancelled');
  });
});
