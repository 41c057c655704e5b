import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { automationGit, catFileBatch } from '../../activities/git/git';
import { createRebaseActivities } from '../../activities/git/rebase';

/**
 * The host's git plumbing on a real repository in a temp dir (git only: no Temporal, no Docker):
 * one cat-file --batch for several objects, git's own message on a failure, and the patch check's
 * one patch-id stream telling a rebased copy from a resolved one.
 */
describe('host git: direct spawns, one cat-file batch, one patch-id stream', () => {
  let dir: string;
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', dir, '-c', 'user.name=T', '-c', 'user.email=t@t.invalid', ...args], { encoding: 'utf8' }).trim();
  const commit = (file: string, content: string, message: string) => {
    writeFileSync(join(dir, file), content);
    git('add', file);
    git('commit', '-q', '-m', message);
    return git('rev-parse', 'HEAD');
  };
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tarmac-host-git-'));
    git('init', '-q', '-b', 'main');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('catFileBatch resolves every name in one process: blobs with their bytes, trees by oid, null for what does not resolve', async () => {
    const first = commit('a.txt', 'alpha\n', 'a');
    const [blob, tree, commitObject, missingPath, missingSha, odd] = await catFileBatch(dir, [
      `${first}:a.txt`,
      `${first}^{tree}`,
      `${first}^{commit}`,
      `${first}:nope.txt`,
      `${'0'.repeat(40)}^{commit}`,
      'refs/heads/does-not-exist',
    ]);
    assert.deepEqual(
      { type: blob?.type, content: blob?.content.toString('utf8'), oid: blob?.oid },
      { type: 'blob', content: 'alpha\n', oid: git('rev-parse', `${first}:a.txt`) },
    );
    assert.equal(tree?.oid, git('rev-parse', `${first}^{tree}`));
    assert.equal(tree?.type, 'tree');
    assert.equal(commitObject?.oid, first);
    assert.deepEqual([missingPath, missingSha, odd], [null, null, null]);
  });

  it('catFileBatch refuses a name with a line break (it would read as two names)', async () => {
    await assert.rejects(catFileBatch(dir, ['HEAD\nHEAD']), /line break/);
  });

  it("a failing git call throws git's own message", async () => {
    await assert.rejects(automationGit(dir).revparse(['--verify', 'no-such-ref^{commit}']), /Needed a single revision|fatal/);
  });

  it('the patch check tells an identical rebased copy from a resolved one (one patch-id stream)', async () => {
    commit('base.txt', 'base\n', 'base');
    git('checkout', '-q', '-b', 'feature');
    commit('f.txt', 'one\n', 'feature one');
    commit('g.txt', 'two\n', 'feature two');
    const feature = git('rev-parse', 'HEAD');
    git('checkout', '-q', 'main');
    commit('m.txt', 'main\n', 'main moves');
    const target = git('rev-parse', 'HEAD');
    // The workspace as the rebase leaves it: the first commit copied as is, the second changed on the way.
    const dataDir = mkdtempSync(join(tmpdir(), 'tarmac-host-git-data-'));
    const runId = 'r1';
    const worktree = join(dataDir, 'runs', runId, 'worktree');
    execFileSync('git', ['clone', '-q', dir, worktree]);
    const inWorktree = (...args: string[]) =>
      execFileSync('git', ['-C', worktree, '-c', 'user.name=T', '-c', 'user.email=t@t.invalid', ...args], { encoding: 'utf8' }).trim();
    inWorktree('checkout', '-q', '--detach', target);
    inWorktree('cherry-pick', feature + '~1');
    inWorktree('cherry-pick', '--no-commit', feature);
    writeFileSync(join(worktree, 'g.txt'), 'two, resolved\n');
    inWorktree('add', 'g.txt');
    // Same author, date and subject as the original: the patch check pairs them by identity.
    const original = inWorktree('log', '-1', '--format=%an%x00%ae%x00%ad', '--date=raw', feature).split('\0');
    execFileSync('git', [
      '-C',
      worktree,
      '-c',
      'user.name=T',
      '-c',
      'user.email=t@t.invalid',
      'commit',
      '-q',
      '-m',
      'feature two',
      `--author=${original[0]} <${original[1]}>`,
      `--date=${original[2]}`,
    ]);
    const { provenance, dropped } = await createRebaseActivities({ dataDir }).checkPatches({
      runId,
      targetSha: target,
      heads: [{ branch: 'feature', sha: feature }],
    });
    assert.deepEqual(
      provenance.map(({ subject, how }) => ({ subject, how })),
      [
        { subject: 'feature one', how: 'identical' },
        { subject: 'feature two', how: 'resolved' },
      ],
    );
    assert.deepEqual(dropped, []);
    rmSync(dataDir, { recursive: true, force: true });
  });
});
