import assert from 'node:assert/strict';
import { createFixtureRepo, gateFile, type FixtureRepo } from '../../infra/fixture-repo';
import { waitFor, type Stack } from './stack';
import { keepRefLog } from './git';

/**
 * A target repository for merge-queue tests (batches of 4). Its gate is `sh check.sh`. The pacer
 * landing (`feature/p`, file `p`) makes the queue hold the target while the landings under test
 * arrive, so they wait together: its own gate sleeps 10 s (the test pushes `tick` to the target
 * as soon as that gate's container runs), so its merge finds the target moved and it waits for a
 * batch, whose gate round (p and tick, no feature yet) sleeps until the test cancels the pacer
 * (`releaseTarget`), however long the others take to arrive. Feature `b` is bad in company:
 * red when any other feature is on the tree (until a fixer writes FIXED). Feature `flaky` is flaky in
 * company: with another feature, the first run of a tree fails and the run again passes.
 */
let fixtures = 0;

export function queueRepo(features: string[], { batchSize = 4, environment }: { batchSize?: number; environment?: Record<string, unknown> } = {}): FixtureRepo {
  const check = [
    // With an environment whose setup lists the features it was built from: it must be this tree's.
    ...(environment ? ['ls features 2>/dev/null > /tmp/now; cmp -s /tmp/now env-features.txt || { echo "the environment is not of this tree"; exit 8; }'] : []),
    'if [ -f p ] && [ ! -f tick ]; then sleep 10; fi',
    'if [ -f p ] && [ -f tick ] && ! ls features/* >/dev/null 2>&1; then echo "pacer holds the target"; sleep 300; fi',
    'if [ -f features/b ] && [ ! -f FIXED ] && [ "$(ls features | wc -l)" -gt 1 ]; then echo "b cannot share the features dir"; exit 5; fi',
    // A stack of two good features (a bisection's second round, in a batch of four with b last) takes 5 s: time to kill the worker in it.
    'if [ -d features ] && [ "$(ls features | wc -l)" -eq 2 ] && [ ! -f features/b ]; then sleep 5; fi',
    // Flaky in company: the first run of a tree with `flaky` and another feature fails, a second run of it passes.
    'if [ -f features/flaky ] && [ "$TARMAC_GATE_ATTEMPT" = 1 ] && [ "$(ls features | wc -l)" -gt 1 ]; then echo "flaky: fails on its first run"; exit 7; fi',
    'echo "ok: $(ls features 2>/dev/null | tr "\\n" " ")"',
    '',
  ].join('\n');
  const repo = createFixtureRepo({
    // A README of its own: no tree here equals one of another fixture (gate results are reused by tree).
    base: {
      'check.sh': check,
      README: `merge queue fixture ${process.pid}.${Date.now()}.${(fixtures += 1)}\n`,
      '.config/tarmac/land-gate.json': gateFile([{ id: 'check', run: ['sh', 'check.sh'], timeout: '6m' }], {
        queue: { batchSize },
        fixup: { maxRounds: 1 },
        ...(environment ? { environment } : {}),
      }),
    },
    branches: [
      { name: 'feature/p', commits: [{ message: 'pacer', files: { p: 'p\n' } }] },
      ...features.map((name) => ({ name: `feature/${name}`, commits: [{ message: `feature ${name}`, files: { [`features/${name}`]: `${name}\n` } }] })),
    ],
  });
  // The origin keeps a reflog of the target: every value it took, in order.
  keepRefLog(repo.path);
  return repo;
}

export async function startLanding(stack: Pick<Stack, 'api'>, repo: FixtureRepo, branch: string, extra: Record<string, unknown> = {}): Promise<string> {
  const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: [branch], target: 'main', ...extra });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body.id as string;
}

export const landingPhase = async (stack: Pick<Stack, 'api'>, id: string): Promise<string> =>
  (await stack.api('GET', `/v1/landings/${id}`)).body.phase as string;

/**
 * Lands the pacer and pushes `tick` to the target while its gate's container runs; returns (its id)
 * once it holds the target: its merge finds the target moved, so it waits for a batch (a batch of
 * one), which restacks it on the moved target and gates it — the long sleep — until
 * `releaseTarget` cancels the pacer and the batch gives up on it. The landings started after this all wait.
 */
export async function holdTarget(stack: Pick<Stack, 'api' | 'docker'>, repo: FixtureRepo): Promise<string> {
  const pacer = await startLanding(stack, repo, 'feature/p');
  await waitFor(
    () => stack.docker.listContainers({ filters: JSON.stringify({ label: [`tarmac.run=${pacer}`], status: ['running'] }) }),
    (list) => list.length > 0,
    120_000,
    "the pacer's gate to run",
  );
  repo.advanceTarget('tick', { tick: 'tick\n' });
  assert.equal(await landingPhase(stack, pacer), 'gate', 'the target moved while the pacer gated (its merge will find it moved)');
  // Its merge finds the target moved: it waits for a batch, which restacks it and gates it (the long sleep) holding the target.
  await waitFor(
    () => stack.api('GET', `/v1/queues/${encodeURIComponent(repo.url)}/main`),
    (response) => response.body?.batch?.members?.includes(pacer) === true,
    120_000,
    'the pacer to hold the target in a batch',
  );
  return pacer;
}

/** Waits until every landing waits in the queue (the pacer holds the target meanwhile). */
export async function allWaiting(stack: Pick<Stack, 'api'>, pacer: string, ids: string[]): Promise<void> {
  await waitFor(
    async () => await Promise.all(ids.map((id) => landingPhase(stack, id))),
    (phases) => phases.every((entry) => entry === 'queue'),
    180_000,
    'every landing to wait in the queue',
  );
  assert.notEqual(await landingPhase(stack, pacer), 'done', 'the pacer still holds the target');
}

/** Cancels the pacer: its batch drops it (the round in flight stops) and gives the target back; the waiting landings go. */
export async function releaseTarget(stack: Pick<Stack, 'api'>, pacer: string): Promise<void> {
  const cancelled = await stack.api('POST', `/v1/landings/${pacer}/cancel`);
  assert.equal(cancelled.status, 202, JSON.stringify(cancelled.body));
}
