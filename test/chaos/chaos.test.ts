/**
 * The chaos suite (`npm run chaos`; in the default test run at scale 1). The same set of runs — every
 * kind, all at once — runs twice on one real stack: once without faults, then (a fresh set: new
 * origins, new trees) with the worker SIGKILLed at every phase boundary and at random moments,
 * Temporal SIGKILLed once and the API restarted once. Checked from the outside: every run ends as
 * its fault-free twin did; every target moved only by fast-forwards to a gated tree, once per landed
 * landing, with every landed commit; each run made the same containers (no finished reviewer,
 * session or gate re-run); no container or workspace is left. The wall times of both passes and
 * their ratio go to the test output and to bench/results/chaos-<time>.json.
 *
 * Environment: TARMAC_CHAOS_SCALE (runs per flow, default 1), TARMAC_CHAOS_SEED (the random kills'
 * moments; printed), TARMAC_CHAOS_RANDOM_KILLS (default: scale), TARMAC_CHAOS_MAX_RATIO (default 2).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { removeRunContainers } from '../../activities/containers/containers';
import type { LandingOutcome } from '../../core/types';
import { branchHead } from '../../infra/fixture-repo';
import { buildWorkflowBundle } from '../../worker/workflow-bundle';
import { cleanupsSettled, startStack, type Stack } from '../helpers/stack';
import { FaultInjector, planFaults, type Fault } from './faults';
import { ContainerWatch, containerCounts, containersLeft, ownerOf, targetHistory, workspacesLeft, type ContainerCreate } from './invariants';
import { recoveryOf, timeline } from './recovery';
import { awaitResult, makeRuns, shape, writeScenarios, type ChaosRun } from './runs';

const scale = Number(process.env.TARMAC_CHAOS_SCALE ?? 1);
const seed = Number(process.env.TARMAC_CHAOS_SEED ?? Math.floor(Math.random() * 1e9));
const randomKills = Number(process.env.TARMAC_CHAOS_RANDOM_KILLS ?? scale);
const maxRatio = Number(process.env.TARMAC_CHAOS_MAX_RATIO ?? 2);
const resultsDir = resolve(__dirname, '../../bench/results');
/** A run that takes longer than this has hung (both passes). */
const runTimeoutMs = 10 * 60_000;

interface Pass {
  runs: ChaosRun[];
  beganAt: number;
  wallMs: number;
  creates: ContainerCreate[];
  injector?: FaultInjector;
}

