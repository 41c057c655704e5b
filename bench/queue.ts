/**
 * The merge queue (issue 17): N one-commit landings (default 8) admitted at once to one target,
 * once with batch size 1 (no `queue` in the gate file: one merge at a time) and once with
 * speculative batches (default 4), side by side in one run, each variant on a fresh origin of its
 * own (every tree unique: a README of its own, so no gate result is reused by tree across them).
 * The gate is a realistic suite: `sleep 2` and a check. Reports per variant the wall time (first
 * POST → the last landing's workflow result), the gate containers made (Docker's event stream,
 * `tarmac.role=gate`, by the run that made them: a landing or a batch), the target's moves (the
 * origin's reflog; fast-forwards only or not), the batches run (size, rounds, landed), the
 * landings merged alone and the queue's turns; and the ratio batch-1 wall / batch-N wall. The variants alternate which
 * goes first from one repetition to the next. A landing that does not land fails the section.
 */
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type Docker from 'dockerode';
import type { BatchOutcome } from '../core/batch-types';
import { createFixtureRepo, gateFile, type FixtureRepo } from '../infra/fixture-repo';
import { isAncestor, keepRefLog, refValues } from '../test/helpers/git';
import type { Stack } from '../test/helpers/stack';
import { middleOf, percentile } from './stats';

interface QueueOptions {
  landings: number;
  batchSize: number;
  repeats: number;
}

interface QueueVariant {
  /** 1: one merge at a time (no `queue` in the gate file). */
  batchSize: number;
  wallMs: number;
  /** POST → workflow result, per landing: the first landed, the median, the last. */
  firstMs: number;
  p50Ms: number;
  maxMs: number;
  gateContainers: { total: number; byLandings: number; byBatches: number };
  /** How many values the target took after the fixture was made, and whether each was a fast-forward of the one before. */
  targetMoves: number;
  fastForwardsOnly: boolean;
  /** Landings that merged by themselves (admitted alone: the first on a free target, or every one at batch size 1). */
  mergedAlone: number;
  batches: { id: string; size: number; rounds: number; landed: number; merges: number }[];
  gateRounds: number;
  /** The target queue's turns, oldest first: how long each landing held the target, or each batch ran (the queue view's recentTurnMs). */
  turnsMs: number[];
}

export interface QueueRun {
  repetition: number;
  order: number[];
  variants: QueueVariant[];
  /** Batch-1 wall time / batch-N wall time. */
  ratio: number;
}

export interface QueueReport {
  landings: number;
  batchSize: number;
  repeats: number;
  gate: string;
  runs: QueueRun[];
  /** Medians over the repetitions (of an even number, the mean of the middle two). */
  medianWallMs: Record<string, number>;
  /** Median over the repetitions of batch-1 wall / batch-N wall. */
  medianRatio: number;
}

interface LandingOutcome {
  status: string;
  summary?: string;
  batch?: { id: string; members: string[] };
}

const gateScript =
  'sleep 2\ntest -s README || { echo "README missing"; exit 1; }\necho "ok: $(ls features 2>/dev/null | wc -l) feature(s) on $(head -1 README)"\n';
let fixtures = 0;

/** A fresh origin: `landings` branches `feature/q<i>` each adding its own file; the gate asks for batches of `batchSize` when > 1. */
function queueBenchFixture(landings: number, batchSize: number): { repo: FixtureRepo; branches: string[] } {
  const names = Array.from({ length: landings }, (_, index) => `q${index + 1}`);
  const repo = createFixtureRepo({
    base: {
      'check.sh': gateScript,
      // A README of its own: no tree of this fixture equals one of another (gate results are reused by tree).
      README: `queue bench ${process.pid}.${Date.now()}.${(fixtures += 1)} batch ${batchSize}\n`,
      '.config/tarmac/land-gate.json': gateFile([{ id: 'check', run: ['sh', 'check.sh'] }], batchSize > 1 ? { queue: { batchSize } } : {}),
    },
    branches: names.map((name) => ({ name: `feature/${name}`, commits: [{ message: `feature ${name}`, files: { [`features/${name}`]: `${name}\n` } }] })),
  });
  // The origin keeps a reflog of the target: every value it takes, in order.
  keepRefLog(repo.path);
  return { repo, branches: names.map((name) => `feature/${name}`) };
}

/** Gate containers created since `since` (seconds), counted by the run (`tarmac.run`) that made them. */
async function gateContainersByRun(docker: Docker, since: number): Promise<Map<string, number>> {
  const until = Math.ceil(Date.now() / 1000) + 1;
  const stream = await docker.getEvents({ since, until, filters: JSON.stringify({ type: ['container'], event: ['create'], label: ['tarmac.role=gate'] }) });
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  const byRun = new Map<string, number>();
  for (const line of Buffer.concat(chunks).toString().split('\n')) {
    if (!line.trim()) continue;
    const run = (JSON.parse(line) as { Actor?: { Attributes?: Record<string, string> } }).Actor?.Attributes?.['tarmac.run'];
    if (run) byRun.set(run, (byRun.get(run) ?? 0) + 1);
  }
  return byRun;
}

