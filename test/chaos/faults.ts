/**
 * The chaos suite's faults, injected while a pass runs: the worker SIGKILLed (and started again at
 * once, as a supervisor would) at each phase boundary — the first time a run enters each phase of a
 * landing or a nightly, one kill for all the phases first entered in the same look — and at random
 * moments; the Temporal dev server SIGKILLed once and started again on its SQLite db; the API
 * restarted once. Phases are read from the worker's log (`<kind> entered phase <phase>`, logged as
 * the workflow code enters the phase, before its first step), so a kill lands within a poll of the
 * boundary, often inside the workflow task that runs the phase's local activities. A random kill
 * comes at least `minUpMs` after the worker was ready, a boundary's at least `boundaryMinUpMs`
 * (there are only so many boundaries); a boundary crossed sooner is killed once the worker may die,
 * if its run is still in that phase. A worker that exits on its own is started again too, and that
 * is recorded.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import type { Stack } from '../helpers/stack';

export interface Fault {
  /** Milliseconds since the pass began. */
  atMs: number;
  what: 'worker' | 'temporal' | 'api' | 'worker-exited';
  why: string;
  /** How long the process was away (kill to ready again). */
  downMs: number;
}

export interface FaultPlan {
  /** Moments (ms since the pass began) of the random worker kills. */
  randomKillsAtMs: number[];
  temporalKillAtMs: number;
  apiRestartAtMs: number;
  /** The least time a worker lives before a random kill. */
  minUpMs: number;
  /** The least time a worker lives before a kill at a phase boundary (each boundary is killed once). */
  boundaryMinUpMs: number;
  /** Phases whose first entry kills the worker: `<kind>:<phase>`. */
  phases: string[];
  /** How long Temporal stays down before it is started again. */
  temporalDownMs: number;
}

/** The landing's and the nightly's phases a run moves through (the terminal `done` is no boundary). */
export const boundaryPhases = [
  ...['validate', 'prepare', 'rebase', 'questions', 'gate', 'review', 'fixup', 'verify', 'queue', 'merge', 'cleanup'].map((phase) => `landing:${phase}`),
  ...['inspect', 'prepare', 'gate', 'fix', 'land', 'cleanup'].map((phase) => `nightly:${phase}`),
];

