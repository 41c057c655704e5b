import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { branchHead, createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { containersCreated, landingFinished, startStack, testToken, type Stack } from '../helpers/stack';

const root = resolve(__dirname, '../..');

/** `tarmac <args>` as a user runs it: the real binary, talking to the stack's API over HTTP. */
async function tarmac(stack: Stack, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', join(root, 'node_modules/tsx/dist/loader.mjs'), join(root, 'bin/tarmac.ts'), ...args],
      {
        cwd: root,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, TARMAC_API_URL: stack.apiUrl, TARMAC_API_TOKEN: testToken },
      },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

/**
 * Retry: a landing that did not land starts again on the same heads under a new run id, and the
 * old run keeps its history. The first run is reviewed by a panel, then its merge is refused by the
 * origin (a pre-receive hook: a cause outside the tree under review). The hook is removed and the
 * landing retried: the same heads on the same target give the same tree, so the re-review is free
 * (REVIEW_CACHE=hit, no reviewer session started), so is the gate (GATE_CACHE=hit, no container), and
 * the retry lands.
 */
describe('retrying a landing that did not land', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(async () => {
    await stack?.stop();
  });

  it('a landing refused at the merge, retried once the cause is gone, re-reviews from the cache and lands; the first run keeps its outcome', async () => {
    const repo = createFixtureRepo({
      base: {
        'check.sh': 'true\n',
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], {
          review: { panel: 'script-trio', quorum: 3 },
          fixup: { maxRounds: 0 },
        }),
      },
      branches: [{ name: 'feature/r', commits: [{ message: 'feature', files: { 'src/retry.js': 'module.exports = 2; // TODO: name it\n' } }] }],
    });
    // The origin refuses every push (a protected branch, a server hook): the landing's merge fails.
    const hook = join(repo.path, 'hooks', 'pre-receive');
    writeFileSync(hook, '#!/bin/sh\necho "main is frozen for the release" >&2\nexit 1\n');
    chmodSync(hook, 0o755);
    const target = branchHead(repo.path, 'main');
    const body = { repo: repo.url, branches: ['feature/r'], target: 'main' };

    const began = Math.floor(Date.now() / 1000);
    const created = await stack.api('POST', '/v1/landings', body);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const first = created.body.id as string;
    const running = await stack.api('POST', `/v1/landings/${first}/retry`);
    assert.equal(running.status, 409, JSON.stringify(running.body));
    assert.equal(running.body.error.code, 'TARMAC_CONFLICT');
    assert.match(running.body.error.message, /still running/);

    const failed = (await landingFinished(stack, first, 300_000)).outcome;
    assert.notEqual(failed.status, 'landed', failed.summary);
    assert.equal(failed.endedInPhase, 'merge', failed.summary);
    // Refused by the origin itself: said so at once with git's reason, not retried as if transient.
    assert.equal(failed.failure.type, 'TARMAC_PUSH_REFUSED', failed.summary);
    assert.match(failed.summary, /the origin refused the push of [0-9a-f]{12} to main: \[remote rejected\] .*pre-receive hook declined/);
    assert.equal(failed.reviews[0].status, 'approved');
    assert.equal(failed.reviews[0].cache, 'miss');
    assert.equal(failed.reviews[0].sessionsStarted, 3);
    assert.equal(branchHead(repo.path, 'main'), target, 'nothing was merged');
    // The same request is still the same run: a duplicate, not a new start.
    const duplicate = await stack.api('POST', '/v1/landings', body);
    assert.deepEqual({ status: duplicate.status, id: duplicate.body.id, duplicate: duplicate.body.duplicate }, { status: 200, id: first, duplicate: true });

    rmSync(hook);
    const since = Math.floor(Date.now() / 1000);
    const cli = await tarmac(stack, ['retry', first, '--json']);
    assert.equal(cli.code, 0, cli.stderr);
    const retried = JSON.parse(cli.stdout) as { id: string; duplicate: boolean; retryOf: string; attempt: number; heads: unknown };
    assert.deepEqual(
      { id: retried.id, duplicate: retried.duplicate, retryOf: retried.retryOf, attempt: retried.attempt },
      { id: `${first}.retry-2`, duplicate: false, retryOf: first, attempt: 2 },
    );
    assert.deepEqual(retried.heads, created.body.heads, 'the same heads');
    assert.equal((await stack.client.workflow.getHandle(retried.id).describe()).memo?.retryOf, first, 'the memo names the run it retries');

    const view = await landingFinished(stack, retried.id);
    const landed = view.outcome;
    assert.equal(landed.status, 'landed', landed.summary);
    assert.equal(landed.treeSha, failed.treeSha, 'the same tree as the first run reviewed');
    assert.equal(landed.reviews[0].cache, 'hit');
    assert.equal(landed.reviews[0].sessionsStarted, 0);
    assert.deepEqual(landed.reviews[0].restored, ['script#reviewer-a', 'script#reviewer-b', 'script#reviewer-c']);
    assert.match(view.steps.find((step: { name: string }) => step.name.startsWith('review.panel')).detail, /REVIEW_CACHE=hit/);
    assert.equal(
      await containersCreated(stack.docker, since, ['tarmac.role=reviewer', `tarmac.run=${retried.id}`]),
      0,
      'no reviewer container was started for the retry',
    );
    // Its gate too is reused: the first run sealed the suite's result on this tree (GATE_CACHE=hit, no container at all).
    assert.equal(landed.gates[0].cache, 'hit');
    assert.equal(await containersCreated(stack.docker, since, [`tarmac.run=${retried.id}`]), 0, 'the retry made no container: no gate, no reviewer');
    assert.equal(
      await containersCreated(stack.docker, began, [`tarmac.run=${first}`, 'tarmac.role=gate']),
      1,
      "the first run's gate container: the count sees it",
    );
    assert.equal(branchHead(repo.path, 'main'), landed.mergedSha);

    // The first run keeps its id, its history and its outcome.
    const kept = await stack.api('GET', `/v1/landings/${first}`);
    assert.equal(kept.status, 200);
    assert.deepEqual({ status: kept.body.outcome.status, summary: kept.body.outcome.summary }, { status: failed.status, summary: failed.summary });
    // A landed run is not retried; asking again for the first finds the same retry.
    const again = await stack.api('POST', `/v1/landings/${first}/retry`);
    assert.deepEqual({ status: again.status, id: again.body.id, duplicate: again.body.duplicate }, { status: 200, id: retried.id, duplicate: true });
    const refused = await tarmac(stack, ['retry', retried.id]);
    assert.equal(refused.code, 2, refused.stdout);
    assert.match(refused.stderr, /landed.*nothing to retry/);
  });
});
