/**
 * Environments (issue 24): what a repository environment costs a landing. The same two-branch
 * landing (bench/fixtures.ts) with a Node dependency, once on the runner image with no environment
 * and once with an `environment` whose key the host already has (ENV_CACHE=hit), alternating,
 * `count` times each after a warm-up: the medians and their difference (the cost of a hit; the
 * target is ≤ 50 ms). And the cold build: landings whose declaration makes a new key each time
 * (`npm ci` of one package through the egress gateway), with the build step's own time.
 *
 * With the worker's warm gate pool (TARMAC_GATE_POOL, default 1 here as deployed), each landing
 * starts with the pool full and idle — the runner's container and the hit key's
 * (TARMAC_GATE_POOL_ENVIRONMENTS) — as bench/ratio.ts does: a refill never lands in the other's
 * time. The report says how many measured landings of each kind ran their gate in the pool.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFixtureRepo, gateFile } from '../infra/fixture-repo';
import { npmRegistry } from '../test/helpers/registries';
import type { Stack } from '../test/helpers/stack';
import { cleanedAt, poolSettled, ranInPool } from './ratio';
import { median } from './stats';

export interface EnvironmentReport {
  count: number;
  /** POST → result, the runner image, no environment. */
  runnerMs: number[];
  runnerMedianMs: number;
  /** POST → result, an environment the host has (ENV_CACHE=hit). */
  hitMs: number[];
  hitMedianMs: number;
  /** hitMedianMs − runnerMedianMs: what a hit adds to a landing's wall. */
  hitCostMs: number;
  /** The `environment.prepare` step of the hits. */
  hitStepMedianMs: number;
  /** Each step's median in the runner's landings and in the hits' (where the difference is). */
  runnerStepMedianMs: Record<string, number>;
  hitStepsMedianMs: Record<string, number>;
  /** Cold builds (a new key each): the build step, and the landing's wall. */
  coldBuildMs: number[];
  coldBuildMedianMs: number;
  coldLandingMedianMs: number;
  /** The worker's TARMAC_GATE_POOL, and how many measured landings ran their first suite in a pool container. */
  gatePool: number;
  runnerPooled: number;
  hitPooled: number;
}

const pkg = `${JSON.stringify({ name: 'bench-env', version: '1.0.0', private: true, dependencies: { 'left-pad': '1.3.0' } }, null, 2)}\n`;

/** The lockfile the machine's own npm makes for `pkg`. */
function lockfile(registry: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'tarmac-bench-lock-'));
  writeFileSync(join(dir, 'package.json'), pkg);
  execFileSync('npm', ['install', '--package-lock-only', '--no-audit', '--no-fund', '--registry', registry], { cwd: dir, stdio: 'ignore' });
  const lock = readFileSync(join(dir, 'package-lock.json'), 'utf8');
  rmSync(dir, { recursive: true, force: true });
  return lock;
}

function fixture(index: number, lock: string, environment?: Record<string, unknown>) {
  const repo = createFixtureRepo({
    base: {
      Makefile: 'test:\n\ttrue\n',
      'package.json': pkg,
      'package-lock.json': lock,
      '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['make', 'test'] }], environment ? { environment } : {}),
    },
    branches: [
      { name: `feature/a-${index}`, commits: [{ message: 'a', files: { 'a.txt': `${index}\n` } }] },
      { name: `feature/b-${index}`, commits: [{ message: 'b', files: { 'b.txt': `${index}\n` } }] },
    ],
  });
  return { url: repo.url, branches: [`feature/a-${index}`, `feature/b-${index}`] };
}

interface View {
  steps: Array<{ name: string; startedAt: string; endedAt?: string; detail?: string }>;
  outcome?: { status: string; summary: string };
}