describe(`chaos: every kind of run at once, scale ${scale}, seed ${seed}`, () => {
  let stack: Stack;
  let bundleDir: string;
  let clean: Pass;
  let faulted: Pass | undefined;
  before(async () => {
    // Both passes and every restart load one bundle, built here: a restarted worker is ready in
    // seconds, and the sources others edit meanwhile cannot change the code under the runs.
    bundleDir = mkdtempSync(join(tmpdir(), 'tarmac-chaos-bundle-'));
    const bundle = join(bundleDir, 'workflow-bundle.js');
    // (Sources edited while it builds make it refuse: build again.)
    for (let attempt = 1; ; attempt += 1) {
      try {
        await buildWorkflowBundle({ outFile: bundle });
        break;
      } catch (error) {
        if (attempt === 5 || !/changed while they were being bundled/.test((error as Error).message)) throw error;
      }
    }
    stack = await startStack({ workerEnv: { TARMAC_WORKFLOW_BUNDLE: bundle } });
    writeScenarios(stack);
  });
  after(async () => {
    // A run that broke "no container is left" leaves it to the report, not on the engine.
    const ours = [clean, faulted].flatMap((pass) => (pass ? pass.creates.filter((create) => ownerOf(pass.runs, create)) : []));
    for (const run of new Set(ours.map((create) => create.run))) await removeRunContainers(stack.docker, run).catch(() => undefined);
    await stack?.stop();
    rmSync(bundleDir, { recursive: true, force: true });
  });

  async function runPass(name: string, faults?: (expectedMs: number) => FaultInjector): Promise<Pass> {
    // The repositories are the input, made before the clock starts.
    const runs = makeRuns(name, scale);
    for (const run of runs) if (run.target) run.targetBefore = branchHead(run.repo.path, run.target);
    const watch = await ContainerWatch.start(stack.docker);
    const injector = faults?.(clean.wallMs);
    const begin = Date.now();
    injector?.start();
    const go = async (run: ChaosRun) => {
      if (run.startAfterMs) await new Promise((resolve) => setTimeout(resolve, run.startAfterMs));
      run.id = await run.start(stack);
      run.result = await awaitResult(stack, run.id, runTimeoutMs);
      run.finishedAtMs = Date.now() - begin;
    };
    try {
      await Promise.all(runs.map(go));
    } finally {
      await injector?.stop();
    }
    const wallMs = Math.max(...runs.map((run) => run.finishedAtMs ?? Date.now() - begin));
    const creates = await watch.stop();
    return { runs, beganAt: begin, wallMs, creates, ...(injector ? { injector } : {}) };
  }

  /** What a run that ended otherwise than its twin went through: its steps, and the logs of its failed gates. */
  async function diagnose(run: ChaosRun, beganAt: number): Promise<string> {
    const lines = [`${run.key} ${run.id}: ${JSON.stringify(run.result).slice(0, 2000)}`];
    const view = await stack.api('GET', `/v1/landings/${run.id}`).catch(() => undefined);
    for (const step of view?.body?.steps ?? []) lines.push(`  step ${step.name} ${step.status} ${step.startedAt} → ${step.endedAt ?? ''} ${step.detail ?? ''}`);
    for (const gate of (run.result as { gates?: { status: string; logRef: string }[] }).gates ?? []) {
      const file = join(stack.dataDir, gate.logRef);
      if (gate.status !== 'passed' && existsSync(file)) lines.push(`  log ${gate.logRef}:\n${readFileSync(file, 'utf8').slice(-2000)}`);
    }
    lines.push(`  worker log: ${stack.workerLog}`, `  timeline: ${await timelines(run.key, [run.id!], beganAt)}`);
    return lines.join('\n');
  }

  /** Writes the timelines of these runs (and their children) beside the report; returns the file. */
  async function timelines(name: string, ids: string[], zeroMs: number): Promise<string> {
    const file = join(resultsDir, `chaos-${new Date().toISOString().replace(/[:.]/g, '-')}-${name}.txt`);
    const lines: string[] = [];
    for (const id of ids) lines.push(...(await timeline(stack, id, zeroMs)), '');
    mkdirSync(resultsDir, { recursive: true });
    writeFileSync(file, `${lines.join('\n')}\n`);
    return file;
  }

  /** The invariants every pass must hold on its own. */
  async function holdsAlone(pass: Pass): Promise<void> {
    assert.deepEqual(
      await targetHistory(stack, pass.runs),
      [],
      'every target moved only by one fast-forward per landing, to a gated tree, with every landed commit',
    );
    // Landings are cleaned up by their host's janitor once they have closed (and after a restart).
    await cleanupsSettled(stack.dataDir);
    const left = await containersLeft(stack.docker, pass.runs, pass.creates);
    if (left.length > 0) {
      const runs = [...new Set(left.map((entry) => /\(([^,]+),/.exec(entry)?.[1] ?? ''))];
      left.push(`timelines: ${await timelines('containers-left', runs, pass.beganAt)}`);
    }
    assert.deepEqual(left, [], 'no container of the pass is left');
    assert.deepEqual(workspacesLeft(stack.dataDir), [], 'no workspace is left');
  }

  it('fault-free pass: the reference outcomes and wall time', async () => {
    clean = await runPass('clean');
    console.log(`[chaos] fault-free: ${clean.runs.length} runs in ${(clean.wallMs / 1000).toFixed(1)} s`);
    for (const run of clean.runs) console.log(`[chaos]   ${run.key} ${run.id} ${(run.finishedAtMs! / 1000).toFixed(1)} s ${JSON.stringify(shape(run))}`);
    await holdsAlone(clean);
  });

  it('with faults: every run ends as without them, every invariant holds, in at most 2× the time', async (t) => {
    if (!clean) return t.skip('the fault-free pass did not finish');
    faulted = await runPass('chaos', (expectedMs) => new FaultInjector(stack, planFaults(seed, expectedMs, randomKills)));
    const faults: Fault[] = faulted.injector!.faults;
    const recovery = await recoveryOf(stack, faulted.beganAt);
    // The same figures without faults: what a busy worker costs on its own (a sticky task it took too long to pick up).
    const baseline = await recoveryOf(stack, clean.beganAt, faulted.beganAt);
    const ratio = faulted.wallMs / clean.wallMs;
    const report = {
      date: new Date().toISOString(),
      machine: `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`,
      scale,
      seed,
      runs: faulted.runs.length,
      faultFreeMs: clean.wallMs,
      faultedMs: faulted.wallMs,
      ratio: Number(ratio.toFixed(2)),
      /** What one fault cost the pass, on average: the time faults added over how many there were. */
      perFaultMs: Math.round((faulted.wallMs - clean.wallMs) / Math.max(1, faults.length)),
      faults,
      phasesSeen: faulted.injector!.phasesSeen,
      boundariesKilled: [...faulted.injector!.killedAt],
      recovery,
      faultFreeTimeouts: baseline.timeouts,
      finishedAtMs: Object.fromEntries(faulted.runs.map((run) => [run.key, [clean.runs.find((twin) => twin.key === run.key)?.finishedAtMs, run.finishedAtMs]])),
    };
    console.log(
      `[chaos] with faults: ${faulted.runs.length} runs in ${(faulted.wallMs / 1000).toFixed(1)} s, fault-free ${(clean.wallMs / 1000).toFixed(1)} s: ${report.ratio}×, ${faults.length} faults, ${(report.perFaultMs / 1000).toFixed(1)} s each`,
    );
    for (const fault of faults) console.log(`[chaos]   ${(fault.atMs / 1000).toFixed(1)} s ${fault.what} (${fault.why}), back after ${fault.downMs} ms`);
    console.log(
      `[chaos] phase boundaries killed: ${report.boundariesKilled.join(', ')}; entered but not killed: ${report.phasesSeen.filter((phase) => !report.boundariesKilled.includes(phase)).join(', ') || 'none'}`,
    );
    console.log(`[chaos] recovery: ${JSON.stringify(recovery, null, 1)}`);
    console.log(`[chaos] timeouts without faults: ${JSON.stringify(baseline.timeouts)}`);
    const slowest = [...new Set(recovery.longestWaits.map((wait) => wait.workflowId))].slice(0, 3);
    console.log(`[chaos] timelines of the runs that waited longest: ${await timelines('longest-waits', slowest, faulted.beganAt)}`);
    mkdirSync(resultsDir, { recursive: true });
    writeFileSync(join(resultsDir, `chaos-${report.date.replace(/[:.]/g, '-')}.json`), `${JSON.stringify(report, null, 2)}\n`);

    // Every run ends as its fault-free twin did.
    for (const run of faulted.runs) {
      const twin = clean.runs.find((candidate) => candidate.key === run.key)!;
      const same = JSON.stringify(shape(run)) === JSON.stringify(shape(twin));
      assert.deepEqual(shape(run), shape(twin), same ? '' : `${run.key} ended otherwise than without faults:\n${await diagnose(run, faulted.beganAt)}`);
    }
    await holdsAlone(faulted);
    // The same containers per run and role: no finished gate, session or reviewer ran again. Two
    // landings on one target re-gate the second once or not at all (had the first merged before the
    // second's placement read the target): there, a gate container per gate result, and at most one
    // more per landing (a placement killed after it made its round's container ahead, placed again
    // on the moved target: a new tree).
    const queued = (counts: Record<string, number>) => Object.fromEntries(Object.entries(counts).filter(([key]) => !key.startsWith('queue-')));
    assert.deepEqual(
      queued(containerCounts(faulted.runs, faulted.creates)),
      queued(containerCounts(clean.runs, clean.creates)),
      'each run made the containers it made without faults',
    );
    for (const pair of new Set(faulted.runs.filter((run) => run.flow === 'queue').map((run) => run.key.replace(/-[xy]$/, '')))) {
      const landings = faulted.runs.filter((run) => run.key.startsWith(`${pair}-`));
      const gates: number = landings.reduce((sum: number, run) => sum + (run.result as LandingOutcome).gates.length, 0);
      const made = containerCounts(faulted.runs, faulted.creates)[`${pair} gate`] ?? 0;
      assert.ok(made >= gates && made <= gates + landings.length, `${pair}: ${made} gate containers for ${gates} gate results of ${landings.length} landings`);
    }
    assert.ok(faults.filter((fault) => fault.what === 'worker').length >= 3, `the worker was killed at least 3 times (${faults.length} faults)`);
    assert.ok(faults.some((fault) => fault.what === 'temporal') && faults.some((fault) => fault.what === 'api'), 'Temporal and the API were restarted');
    assert.ok(ratio <= maxRatio, `faults cost ${report.ratio}× the fault-free wall time (${faulted.wallMs} ms vs ${clean.wallMs} ms); at most ${maxRatio}×`);
  });
});
