import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gateFilePath } from '../../core/gate-file';
import { branchHead, createFixtureRepo, gateFile, type FixtureRepo } from '../../infra/fixture-repo';
import { landingFinished, runningContainer, startStack, waitFor, type Stack } from '../helpers/stack';

/**
 * The gate file decides what every later landing must pass. A landing (its branch, its
 * fixer, or a rebase onto a moved target) that changes it must not merge without an
 * explicit approval of exactly that version, and a target that moves while a landing
 * waits is gated by what the target declares now. The files that declare the environment
 * (a devcontainer, the Dockerfile a declaration names) are asked about the same way.
 */
describe('security: the gate file does not change without an explicit approval', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(async () => {
    await stack?.stop();
  });

  const strictGate = gateFile([{ id: 'test', run: ['sh', 'check.sh'] }]);
  const permissiveGate = gateFile([{ id: 'test', run: ['true'] }]);

  async function land(repo: FixtureRepo, branch: string, extra: Record<string, unknown> = {}) {
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: [branch], target: 'main', ...extra });
    assert.ok(created.status === 201, JSON.stringify(created.body));
    return created.body.id as string;
  }
  const finished = (id: string) => landingFinished(stack, id);
  /** Waits for the landing's one pending question (or its end: a landing that never asks fails here). */
  async function question(id: string) {
    const view = await waitFor(
      () => stack.api('GET', `/v1/landings/${id}`),
      (response) => response.body?.pendingQuestions?.length === 1 || (response.body?.workflowStatus && response.body.workflowStatus !== 'RUNNING'),
      180_000,
      `landing ${id} to ask`,
    );
    assert.equal(view.body.pendingQuestions?.length, 1, `the landing did not ask; outcome: ${JSON.stringify(view.body.outcome?.summary)}`);
    return view.body;
  }
  async function answer(id: string, text: string) {
    const answered = await stack.api('POST', `/v1/landings/${id}/answers`, { text });
    assert.equal(answered.status, 200, JSON.stringify(answered.body));
  }
  /** Commits on a new branch of the fixture's clone: `files` written, `moves` renamed with git mv. */
  function branchWith(repo: FixtureRepo, name: string, change: { files?: Record<string, string>; moves?: [string, string][] }) {
    repo.git('checkout', '-q', '-B', name, 'main');
    for (const [from, to] of change.moves ?? []) repo.git('mv', from, to);
    for (const [file, content] of Object.entries(change.files ?? {})) {
      mkdirSync(dirname(join(repo.clone, file)), { recursive: true });
      writeFileSync(join(repo.clone, file), content);
    }
    repo.git('add', '-A');
    repo.git('commit', '-q', '-m', `${name}: change`);
    repo.git('push', '-q', 'origin', name);
    repo.git('checkout', '-q', 'main');
  }

  it('a branch that edits the gate file: "ok sure" is not an approval (needs-decision, not merged); "approve" lands it', async () => {
    const base = { 'check.sh': 'true\n', [gateFilePath]: strictGate };
    const refusedRepo = createFixtureRepo({
      base,
      branches: [{ name: 'feature/loosen', commits: [{ message: 'loosen the gate', files: { [gateFilePath]: permissiveGate } }] }],
    });
    const approvedRepo = createFixtureRepo({
      base,
      branches: [{ name: 'feature/loosen', commits: [{ message: 'loosen the gate', files: { [gateFilePath]: permissiveGate } }] }],
    });
    const before = branchHead(refusedRepo.path, 'main');

    const refused = await land(refusedRepo, 'feature/loosen');
    const asked = await question(refused);
    assert.equal(asked.phase, 'questions');
    assert.match(asked.pendingQuestions[0].question, /edits \.config\/tarmac\/land-gate\.json/);
    assert.match(asked.pendingQuestions[0].question, /"approve", "approved", "yes"/, 'the question names the words that approve');
    await answer(refused, 'ok sure');
    const stopped = await finished(refused);
    assert.equal(stopped.outcome.status, 'needs-decision', stopped.outcome.summary);
    assert.match(stopped.outcome.summary, /the answer "ok sure" is not an approval/);
    assert.equal(stopped.gates.length, 0, 'no gate ran for the unapproved change');
    assert.equal(branchHead(refusedRepo.path, 'main'), before, 'nothing was merged');

    const approved = await land(approvedRepo, 'feature/loosen');
    await question(approved);
    await answer(approved, '  Approve ');
    const landed = await finished(approved);
    assert.equal(landed.outcome.status, 'landed', landed.outcome.summary);
    assert.equal(branchHead(approvedRepo.path, 'main'), landed.outcome.mergedSha);
    assert.equal(approvedRepo.git('-C', approvedRepo.path, 'show', `main:${gateFilePath}`), permissiveGate.trim(), 'the approved version is the one merged');
  });

  it('a branch that renames the gate file away (and adds a permissive one elsewhere) is asked about; an empty answer stops it', async () => {
    const repo = createFixtureRepo({ base: { 'check.sh': 'true\n', [gateFilePath]: strictGate } });
    // With rename detection this diff lists only the new names; the gate file's own path must still count.
    branchWith(repo, 'feature/rename', { moves: [[gateFilePath, '.config/tarmac/land-gate.old.json']], files: { 'land-gate.json': permissiveGate } });
    const before = branchHead(repo.path, 'main');
    const id = await land(repo, 'feature/rename');
    const asked = await question(id);
    assert.match(asked.pendingQuestions[0].question, /deletes \.config\/tarmac\/land-gate\.json/);
    await answer(id, '');
    const view = await finished(id);
    assert.equal(view.outcome.status, 'needs-decision', view.outcome.summary);
    assert.match(view.outcome.summary, /empty answer/);
    assert.equal(branchHead(repo.path, 'main'), before, 'nothing was merged');
  });

  it("a branch that edits only the Dockerfile the target's environment names is asked about before anything is built; an empty answer stops it", async () => {
    // The environment is never built here: the question comes first, and the empty answer ends the landing.
    const environment = { dockerfile: 'env/Dockerfile', setup: [], inputs: ['env/Dockerfile'] };
    const repo = createFixtureRepo({
      base: {
        'check.sh': 'true\n',
        [gateFilePath]: gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], { environment }),
        'env/Dockerfile': 'FROM tarmac/runner:bookworm\n',
      },
      branches: [
        {
          name: 'feature/env',
          commits: [{ message: 'fetch more in the environment', files: { 'env/Dockerfile': 'FROM tarmac/runner:bookworm\nRUN echo reaches out\n' } }],
        },
      ],
    });
    const before = branchHead(repo.path, 'main');
    const id = await land(repo, 'feature/env');
    const asked = await question(id);
    assert.equal(asked.phase, 'questions');
    assert.match(
      asked.pendingQuestions[0].question,
      /^After the rebase, this landing edits env\/Dockerfile \(head [0-9a-f]{12}\), a file that declares the repository's environment\./,
    );
    assert.doesNotMatch(asked.pendingQuestions[0].question, /land-gate\.json/, 'the gate file did not change: the question does not name it');
    await answer(id, '');
    const view = await finished(id);
    assert.equal(view.outcome.status, 'needs-decision', view.outcome.summary);
    assert.equal(view.outcome.summary, 'stopped: the change of env/Dockerfile was not approved (empty answer); nothing was merged');
    assert.equal(view.outcome.failure.file, 'env/Dockerfile');
    assert.equal(view.gates.length, 0, 'no gate ran');
    assert.equal(view.outcome.environments, undefined, 'no environment was built or used');
    assert.equal(branchHead(repo.path, 'main'), before, 'nothing was merged');
  });

  it('a fixer whose fixup commit rewrites the gate file is asked about before the re-gate counts; without an approval it is not merged', async () => {
    const repo = createFixtureRepo({
      base: { 'check.sh': 'test -f FIXED || { echo "FIXED is missing"; exit 4; }\n', [gateFilePath]: strictGate },
      branches: [{ name: 'feature/f', commits: [{ message: 'feature without the fix', files: { 'feature.txt': 'f\n' } }] }],
    });
    const before = branchHead(repo.path, 'main');
    // The fixer makes the suite pass and also drops it from the gate file.
    stack.scriptScenario('fix-and-rewrite-gate', {
      edits: [
        { file: 'FIXED', replace: 'yes\n' },
        { file: gateFilePath, replace: gateFile([{ id: 'nothing', run: ['true'] }]) },
      ],
    });
    const fixerRewritesGate = { fixer: 'script#fixer:fix-and-rewrite-gate', ladder: ['script#fixer:fix-and-rewrite-gate'] };
    const id = await land(repo, 'feature/f', { agents: fixerRewritesGate });
    const asked = await question(id);
    assert.equal(asked.phase, 'questions');
    assert.match(asked.pendingQuestions[0].question, /^After fixup round 1, this landing edits \.config\/tarmac\/land-gate\.json/);
    assert.deepEqual(
      asked.gates.map((result: { status: string }) => result.status),
      ['failed'],
      'only the first (red) gate ran: the re-gate waits for the answer',
    );
    await answer(id, 'fine by me');
    const view = await finished(id);
    assert.equal(view.outcome.status, 'needs-decision', view.outcome.summary);
    assert.match(view.outcome.summary, /the answer "fine by me" is not an approval/);
    assert.equal(view.outcome.fixLoops[0].outcome, 'fixed', 'the fixer did commit its change');
    assert.deepEqual(
      view.outcome.gates.map((result: { round: number; status: string }) => `${result.round}:${result.status}`),
      ['1:failed'],
      'no re-gate counted',
    );
    assert.equal(branchHead(repo.path, 'main'), before, 'nothing was merged');
  });

  describe('a target that moves while the landing waits', () => {
    let landings = 0;
    /** A landing whose gate is slow enough to push to its target meanwhile (a tree of its own: no gate-cache hit, its gate runs). */
    async function landWhileTargetMoves(targetChange: Record<string, string>) {
      landings += 1;
      const repo = createFixtureRepo({
        base: { 'check.sh': 'sleep 4\n', [gateFilePath]: strictGate, 'landing.txt': `${landings}\n` },
        branches: [{ name: 'feature/m', commits: [{ message: 'a feature', files: { 'feature.txt': 'forbidden\n' } }] }],
      });
      const id = await land(repo, 'feature/m');
      await runningContainer(stack.docker, [`tarmac.run=${id}`], 'the first gate container', 90_000);
      for (const [file, content] of Object.entries(targetChange)) {
        mkdirSync(dirname(join(repo.clone, file)), { recursive: true });
        writeFileSync(join(repo.clone, file), content);
      }
      repo.git('add', '-A');
      repo.git('commit', '-q', '-m', 'the target changes its gate');
      repo.git('push', '-q', 'origin', 'main');
      return { repo, id, moved: branchHead(repo.path, 'main') };
    }

    it('a new suite the moved target declares runs in the re-gate; it fails on the landing → not merged', async () => {
      const { repo, id, moved } = await landWhileTargetMoves({
        'lint.sh': 'if grep -q forbidden feature.txt 2>/dev/null; then echo "feature.txt says forbidden"; exit 5; fi\n',
        [gateFilePath]: gateFile([
          { id: 'test', run: ['sh', 'check.sh'] },
          { id: 'lint', run: ['sh', 'lint.sh'] },
        ]),
      });
      const view = await finished(id);
      assert.equal(view.outcome.status, 'gate-failed', view.outcome.summary);
      assert.match(view.outcome.summary, /^re-gate after main moved: gate suite lint exited 5/);
      const lint = view.outcome.gates.filter((result: { suiteId: string }) => result.suiteId === 'lint');
      assert.deepEqual(
        lint.map((result: { round: number; status: string }) => `${result.round}:${result.status}`),
        ['2:failed'],
        'the new suite ran in the re-gate',
      );
      assert.equal(branchHead(repo.path, 'main'), moved, 'the landing did not merge');
    });

    it('an invalid gate file on the moved target → invalid-gate-file; not merged', async () => {
      const { repo, id, moved } = await landWhileTargetMoves({ [gateFilePath]: '{ "version": 1, "suites": [] }\n' });
      const view = await finished(id);
      assert.equal(view.outcome.status, 'invalid-gate-file', view.outcome.summary);
      assert.equal(view.outcome.failure.field, 'suites');
      assert.match(view.outcome.summary, /read after main moved to/);
      assert.equal(branchHead(repo.path, 'main'), moved, 'the landing did not merge');
    });
  });
});