async function land(stack: Stack, repo: { url: string; branches: string[] }, gatePool: number): Promise<{ ms: number; view: View; pooled: boolean }> {
  await poolSettled(stack, gatePool, { environments: true });
  const begin = Date.now();
  const created: { body: { id: string } } = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: repo.branches, target: 'main' });
  await stack.client.workflow.getHandle(created.body.id).result();
  const ms = Date.now() - begin;
  const view = (await stack.api('GET', `/v1/landings/${created.body.id}`)).body as View;
  if (view.outcome?.status !== 'landed') throw new Error(`bench landing did not land: ${JSON.stringify(view.outcome)}`);
  await cleanedAt(stack, created.body.id);
  return { ms, view, pooled: ranInPool(stack, created.body.id) };
}

const prepareStep = (view: View) => {
  const step = view.steps.find((entry) => entry.name.startsWith('environment.prepare'));
  if (!step?.endedAt) throw new Error('the landing has no environment step');
  return { ms: Date.parse(step.endedAt) - Date.parse(step.startedAt), detail: step.detail ?? '' };
};

export async function measureEnvironment(stack: Stack, count: number, gatePool = 0): Promise<EnvironmentReport> {
  const registry = npmRegistry();
  const lock = lockfile(registry.url);
  const environment = (extra: Record<string, string> = {}) => ({
    setup: [`npm ci --no-audit --no-fund --registry ${registry.url}`],
    inputs: ['package.json', 'package-lock.json'],
    env: { BENCH: 'environment', ...extra },
  });
  const runnerMs: number[] = [];
  const hitMs: number[] = [];
  const hitSteps: number[] = [];
  const runnerStepMs: Record<string, number[]> = {};
  const hitStepMs: Record<string, number[]> = {};
  let runnerPooled = 0;
  let hitPooled = 0;
  const collect = (into: Record<string, number[]>, view: View) => {
    for (const step of view.steps)
      if (step.endedAt) (into[step.name.replace(/:[0-9a-f]{12}$/, '')] ??= []).push(Date.parse(step.endedAt) - Date.parse(step.startedAt));
  };
  // The warm-up builds the hits' environment (its key: the declaration, the runner's ID, the lockfile).
  for (let index = -1; index < count; index += 1) {
    const runner = await land(stack, fixture(index + 300, lock), gatePool);
    const hit = await land(stack, fixture(index + 400, lock, environment()), gatePool);
    if (index < 0) continue;
    if (runner.pooled) runnerPooled += 1;
    if (hit.pooled) hitPooled += 1;
    const step = prepareStep(hit.view);
    if (!step.detail.startsWith('ENV_CACHE=hit')) throw new Error(`expected a hit: ${step.detail}`);
    runnerMs.push(runner.ms);
    hitMs.push(hit.ms);
    collect(runnerStepMs, runner.view);
    collect(hitStepMs, hit.view);
    hitSteps.push(step.ms);
  }
  const coldBuildMs: number[] = [];
  const coldLandingMs: number[] = [];
  for (let index = 0; index < Math.min(3, count); index += 1) {
    // A declaration of its own: a new key, a build.
    const cold = await land(stack, fixture(index + 500, lock, environment({ BENCH_COLD: `${Date.now()}-${index}` })), gatePool);
    const step = prepareStep(cold.view);
    if (!step.detail.startsWith('ENV_CACHE=miss')) throw new Error(`expected a build: ${step.detail}`);
    coldBuildMs.push(step.ms);
    coldLandingMs.push(cold.ms);
  }
  return {
    count,
    runnerMs,
    runnerMedianMs: median(runnerMs),
    hitMs,
    hitMedianMs: median(hitMs),
    hitCostMs: median(hitMs) - median(runnerMs),
    hitStepMedianMs: median(hitSteps),
    runnerStepMedianMs: Object.fromEntries(Object.entries(runnerStepMs).map(([name, values]) => [name, median(values)])),
    hitStepsMedianMs: Object.fromEntries(Object.entries(hitStepMs).map(([name, values]) => [name, median(values)])),
    coldBuildMs,
    coldBuildMedianMs: median(coldBuildMs),
    coldLandingMedianMs: median(coldLandingMs),
    gatePool,
    runnerPooled,
    hitPooled,
  };
}