/** A small seeded generator (mulberry32): the same seed, the same random moments. */
export function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The plan of a pass expected to take about `expectedMs` (the fault-free pass's wall time). */
export function planFaults(seed: number, expectedMs: number, randomKills: number): FaultPlan {
  const random = seeded(seed);
  return {
    randomKillsAtMs: Array.from({ length: randomKills }, () => Math.round((0.1 + 0.8 * random()) * expectedMs)).sort((a, b) => a - b),
    temporalKillAtMs: Math.round((0.35 + 0.3 * random()) * expectedMs),
    apiRestartAtMs: Math.round((0.2 + 0.6 * random()) * expectedMs),
    minUpMs: 4_000,
    boundaryMinUpMs: 4_000,
    phases: boundaryPhases,
    temporalDownMs: 1_000,
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class FaultInjector {
  readonly faults: Fault[] = [];
  /** `<kind>:<phase>` seen in visibility, in the order first seen. */
  readonly phasesSeen: string[] = [];
  private stopped = false;
  /** Phases whose boundary a kill has hit. */
  readonly killedAt = new Set<string>();
  /** Boundaries crossed while the worker was just restarted: killed as soon as it may die, if their run is still in them. */
  private readonly pendingBoundaries = new Set<string>();
  /** The phases each run (by workflow id) entered in its last crossing (one activation may enter several). */
  private readonly current = new Map<string, { at: string; phases: Set<string> }>();
  private loop: Promise<void> | undefined;
  private begin = 0;
  /** How far the worker's log has been read. */
  private logOffset = 0;
  private workerUpAt = 0;
  private pending: { atMs: number; what: 'worker' | 'temporal' | 'api'; why: string }[];

  constructor(
    private readonly stack: Stack,
    private readonly plan: FaultPlan,
  ) {
    this.pending = [
      ...plan.randomKillsAtMs.map((atMs) => ({ atMs, what: 'worker' as const, why: 'a random moment' })),
      { atMs: plan.temporalKillAtMs, what: 'temporal' as const, why: 'once, mid-pass' },
      { atMs: plan.apiRestartAtMs, what: 'api' as const, why: 'once, mid-pass' },
    ].sort((a, b) => a.atMs - b.atMs);
  }

  start(): void {
    this.logOffset = statSync(this.stack.workerLog).size;
    this.begin = Date.now();
    // The worker has been up since the stack started: the runs' first phases may be killed at once.
    this.workerUpAt = 0;
    this.loop = this.run();
  }

  /** Stops injecting; the worker, Temporal and the API are up when it returns. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    await this.superviseWorker();
  }

  private now(): number {
    return Date.now() - this.begin;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      await this.superviseWorker();
      const due = this.pending[0];
      if (due && due.atMs <= this.now()) {
        if (due.what !== 'worker' || this.workerMayDie(this.plan.minUpMs)) {
          this.pending.shift();
          await this.inject(due.what, due.why);
        }
      } else {
        const phases = this.boundariesDue();
        if (phases.length > 0) {
          for (const phase of phases) {
            this.killedAt.add(phase);
            this.pendingBoundaries.delete(phase);
          }
          await this.inject('worker', `first run in ${phases.join(', ')}`);
        }
      }
      await sleep(150);
    }
  }

  private workerMayDie(minUpMs: number): boolean {
    return Date.now() - this.workerUpAt >= minUpMs;
  }

  /**
   * The boundaries to kill at now: phases of the plan no kill has hit that a run entered since the
   * last look (the worker's log says so as it happens), and those entered while the worker was just
   * restarted whose run is still in them. None while the worker may not die yet.
   */
  private boundariesDue(): string[] {
    const entered: string[] = [];
    for (const [, at, kind, phase, workflowId] of this.readLog().matchAll(
      /(\S+) \[INFO\] (landing|nightly) entered phase ([a-z]+) \{[^}]*?workflowId: '([^']+)'/g,
    )) {
      const key = `${kind}:${phase}`;
      // Phases a run enters in one activation (logged at one moment) are one crossing: it is in all of them.
      const crossing = this.current.get(workflowId!);
      if (crossing && crossing.at === at) crossing.phases.add(key);
      else this.current.set(workflowId!, { at: at!, phases: new Set([key]) });
      if (!this.phasesSeen.includes(key)) this.phasesSeen.push(key);
      if (this.plan.phases.includes(key) && !this.killedAt.has(key) && !entered.includes(key)) entered.push(key);
    }
    if (!this.workerMayDie(this.plan.boundaryMinUpMs)) {
      for (const key of entered) this.pendingBoundaries.add(key);
      return [];
    }
    const stillIn = new Set([...this.current.values()].flatMap((crossing) => [...crossing.phases]));
    return [...new Set([...entered, ...[...this.pendingBoundaries].filter((key) => stillIn.has(key))])];
  }

  /** Whole log entries the worker processes wrote since the last read (a partial last entry waits for the next read). */
  private readLog(): string {
    const size = statSync(this.stack.workerLog).size;
    if (size <= this.logOffset) return '';
    const buffer = Buffer.alloc(size - this.logOffset);
    const fd = openSync(this.stack.workerLog, 'r');
    try {
      readSync(fd, buffer, 0, buffer.length, this.logOffset);
    } finally {
      closeSync(fd);
    }
    const text = buffer.toString('utf8');
    const end = text.lastIndexOf('\n}\n');
    if (end < 0) return '';
    const whole = text.slice(0, end + 3);
    this.logOffset += Buffer.byteLength(whole);
    return whole;
  }

  private async inject(what: 'worker' | 'temporal' | 'api', why: string): Promise<void> {
    const atMs = this.now();
    const began = Date.now();
    if (what === 'worker') {
      await this.stack.killWorker('SIGKILL');
      await this.stack.startWorker();
      this.workerUpAt = Date.now();
    } else if (what === 'temporal') {
      await this.stack.killTemporal();
      await sleep(this.plan.temporalDownMs);
      await this.stack.startTemporal();
    } else {
      await this.stack.restartApi();
    }
    this.faults.push({ atMs, what, why, downMs: Date.now() - began });
  }

  /** A worker that exited without being killed here is started again (and that is a fault of its own, recorded). */
  private async superviseWorker(): Promise<void> {
    const worker = this.stack.worker();
    if (worker.exitCode === null && worker.signalCode === null) return;
    const atMs = this.now();
    const began = Date.now();
    const why = `exited by itself (code ${worker.exitCode}, signal ${worker.signalCode})`;
    await this.stack.startWorker();
    this.workerUpAt = Date.now();
    this.faults.push({ atMs, what: 'worker-exited', why, downMs: Date.now() - began });
  }
}
