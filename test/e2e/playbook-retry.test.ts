import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createFixActivities } from '../../activities/fix/fix';
import { commitFiles, git } from '../helpers/git';

const missingUp = "make: *** No rule to make target 'up'.  Stop.\n";
const makefile = 'test:\n\ttrue\n';

/**
 * The playbook capsule is retried when its worker dies mid-call (the chaos suite kills workers at
 * random). A retry must leave the workspace as one call would have: one commit, the edit once —
 * whether the first attempt died after its commit or between writing the files and committing.
 * Real git in a real workspace; the activity's context (its id and attempt) from the SDK's
 * MockActivityEnvironment, as a retry's would be.
 */
describe('the playbook capsule is idempotent across retries', () => {
  let base: string;
  before(() => {
    base = mkdtempSync(join(tmpdir(), 'tarmac-playbook-retry-'));
  });
  after(() => rmSync(base, { recursive: true, force: true }));

  function workspace(runId: string) {
    const dataDir = join(base, runId);
    const worktree = join(dataDir, 'runs', runId, 'worktree');
    mkdirSync(join(worktree, 'scripts'), { recursive: true });
    writeFileSync(join(worktree, 'Makefile'), makefile);
    writeFileSync(join(worktree, 'scripts', 'up.sh'), 'echo up\n');
    const head = commitFiles(worktree, 'base');
    mkdirSync(join(dataDir, 'logs'), { recursive: true });
    writeFileSync(join(dataDir, 'logs', 'repro.log'), missingUp);
    return { dataDir, worktree, base: head };
  }
  type Applied = Awaited<ReturnType<ReturnType<typeof createFixActivities>['applyPlaybook']>>;
  const apply = (dataDir: string, runId: string, info: { activityId: string; attempt: number }): Promise<Applied> =>
    new MockActivityEnvironment({ ...info, workflowExecution: { workflowId: `wf-${runId}`, runId: 'run-1' } }).run(() =>
      createFixActivities({ dataDir }).applyPlaybook({ runId, logRef: 'logs/repro.log' }),
    );
  const targets = (worktree: string) => readFileSync(join(worktree, 'Makefile'), 'utf8').match(/^up:$/gm)?.length ?? 0;

  it('a retry after the commit: the same answer, no second commit, the target once', async () => {
    const { dataDir, worktree, base: head } = workspace('after-commit');
    const first = await apply(dataDir, 'after-commit', { activityId: '7', attempt: 1 });
    assert.equal(first?.playbookId, 'make-target-from-script');
    const committed = git(worktree, 'rev-parse', 'HEAD');
    assert.notEqual(committed, head);
    const retry = await apply(dataDir, 'after-commit', { activityId: '7', attempt: 2 });
    assert.deepEqual(retry, first, 'the retry answers what the first attempt did');
    assert.equal(git(worktree, 'rev-parse', 'HEAD'), committed, 'no second commit');
    assert.equal(targets(worktree), 1);
    assert.match(git(worktree, 'log', '-1', '--format=%B'), /^Tarmac-Playbook-Step: wf-after-commit\/run-1\/7$/m);
  });

  it('a retry after the files were written but not committed: the edit is made once, on the committed file', async () => {
    // What the playbook writes, from a workspace of its own.
    const reference = workspace('reference');
    await apply(reference.dataDir, 'reference', { activityId: '7', attempt: 1 });
    const { dataDir, worktree, base: head } = workspace('half-written');
    // What a first attempt that died before its commit leaves: the edited Makefile, uncommitted.
    writeFileSync(join(worktree, 'Makefile'), readFileSync(join(reference.worktree, 'Makefile')));
    assert.equal(targets(worktree), 1);
    const retry = await apply(dataDir, 'half-written', { activityId: '7', attempt: 2 });
    assert.equal(retry?.playbookId, 'make-target-from-script');
    assert.equal(git(worktree, 'rev-list', '--count', `${head}..HEAD`), '1');
    assert.equal(targets(worktree), 1, readFileSync(join(worktree, 'Makefile'), 'utf8'));
    assert.equal(git(worktree, 'status', '--porcelain'), '', 'nothing left uncommitted');
  });

  it('another activity (a later link of the chain) is not mistaken for the retry of the first', async () => {
    const { dataDir, worktree } = workspace('next-link');
    await apply(dataDir, 'next-link', { activityId: '7', attempt: 1 });
    const committed = git(worktree, 'rev-parse', 'HEAD');
    // The failure is repaired: a later activity finds no playbook that applies, and says so.
    const later = await apply(dataDir, 'next-link', { activityId: '9', attempt: 1 });
    assert.equal(later, null);
    assert.equal(git(worktree, 'rev-parse', 'HEAD'), committed);
  });
});
