/**
 * The ratio: one two-branch landing through the real stack (POST → workflow result), side by
 * side with the same steps in a bare shell script (bench/bare-landing.sh: mirror, workspace,
 * rebase with rerere off, gate container at the exact tree, fast-forward push, cleanup). Reports
 * both medians, their ratio and the median of each Tarmac step. A landing's cleanup comes after its
 * result (the host's janitor, once the run has closed) while the script's is inside its time: the time
 * to the janitor's record is reported too, with the ratio it gives.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gatePoolId } from '../activities/containers/gate-pool';
import { cleanupRecord } from '../activities/janitor/run-janitor';
import type { Stack } from '../test/helpers/stack';
import { twoBranchFixture } from './fixtures';
import { median } from './stats';

interface Step {
  name: string;
  startedAt: string;
  endedAt?: string;
}

export interface RatioReport {
  count: number;
  tarmacMedianMs: number;
  shellMedianMs: number;
  ratio: number;
  tarmacMs: number[];
  shellMs: number[];
  stepMedianMs: Record<string, number>;
  /** POST → the host's janitor has cleaned up (its record written): the landing's time with its cleanup. */
  tarmacCleanedMs: number[];
  tarmacCleanedMedianMs: number;
  /** The same ratio with Tarmac's cleanup counted, as the script's is. */
  ratioWithCleanup: number;
  /** The host's warm gate pool (TARMAC_GATE_POOL of the stack's worker) and how many measured landings ran their gate in it. */
  gatePool: number;
  pooledLandings: number;
}

/**
 * Waits until the host's gate pool is full and makes nothing (its state file; 10 s at most): each
 * measurement, Tarmac's and the script's, starts on a machine that is not busy refilling it. With
 * `environments`, the containers of the environments it keeps too (each one waiting, or skipped).
 */
export async function poolSettled(stack: Stack, size: number, { environments = false } = {}): Promise<void> {
  if (size <= 0) return;
  const state = join(stack.dataDir, 'gate-pool', gatePoolId(stack.config.hostId, stack.dataDir), 'state.json');
  const deadline = Date.now() + 10_000;
  for (;;) {
    const now = existsSync(state)
      ? (JSON.parse(readFileSync(state, 'utf8')) as {
          idle: number;
          filling: number;
          environments?: Array<{ idle: number; filling: number; skipped: boolean }>;
        })
      : undefined;
    const kept = !environments || (now?.environments ?? []).every((each) => each.filling === 0 && (each.idle >= 1 || each.skipped));
    if (now && now.idle >= size && now.filling === 0 && kept) return;
    if (Date.now() > deadline) throw new Error(`the gate pool was not full within 10 s: ${JSON.stringify(now)}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Waits for the janitor's cleanup record of a run (checked every 2 ms; 10 s at most). */
export async function cleanedAt(stack: Stack, runId: string): Promise<number> {
  const record = join(stack.dataDir, 'runs', runId, cleanupRecord);
  const deadline = Date.now() + 10_000;
  while (!existsSync(record)) {
    if (Date.now() > deadline) throw new Error(`bench landing ${runId} was not cleaned up within 10 s of its result`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  return Date.now();
}

/** Whether a cleaned-up run's gate ran in a container of the host's gate pool: its cleanup removed the claimed slot. */
export function ranInPool(stack: Stack, runId: string): boolean {
  return (
    (JSON.parse(readFileSync(join(stack.dataDir, 'runs', runId, cleanupRecord), 'utf8')) as { removedPaths?: string[] }).removedPaths?.some((path) =>
      path.endsWith('/gate-pool-slot'),
    ) ?? false
  );
}

export async function measureRatio(stack: Stack, count: number, gatePool = 0): Promise<RatioReport> {
  const tarmacMs: number[] = [];
  const tarmacCleanedMs: number[] = [];
  const shellMs: number[] = [];
  const steps: Record<string, number[]> = {};
  // One warm-up of each, not measured: the first container start and git calls pay for cold caches.
  let pooledLandings = 0;
  for (let index = -1; index < count; index += 1) {
    const repo = twoBranchFixture(index + 100);
    await poolSettled(stack, gatePool);
    const begin = Date.now();
    const created: { body: { id: string } } = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: repo.branches, target: 'main' });
    // Wait on the workflow result itself: polling the API would add up to a poll interval.
    await stack.client.workflow.getHandle(created.body.id).result();
    const elapsed = Date.now() - begin;
    const cleaned = (await cleanedAt(stack, created.body.id)) - begin;
    const pooled = ranInPool(stack, created.body.id);
    const view: { body: { steps: Step[]; outcome?: { status: string } } } = await stack.api('GET', `/v1/landings/${created.body.id}`);
    if (view.body.outcome?.status !== 'landed') throw new Error(`bench landing did not land: ${JSON.stringify(view.body.outcome)}`);
    const shellRepo = twoBranchFixture(index + 200);
    await poolSettled(stack, gatePool);
    const shellBegin = Date.now();
    execFileSync('bash', [join(__dirname, 'bare-landing.sh'), shellRepo.url, mkdtempSync(join(tmpdir(), 'tarmac-bare-')), 'main', ...shellRepo.branches]);
    const shellElapsed = Date.now() - shellBegin;
    if (index < 0) continue;
    if (pooled) pooledLandings += 1;
    tarmacMs.push(elapsed);
    tarmacCleanedMs.push(cleaned);
    shellMs.push(shellElapsed);
    for (const step of view.body.steps) {
      if (step.endedAt) (steps[step.name] ??= []).push(Date.parse(step.endedAt) - Date.parse(step.startedAt));
    }
  }
  return {
    count,
    tarmacMedianMs: median(tarmacMs),
    shellMedianMs: median(shellMs),
    ratio: Number((median(tarmacMs) / Math.max(1, median(shellMs))).toFixed(2)),
    tarmacMs,
    shellMs,
    stepMedianMs: Object.fromEntries(Object.entries(steps).map(([name, values]) => [name, median(values)])),
    tarmacCleanedMs,
    tarmacCleanedMedianMs: median(tarmacCleanedMs),
    ratioWithCleanup: Number((median(tarmacCleanedMs) / Math.max(1, median(shellMs))).toFixed(2)),
    gatePool,
    pooledLandings,
  };
}
