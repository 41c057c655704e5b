import { log, upsertSearchAttributes } from '@temporalio/workflow';
import type {
  BranchHead,
  GateSuiteResult,
  LandingOutcome,
  LandingPhase,
  LandingRequest,
  LandingStatus,
  LandingStatusView,
  Meters,
  StepRecord,
  StepTiming,
} from '../../core/types';
import { metrics } from '../metrics';
import { QuestionDesk } from '../questions';
import { RunJournal } from '../run-journal';
import { emptyMeters, RunRecord, type RunFailure } from '../run-record';
import type { JournalHandoff } from '../../core/events';
import { searchAttributes } from '../../core/search-attributes';

/**
 * What the tracker announces outside its own record: the phase and outcome search attributes and
 * the phase and outcome metrics. Inside the workflow these are the SDK's (the default); the phase
 * tests run outside one and pass their own, which record what was announced.
 */
export interface TrackerEffects {
  phaseEntered(phase: LandingPhase, ended?: { phase: LandingPhase; durationMs: number }): void;
  finished(status: LandingStatus): void;
}

const workflowEffects: TrackerEffects = {
  phaseEntered: (phase, ended) => {
    if (ended) metrics.phaseEnded(ended.phase, ended.durationMs);
    upsertSearchAttributes([{ key: searchAttributes.phase, value: phase }]);
    // In the worker's log as the run enters it (never on replay): the chaos suite kills the worker there.
    log.info(`landing entered phase ${phase}`);
  },
  finished: (status) => {
    upsertSearchAttributes([{ key: searchAttributes.outcome, value: status }]);
    metrics.landingFinished(status);
  },
};

/** What a landing's record carries across continue-as-new (LandingTracker.carry / takeOn). */
export interface TrackerCarry {
  phase: LandingPhase;
  steps: StepRecord[];
  meters: Meters;
  gates: GateSuiteResult[];
  facts: LandingTracker['facts'];
  sessions: LandingTracker['sessions'];
  fixLoops: LandingTracker['fixLoops'];
  reviews: LandingTracker['reviews'];
  /** Absent in records carried by runs before environments. */
  environments?: LandingTracker['environments'];
  budget?: LandingTracker['budget'];
  pausedFor?: string;
  questions: QuestionDesk['questions'];
  startedAt: number;
  phaseStartedAt?: number;
  journal: JournalHandoff;
}

/**
 * The landing's visible state: phase (also a search attribute), the step list,
 * meters and gate results. The `status` query returns `view()`; the outcome is
 * built from the same record so the two never disagree.
 */
export class LandingTracker extends RunRecord<'landing', LandingPhase, LandingOutcome> {
  readonly steps: StepRecord[] = [];
  readonly meters = emptyMeters();
  readonly gates: GateSuiteResult[] = [];
  facts: Pick<LandingOutcome, 'targetSha' | 'headSha' | 'treeSha' | 'mergedSha' | 'provenance' | 'supersedes' | 'batch' | 'culpritIn' | 'queue'> = {};
  readonly sessions: NonNullable<LandingOutcome['sessions']> = [];
  readonly fixLoops: NonNullable<LandingOutcome['fixLoops']> = [];
  readonly reviews: NonNullable<LandingOutcome['reviews']> = [];
  readonly environments: NonNullable<LandingOutcome['environments']> = [];
  outcome?: LandingOutcome;
  /** The landing's budget (from the request) and, while paused for it, the limit that was crossed. */
  budget?: NonNullable<LandingStatusView['budget']>;
  pausedFor?: string;
  /** Numbered events for the live stream: phases, steps, gates, sessions, cache, meters, questions. */
  journal = new RunJournal();
  /** Questions the landing waits on: its own and its children's (workflows/questions.ts). */
  desk = new QuestionDesk(this.journal);
  private startedAt = Date.now();
  private phaseStartedAt?: number;

  constructor(
    readonly runId: string,
    readonly request: LandingRequest,
    private readonly effects: TrackerEffects = workflowEffects,
  ) {
    super('landing', 'validate');
  }

  /**
   * The record a landing that continues as new hands to its next run (workflows/landing/continue.ts):
   * everything the status and the outcome show, the questions, the times, and where the journal's
   * numbering goes on — not the journal's events, which the earlier run keeps answering for.
   */
  carry(runId: string): TrackerCarry {
    const { phase, steps, meters, gates, facts, sessions, fixLoops, reviews, environments, budget, pausedFor, startedAt, phaseStartedAt } = this;
    return {
      phase,
      steps,
      meters,
      gates,
      facts,
      sessions,
      fixLoops,
      reviews,
      ...(environments.length ? { environments } : {}),
      ...(budget ? { budget } : {}),
      ...(pausedFor ? { pausedFor } : {}),
      questions: this.desk.questions,
      startedAt,
      ...(phaseStartedAt !== undefined ? { phaseStartedAt } : {}),
      journal: this.journal.handoff(runId),
    };
  }

