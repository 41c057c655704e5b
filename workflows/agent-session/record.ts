import { condition, getExternalWorkflowHandle, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { ReportedRunEvent } from '../../core/events';
import { budgetUpdate, runEventSignal, sessionStatusQuery } from '../../core/messages';
import { searchAttributes } from '../../core/search-attributes';
import type { BudgetCommand, SessionDecisionRecord, SessionMeters, SessionOutcome, SessionRequest, SessionStatusView } from '../../core/session-types';
import { RunRecord, type RunFailure } from '../run-record';
import { budgetCommandProblem, budgetExhausted, extendBudget, type BudgetLimits } from '../../policies/budget';

function emptySessionMeters(): SessionMeters {
  return {
    sessionsSpawned: 0,
    respawns: 0,
    escalations: 0,
    reattachments: 0,
    inputTokens: 0,
    outputTokens: 0,
    costUsd: 0,
    wallTimeMs: 0,
    capsulesRun: 0,
    budgetPauses: 0,
  };
}

/**
 * An agent session's record: meters, attempts, decisions and the budget, what the `status` query
 * shows and the outcome is built from. It answers the query and the `budget` update, and tells
 * the run the session works for what happens (its live event stream).
 */
export class SessionRecord extends RunRecord<'session', SessionStatusView['state'], SessionOutcome, Partial<SessionOutcome>> {
  readonly started = Date.now();
  readonly meters = emptySessionMeters();
  readonly decisions: SessionDecisionRecord[] = [];
  readonly attempts: SessionOutcome['attempts'] = [];
  harnessModel: string;
  budget: (BudgetLimits & { onExhausted: 'pause' | 'stop' }) | undefined;
  pausedFor: string | undefined;
  outcome: SessionOutcome | undefined;
  private pendingCommand: BudgetCommand | undefined;
  private reports = 0;

  constructor(private readonly request: SessionRequest) {
    super('session', 'validating');
    this.harnessModel = request.harnessModel;
    setHandler(sessionStatusQuery, () => ({
      state: this.state,
      attempt: this.attempts.length,
      harnessModel: this.harnessModel,
      ...(this.budget ? { budget: this.budget } : {}),
      ...(this.pausedFor ? { pausedFor: this.pausedFor } : {}),
      decisions: [...this.decisions],
      meters: { ...this.meters, wallTimeMs: this.outcome?.meters.wallTimeMs ?? Date.now() - this.started },
      ...(this.outcome ? { outcome: this.outcome } : {}),
    }));
    setHandler(
      budgetUpdate,
      (command) => {
        this.pendingCommand = command;
        return { accepted: true, budget: this.budget };
      },
      {
        validator: (command: BudgetCommand) => {
          const problem = budgetCommandProblem(command, this.pausedFor !== undefined);
          if (problem) throw new Error(problem);
        },
      },
    );
  }

  /** The session's state (validating, preparing, running, paused-budget, done): its phase. */
  get state(): SessionStatusView['state'] {
    return this.phase;
  }

  set state(state: SessionStatusView['state']) {
    this.phase = state;
  }

  finish(status: SessionOutcome['status'], summary: string, failure?: RunFailure, extra: Partial<SessionOutcome> = {}): SessionOutcome {
    this.meters.wallTimeMs = Date.now() - this.started;
    this.state = 'done';
    this.pausedFor = undefined;
    this.outcome = {
      status,
      summary,
      runId: this.request.runId,
      sessionId: this.request.sessionId,
      role: this.request.role,
      harnessModel: this.harnessModel,
      attempts: [...this.attempts],
      decisions: [...this.decisions],
      meters: { ...this.meters },
      ...(failure ? { failure: { type: failure.type, message: failure.message } } : {}),
      ...extra,
    };
    upsertSearchAttributes([{ key: searchAttributes.outcome, value: status }]);
    return this.outcome;
  }

  /** Tells the run this session works for what just happened (best effort: its journal is a view). */
  async report(event: Omit<Extract<ReportedRunEvent, { kind: 'session' }>, 'kind' | 'sessionId' | 'role' | 'key'>): Promise<void> {
    if (!this.request.reportTo) return;
    this.reports += 1;
    const key = `${workflowInfo().workflowId}:${this.reports}`;
    await getExternalWorkflowHandle(this.request.reportTo)
      .signal(runEventSignal, { kind: 'session', sessionId: this.request.sessionId, role: this.request.role, ...event, key })
      .catch(() => undefined);
  }

  /**
   * Before every new container: a spent budget stops the session, or pauses it until an operator
   * extends it (go on) or stops it. Returns the outcome when the session ends here.
   */
  async budgetGate(): Promise<SessionOutcome | undefined> {
    for (;;) {
      this.meters.wallTimeMs = Date.now() - this.started;
      const limits = this.budget!;
      const spent = budgetExhausted(this.meters, limits);
      if (!spent) return undefined;
      const afterAttempt = this.attempts.length;
      if (limits.onExhausted === 'stop') {
        this.decisions.push({ afterAttempt, action: 'stop', reason: `budget exhausted (${spent})` });
        return this.finish('budget-exhausted', `stopped: the run budget is exhausted (${spent})`);
      }
      this.decisions.push({ afterAttempt, action: 'pause', reason: `budget exhausted (${spent}); waiting for extend or stop` });
      this.meters.budgetPauses += 1;
      this.state = 'paused-budget';
      this.pausedFor = spent;
      await condition(() => this.pendingCommand !== undefined);
      const command = this.pendingCommand!;
      this.pendingCommand = undefined;
      this.pausedFor = undefined;
      this.state = 'running';
      if (command.action === 'stop') {
        this.decisions.push({ afterAttempt, action: 'stop', reason: 'stopped by an operator while paused for budget' });
        return this.finish('budget-exhausted', `stopped by an operator: the run budget was exhausted (${spent})`);
      }
      this.budget = extendBudget(limits, command);
      this.decisions.push({ afterAttempt, action: 'resume', reason: 'budget extended' });
    }
  }
}