async function runVariant(stack: Stack, landings: number, batchSize: number): Promise<QueueVariant> {
  // The repository is made before the clock starts: it is the input, not the work.
  const { repo, branches } = queueBenchFixture(landings, batchSize);
  try {
    const since = Math.floor(Date.now() / 1000);
    const begin = Date.now();
    const results = await Promise.all(
      branches.map(async (branch) => {
        const created: { status: number; body: { id: string } } = await stack.api('POST', '/v1/landings', {
          repo: repo.url,
          branches: [branch],
          target: 'main',
        });
        if (created.status !== 201) throw new Error(`POST /v1/landings answered ${created.status}: ${JSON.stringify(created.body)}`);
        const outcome = (await stack.client.workflow.getHandle(created.body.id).result()) as LandingOutcome;
        return { id: created.body.id, ms: Date.now() - begin, at: Date.now(), outcome };
      }),
    );
    const wallMs = Math.max(...results.map((result) => result.at)) - begin;
    const failed = results.filter((result) => result.outcome.status !== 'landed');
    if (failed.length > 0) {
      const lines = failed.map((result) => `${result.id}: ${result.outcome.status} (${result.outcome.summary ?? ''})`);
      throw new Error(`batch size ${batchSize}: ${failed.length} of ${landings} landings did not land: ${lines.join('; ')}`);
    }

    const queue: { status: number; body: { queueId: string; batches: number; recentTurnMs: number[] } } = await stack.api(
      'GET',
      `/v1/queues/${encodeURIComponent(repo.url)}/main`,
    );
    if (queue.status !== 200) throw new Error(`GET /v1/queues answered ${queue.status}: ${JSON.stringify(queue.body)}`);
    const batchIds = Array.from({ length: queue.body.batches }, (_, index) => `${queue.body.queueId}.batch-${index + 1}`);
    const outcomes = await Promise.all(batchIds.map(async (id) => (await stack.client.workflow.getHandle(id).result()) as BatchOutcome));
    const batches = outcomes.map((outcome) => ({
      id: outcome.batchId,
      size: Object.keys(outcome.results).length,
      rounds: outcome.rounds.length,
      landed: Object.values(outcome.results).filter((result) => result.kind === 'landed').length,
      merges: outcome.merges.length,
    }));

    const containers = await gateContainersByRun(stack.docker, since);
    const ids = new Set(results.map((result) => result.id));
    const batchSet = new Set(batchIds);
    let byLandings = 0;
    let byBatches = 0;
    for (const [run, count] of containers) {
      if (ids.has(run)) byLandings += count;
      else if (batchSet.has(run)) byBatches += count;
    }

    const values = refValues(repo.path);
    const latencies = results.map((result) => result.ms);
    return {
      batchSize,
      wallMs,
      firstMs: Math.min(...latencies),
      p50Ms: percentile(latencies, 50),
      maxMs: Math.max(...latencies),
      gateContainers: { total: byLandings + byBatches, byLandings, byBatches },
      targetMoves: Math.max(0, values.length - 1),
      fastForwardsOnly: values.every((value, index) => index === 0 || isAncestor(repo.path, values[index - 1]!, value)),
      mergedAlone: results.filter((result) => !result.outcome.batch).length,
      batches,
      gateRounds: batches.reduce((sum, batch) => sum + batch.rounds, 0),
      turnsMs: queue.body.recentTurnMs,
    };
  } finally {
    rmSync(dirname(repo.path), { recursive: true, force: true });
  }
}

export async function measureQueue(stack: Stack, { landings, batchSize, repeats }: QueueOptions): Promise<QueueReport> {
  // One unmeasured landing first: the first container start and git calls pay for cold caches.
  await runVariant(stack, 1, 1);
  const runs: QueueRun[] = [];
  for (let repetition = 1; repetition <= repeats; repetition += 1) {
    // Alternate which variant goes first, so neither always runs on a warmer (or busier) machine.
    const order = repetition % 2 === 1 ? [1, batchSize] : [batchSize, 1];
    const variants: QueueVariant[] = [];
    for (const size of order) variants.push(await runVariant(stack, landings, size));
    variants.sort((a, b) => a.batchSize - b.batchSize);
    runs.push({ repetition, order, variants, ratio: Number((variants[0]!.wallMs / Math.max(1, variants[1]!.wallMs)).toFixed(2)) });
  }
  const wall = (size: number) => Math.round(middleOf(runs.map((run) => run.variants.find((variant) => variant.batchSize === size)!.wallMs)));
  return {
    landings,
    batchSize,
    repeats,
    gate: gateScript.trim().split('\n').join('; '),
    runs,
    medianWallMs: { 'batch-1': wall(1), [`batch-${batchSize}`]: wall(batchSize) },
    medianRatio: Number(middleOf(runs.map((run) => run.ratio)).toFixed(2)),
  };
}
