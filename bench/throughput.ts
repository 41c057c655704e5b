/**
 * Throughput: N two-branch landings (default 20) started at once through the API on the
 * stack's one worker, each on its own origin (so no target queue serializes them). Reports
 * landings per minute over the whole batch, p50/p95 latency (POST → workflow result) and the
 * worker process's resident memory while it ran. A landing that does not land fails the bench.
 */
import { branchHead } from '../infra/fixture-repo';
import type { Stack } from '../test/helpers/stack';
import { twoBranchFixture } from './fixtures';
import { retriedActivities, type RetriedActivity } from './history-walk';
import { sampleRss } from './rss';
import { mib, percentile } from './stats';

export interface ThroughputReport {
  landings: number;
  wallMs: number;
  landingsPerMinute: number;
  p50Ms: number;
  p95Ms: number;
  latencyMs: number[];
  /** The worker's RSS in MiB: before the batch, the peak during it, and its lifetime peak (VmHWM). */
  workerRssMiB: { before: number; peak: number; after: number; lifetimePeak: number };
  /** Landings slower than twice the median, with their longest steps and the activities that needed a retry. */
  stragglers: Straggler[];
}

export interface Straggler {
  id: string;
  ms: number;
  longestSteps: { name: string; ms: number }[];
  retried: RetriedActivity[];
}

interface Step {
  name: string;
  startedAt: string;
  endedAt?: string;
}

interface LandingOutcome {
  status: string;
  summary?: string;
}

type Fixture = ReturnType<typeof twoBranchFixture>;

async function land(stack: Stack, repo: Fixture): Promise<{ id: string; ms: number; outcome: LandingOutcome }> {
  const begin = Date.now();
  const created: { status: number; body: { id: string } } = await stack.api('POST', '/v1/landings', {
    repo: repo.url,
    branches: repo.branches,
    target: 'main',
  });
  if (created.status !== 201) throw new Error(`POST /v1/landings answered ${created.status}: ${JSON.stringify(created.body)}`);
  const outcome = (await stack.client.workflow.getHandle(created.body.id).result()) as LandingOutcome;
  return { id: created.body.id, ms: Date.now() - begin, outcome };
}

/** What made a slow landing slow: its three longest steps, and its retried activities with the failure before the retry. */
async function explain(stack: Stack, id: string, ms: number): Promise<Straggler> {
  const view: { body: { steps: Step[] } } = await stack.api('GET', `/v1/landings/${id}`);
  const longestSteps = view.body.steps
    .map((step) => ({ name: step.name, ms: (step.endedAt ? Date.parse(step.endedAt) : Date.now()) - Date.parse(step.startedAt) }))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 3);
  return { id, ms, longestSteps, retried: retriedActivities(await stack.client.workflow.getHandle(id).fetchHistory()) };
}

export async function measureThroughput(stack: Stack, landings: number): Promise<ThroughputReport> {
  const pid = stack.worker().pid;
  if (pid === undefined) throw new Error('the worker process has no pid: it did not start');
  // One unmeasured landing first, so a throughput-only run does not pay for cold caches in the batch.
  await land(stack, twoBranchFixture(300));
  // The repositories are made before the clock starts: they are the input, not the work.
  const repos = Array.from({ length: landings }, (_, index) => twoBranchFixture(400 + index));
  const targetsBefore = repos.map((repo) => branchHead(repo.path, 'main'));
  const rss = sampleRss(pid);
  const begin = Date.now();
  const results = await Promise.all(repos.map((repo) => land(stack, repo)));
  const wallMs = Date.now() - begin;
  const memory = rss.stop();
  const latencyMs = results.map((result) => result.ms);
  const p50Ms = percentile(latencyMs, 50);
  const p95Ms = percentile(latencyMs, 95);
  const landingsPerMinute = Number(((landings * 60_000) / wallMs).toFixed(1));
  const failed = results.filter((result) => result.outcome.status !== 'landed');
  if (failed.length > 0) {
    // Grouped by outcome: twenty landings that failed the same way are one line, with one id to look at.
    const byOutcome = new Map<string, string[]>();
    for (const result of failed) {
      const index = results.indexOf(result);
      // A landing that did not land must not have moved its target; one that did is worse than slow.
      const targetMoved = branchHead(repos[index]!.path, 'main') !== targetsBefore[index];
      const summary = (result.outcome.summary ?? '').replaceAll(result.id, '<landing>');
      const key = `${result.outcome.status} (${summary})${targetMoved ? ' although its target was fast-forwarded' : ''}`;
      byOutcome.set(key, [...(byOutcome.get(key) ?? []), result.id]);
    }
    const lines = [...byOutcome].map(([outcome, ids]) => `${ids.length}× ${outcome}, e.g. ${ids[0]}`);
    const asRun = `${landingsPerMinute}/min, p50 ${p50Ms} ms, p95 ${p95Ms} ms, worker RSS peak ${mib(memory.peak)} MiB`;
    throw new Error(`${failed.length} of ${landings} concurrent landings did not land: ${lines.join('; ')} (the batch as run, failures included: ${asRun})`);
  }
  const stragglers = await Promise.all(results.filter((result) => result.ms > 2 * p50Ms).map((result) => explain(stack, result.id, result.ms)));
  return {
    landings,
    wallMs,
    landingsPerMinute,
    p50Ms,
    p95Ms,
    latencyMs: [...latencyMs].sort((a, b) => a - b),
    workerRssMiB: { before: mib(memory.before), peak: mib(memory.peak), after: mib(memory.after), lifetimePeak: mib(memory.lifetimePeak) },
    stragglers,
  };
}
