import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createRebaseActivities } from '../../activities/git/rebase';
import { runPaths } from '../../activities/stores/run-store';

/**
 * Found by the chaos suite (a landing ended dropped-commits after its worker was killed in its
 * placement): the rebase capsule saves "branch x in progress" before it runs `git rebase`, and a
 * call that found that state with no rebase running took HEAD as x's rebased head. A worker (and
 * the git it spawned) killed before the rebase ended left HEAD at the base, so the resumed call
 * reported x's commits dropped. Each case below is the state such a kill leaves, on a real
 * repository (git only); the resumed rebase must end as an uninterrupted one would.
 */
describe('the rebase capsule resumes a rebase its killed worker left half-done', () => {
  let root: string;
  let origin: string;
  let target: string;
  let feature: string;
  const git = (dir: string, ...args: string[]) =>
    execFileSync('git', ['-C', dir, '-c', 'user.name=T', '-c', 'user.email=t@t.invalid', ...args], { encoding: 'utf8' }).trim();
  const commit = (file: string, content: string, message: string) => {
    writeFileSync(join(origin, file), content);
    git(origin, 'add', file);
    git(origin, 'commit', '-q', '-m', message);
    return git(origin, 'rev-parse', 'HEAD');
  };

  before(() => {
    root = mkdtempSync(join(tmpdir(), 'tarmac-rebase-resume-'));
    origin = join(root, 'origin');
    mkdirSync(origin);
    git(origin, 'init', '-q', '-b', 'main');
    const base = commit('base.txt', 'base\n', 'base');
    git(origin, 'checkout', '-q', '-b', 'feature/x');
    commit('x.txt', 'x\n', 'x: add');
    feature = commit('x2.txt', 'x2\n', 'x: more');
    git(origin, 'checkout', '-q', 'main');
    target = commit('main.txt', 'main\n', 'main moves on');
    assert.notEqual(base, target);
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  /** A run's workspace at the target, and the state file as the killed call saved it. */
  function killedRun(name: string, state: object): { dataDir: string; runId: string; workspace: string } {
    const dataDir = join(root, name);
    const runId = `land.resume.${name}`;
    const { worktree, runDir } = runPaths(dataDir, runId);
    mkdirSync(runDir, { recursive: true });
    git(root, 'clone', '-q', origin, worktree);
    git(worktree, 'checkout', '-q', '--detach', target);
    writeFileSync(join(runDir, 'rebase-state.json'), JSON.stringify(state));
    return { dataDir, runId, workspace: worktree };
  }
  const heads = () => [{ branch: 'feature/x', sha: feature }];

  async function resumed(dataDir: string, runId: string) {
    const result = await createRebaseActivities({ dataDir }).rebaseBranches({ runId, targetSha: target, heads: heads() });
    assert.equal(result.status, 'done', JSON.stringify(result));
    if (result.status !== 'done') return;
    assert.deepEqual(result.dropped, [], 'no commit was dropped');
    assert.deepEqual(
      result.provenance.map((entry) => `${entry.subject}:${entry.how}`),
      ['x: add:identical', 'x: more:identical'],
    );
    assert.equal(result.commitsSince, 2);
  }

  it('killed after saving "in progress", before git began: HEAD is still the target; the branch is rebased again', async () => {
    const { dataDir, runId } = killedRun('before-git', { targetSha: target, applied: [], inProgress: 'feature/x' });
    await resumed(dataDir, runId);
  });

  it('killed mid-rebase (git left its state, no conflict): the interrupted rebase is undone and run again', async () => {
    const { dataDir, runId, workspace } = killedRun('mid-rebase', { targetSha: target, applied: [], inProgress: 'feature/x' });
    // A rebase stopped after it checked out the target and before it applied anything (`break` first).
    execFileSync(
      'git',
      [
        '-C',
        workspace,
        '-c',
        'user.name=T',
        '-c',
        'user.email=t@t.invalid',
        'rebase',
        '-i',
        '--onto',
        target,
        git(workspace, 'merge-base', target, feature),
        feature,
      ],
      {
        env: { ...process.env, GIT_SEQUENCE_EDITOR: "sed -i '1i break'" },
        stdio: 'ignore',
      },
    );
    assert.ok(existsSync(join(workspace, '.git', 'rebase-merge')), 'git left a rebase in progress');
    await resumed(dataDir, runId);
  });

  it('a rebase stopped at a real conflict is still reported as the conflict, for a resolver', async () => {
    const { dataDir, runId, workspace } = killedRun('conflict', { targetSha: target, applied: [], inProgress: 'feature/x' });
    // The same file changed on both sides of a branch of its own.
    git(workspace, 'checkout', '-q', '--detach', target);
    writeFileSync(join(workspace, 'main.txt'), 'other\n');
    git(workspace, 'commit', '-q', '-am', 'y: change main.txt');
    const other = git(workspace, 'rev-parse', 'HEAD');
    git(workspace, 'checkout', '-q', '--detach', target);
    writeFileSync(join(workspace, 'main.txt'), 'mine\n');
    git(workspace, 'commit', '-q', '-am', 'target: change main.txt');
    const moved = git(workspace, 'rev-parse', 'HEAD');
    assert.throws(() => git(workspace, 'rebase', '--onto', moved, target, other), 'the rebase stops at the conflict');
    const result = await createRebaseActivities({ dataDir }).rebaseBranches({ runId, targetSha: target, heads: heads() });
    assert.equal(result.status, 'conflict', JSON.stringify(result));
    if (result.status === 'conflict') assert.deepEqual(result.files, ['main.txt']);
  });
});
