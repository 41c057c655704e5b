import { setHandler } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { parseDuration } from '../../core/duration';
import type { FixFailureType } from '../../core/failures';
import type { FixOutcome, FixRequest, Intent, RepoFacts, ReproSource } from '../../core/fix-types';
import { eventsQuery, fixLoopStatusQuery, runEventSignal } from '../../core/messages';
import type { SessionRequest } from '../../core/session-types';
import { budgetLeft, type BudgetLimits } from '../../policies/budget';
import { classifyIntent, roleFor } from '../../policies/intent';
import type { ReproChoice } from '../../policies/repro-discovery';
import { hostQueue } from '../../core/queues';
import { QuestionDesk } from '../questions';
import { RunJournal } from '../run-journal';
import { RunRecord, type RunFailure } from '../run-record';

export type PartialFixOutcome = Omit<FixOutcome, 'filesChanged' | 'fixBranch'>;

/**
 * A fix loop's record: its routing, the state the `status` query shows and the outcome is built
 * from, its own live journal (GET /v1/runs/:id/events), and where it works (host, base commit).
 */
export class FixRecord extends RunRecord<'fix', string, PartialFixOutcome> {
  readonly started = Date.now();
  readonly intent: Intent;
  readonly routedTo: ReturnType<typeof roleFor>;
  /** The repro, once grounded (policies/repro-discovery.ts): the command, where it came from, why. */
  reproCommand = '';
  reproSource: ReproSource | null = null;
  reproReason = '';
  /** What the loop read of the repository, latest first (the playbooks' make database comes from here). */
  facts: RepoFacts | undefined;
  readonly groundingFiles: string[] = [];
  /** How often each repro failure (policies/repeated-failure.ts sightingKey) has been seen. */
  readonly sightings: Record<string, number> = {};
  readonly journal = new RunJournal();
  /** Questions the loop waits on (its agents'); a loop working for a landing shows them there too. */
  readonly desk: QuestionDesk;
  /** Follow-up sessions that carried answers to an agent's questions (names them). */
  followUps = 0;
  /** A host step no worker of the host picks up for this long: the host is lost (the recipe's limits.session.hostLostAfter). */
  readonly hostLostAfterMs: number;
  /** Hosts this loop lost; a loop with a workspace of its own re-placed itself after each. */
  readonly lostHosts: string[] = [];

  /** The host's queue for a step, with the lost-host limit. */
  hostOptions(): { taskQueue: string; scheduleToStartTimeout: number } {
    return { taskQueue: hostQueue(this.hostId), scheduleToStartTimeout: this.hostLostAfterMs };
  }
  readonly state = {
    phase: 'discover',
    reproExitCode: null as number | null,
    repairAttempts: 0,
    verifyFailed: false,
    playbookUsed: null as string | null,
    commandFailures: {} as Record<string, number>,
    circuitBreakerTriggered: false,
    sessions: [] as FixOutcome['sessions'],
    meters: { capsulesRun: 0, containersRun: 0, agentSessions: 0, inputTokens: 0, outputTokens: 0, costUsd: 0, wallTimeMs: 0 },
  };
  outcome: FixOutcome | undefined;
  /** Where the loop works, once placed: the workspace's host and the commit it started from. */
  host: Activities | undefined;
  hostId = '';
  baseSha = '';
  sessionTimeout = '20m';
  reproRounds = 0;
  groundRounds = 0;

  constructor(readonly request: FixRequest) {
    super('fix', 'discover');
    this.desk = new QuestionDesk(this.journal, request.reportTo);
    this.hostLostAfterMs = parseDuration(request.recipes?.limits.session.hostLostAfter ?? '5m') ?? 5 * 60_000;
    this.intent = classifyIntent(request.request);
    this.routedTo = roleFor(this.intent);
    const { intent, routedTo } = this;
    setHandler(fixLoopStatusQuery, () => ({
      ...this.state,
      intent,
      routedTo,
      reproCommand: this.reproCommand,
      reproSource: this.reproSource,
      reproReason: this.reproReason,
      groundingFiles: [...this.groundingFiles],
      pendingQuestions: this.desk.pending().map(({ answer: _answer, owner: _owner, ...question }) => question),
      ...(this.outcome ? { outcome: this.outcome } : {}),
    }));
    setHandler(eventsQuery, ({ after, limit } = {}) => this.journal.page(after, limit));
    setHandler(runEventSignal, ({ key, ...event }) => (event.kind === 'question' ? this.desk.adopt(event, key) : this.journal.record(event, key)));
    // Its agents' questions: answered here (the `answer` update) or through the run it works for.
    this.desk.install();
  }

  /** Takes in what grounding read and decided: the facts for the playbooks, the repro for the rest of the loop. */
  ground(facts: RepoFacts, choice?: ReproChoice): void {
    this.facts = facts;
    for (const file of facts.read) if (!this.groundingFiles.includes(file)) this.groundingFiles.push(file);
    if (!choice) return;
    this.reproCommand = choice.command ?? '';
    this.reproSource = choice.source;
    this.reproReason = [choice.reason, ...facts.notes].join('; ');
  }

  protected override entered(phase: string): void {
    this.state.phase = phase;
    this.journal.record({ kind: 'phase', phase });
  }

  finish(kind: FixOutcome['outcome'], summary: string, failure?: RunFailure): PartialFixOutcome {
    const { state } = this;
    const failureType = (failure?.type ?? null) as FixFailureType | null;
    return {
      outcome: kind,
      summary,
      runId: this.request.runId,
      intent: this.intent,
      routedTo: this.routedTo,
      reproCommand: this.reproCommand,
      reproSource: this.reproSource,
      reproReason: this.reproReason,
      groundingFiles: [...this.groundingFiles],
      reproExitCode: state.reproExitCode,
      repairAttempts: state.repairAttempts,
      verifyFailed: state.verifyFailed,
      playbookUsed: state.playbookUsed,
      commandFailures: Object.entries(state.commandFailures).map(([command, count]) => ({ command, count })),
      circuitBreakerTriggered: state.circuitBreakerTriggered,
      failureType,
      sessions: [...state.sessions],
      meters: { ...state.meters, wallTimeMs: Date.now() - this.started },
    };
  }

  /** The loop's budget as limits, when it was given one in full (a landing gives what it has left). */
  loopBudget(): { limits: BudgetLimits; onExhausted: 'pause' | 'stop' } | undefined {
    const budget = this.request.budget;
    if (!budget || budget.tokens === undefined || budget.costUsd === undefined || budget.sessions === undefined || budget.wall === undefined) return undefined;
    return {
      limits: { tokens: budget.tokens, costUsd: budget.costUsd, sessions: budget.sessions, wallMs: parseDuration(budget.wall) ?? 8 * 3_600_000 },
      onExhausted: budget.onExhausted ?? 'stop',
    };
  }

  spend() {
    return { ...this.state.meters, sessionsSpawned: this.state.meters.agentSessions, wallTimeMs: Date.now() - this.started };
  }

  /** The loop's sessions share its budget: each gets what the earlier ones left. */
  sessionBudget(): { budget?: SessionRequest['budget'] } {
    const whole = this.loopBudget();
    if (!whole) return this.request.budget ? { budget: this.request.budget } : {};
    return { budget: { ...budgetLeft(this.spend(), whole.limits), onExhausted: whole.onExhausted } };
  }
}