  /** Takes on the record of the run before (continue-as-new); called before the handlers are installed. */
  takeOn(carried: TrackerCarry): void {
    this.phase = carried.phase;
    this.steps.push(...carried.steps);
    Object.assign(this.meters, carried.meters);
    this.gates.push(...carried.gates);
    this.facts = carried.facts;
    this.sessions.push(...carried.sessions);
    this.fixLoops.push(...carried.fixLoops);
    this.reviews.push(...carried.reviews);
    this.environments.push(...(carried.environments ?? []));
    this.budget = carried.budget;
    this.pausedFor = carried.pausedFor;
    this.startedAt = carried.startedAt;
    this.phaseStartedAt = carried.phaseStartedAt;
    this.journal = new RunJournal({}, carried.journal);
    this.desk = new QuestionDesk(this.journal);
    this.desk.questions.push(...carried.questions);
  }

  protected override entered(phase: LandingPhase, from: LandingPhase): void {
    const now = Date.now();
    const ended = this.phaseStartedAt === undefined ? undefined : { phase: from, durationMs: now - this.phaseStartedAt };
    this.phaseStartedAt = now;
    this.effects.phaseEntered(phase, ended);
    this.journal.record({ kind: 'phase', phase });
  }

  /** Records a gate suite's result (also as an event). */
  addGate(result: GateSuiteResult & { round: number }): void {
    this.gates.push(result);
    const { suiteId, status, exitCode, treeSha, round, logRef, durationMs, cache } = result;
    this.journal.record({ kind: 'gate', suiteId, status, exitCode, treeSha, round, logRef, durationMs, ...(cache ? { cache } : {}) });
  }

  /** Runs one step, recording it in the step list and the meters. */
  async step<T>(
    name: string,
    kind: 'capsule' | 'container' | 'session',
    run: () => Promise<T>,
    describe?: (value: T) => string,
    statusOf?: (value: T) => StepRecord['status'],
  ): Promise<T> {
    const record: StepRecord = { name, status: 'running', startedAt: new Date().toISOString() };
    this.steps.push(record);
    this.journal.record({ kind: 'step', name, status: 'started' });
    if (kind === 'capsule') this.meters.capsulesRun += 1;
    else if (kind === 'container') this.meters.containersRun += 1;
    try {
      const value = await run();
      record.status = statusOf?.(value) ?? 'done';
      if (describe) record.detail = describe(value);
      return value;
    } catch (error) {
      record.status = 'failed';
      record.detail = error instanceof Error ? error.message : String(error);
      throw error;
    } finally {
      record.endedAt = new Date().toISOString();
      this.journal.record({ kind: 'step', name, status: record.status === 'done' ? 'done' : 'failed', ...(record.detail ? { detail: record.detail } : {}) });
      this.journal.record({ kind: 'meters', meters: { ...this.meters, wallTimeMs: Date.now() - this.startedAt } });
    }
  }

  /**
   * Runs a compound capsule (several steps in one round trip) and records each of its parts as
   * the step it is, with the part's own times; while it runs, and when it fails, the step list
   * shows the compound under its own name.
   */
  async compound<T extends { parts: StepTiming[] }>(name: string, run: () => Promise<T>): Promise<T> {
    // step() pushes its record synchronously: it is the one at this index.
    const at = this.steps.length;
    const value = await this.step(name, 'capsule', run, (result) => result.parts.map((part) => part.name).join(', '));
    this.steps.splice(at, 1);
    this.meters.capsulesRun -= 1;
    for (const part of value.parts) {
      this.steps.push({ name: part.name, status: 'done', startedAt: part.startedAt, endedAt: part.endedAt, ...(part.detail ? { detail: part.detail } : {}) });
      this.meters.capsulesRun += 1;
      this.journal.record({ kind: 'step', name: part.name, status: 'done', ...(part.detail ? { detail: part.detail } : {}) });
    }
    return value;
  }

  finish(status: LandingStatus, summary: string, failure?: RunFailure): LandingOutcome {
    this.meters.wallTimeMs = Date.now() - this.startedAt;
    const heads: BranchHead[] = this.request.heads;
    this.outcome = {
      status,
      summary,
      runId: this.runId,
      repo: this.request.repo,
      target: this.request.target,
      heads,
      endedInPhase: this.phase,
      ...this.facts,
      gates: [...this.gates],
      ...(this.desk.questions.length ? { questions: this.desk.questions.map(({ owner: _owner, ...question }) => ({ ...question })) } : {}),
      ...(this.sessions.length ? { sessions: [...this.sessions] } : {}),
      ...(this.fixLoops.length ? { fixLoops: [...this.fixLoops] } : {}),
      ...(this.reviews.length ? { reviews: [...this.reviews] } : {}),
      ...(this.environments.length ? { environments: [...this.environments] } : {}),
      ...(failure ? { failure } : {}),
      meters: { ...this.meters },
    };
    this.effects.finished(status);
    this.journal.record({ kind: 'meters', meters: { ...this.meters } });
    this.journal.record({ kind: 'outcome', status, summary });
    return this.outcome;
  }

  view(): LandingStatusView {
    return {
      runId: this.runId,
      phase: this.phase,
      steps: this.steps.map((step) => ({ ...step })),
      meters: { ...this.meters, wallTimeMs: this.outcome?.meters.wallTimeMs ?? Date.now() - this.startedAt },
      gates: [...this.gates],
      reviews: [...this.reviews],
      pendingQuestions: this.desk.pending().map(({ answer: _answer, owner: _owner, ...question }) => question),
      ...(this.budget ? { budget: { ...this.budget } } : {}),
      ...(this.pausedFor ? { pausedFor: this.pausedFor } : {}),
      ...(this.outcome ? { outcome: this.outcome } : {}),
    };
  }
}
