import { TimeoutType } from '@temporalio/common';
import { CancellationScope, condition, getExternalWorkflowHandle, isCancellation, proxyActivities, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { DispatchPlan } from '../activities/sessions';
import { parseDuration } from '../core/duration';
import { FailureType } from '../core/errors';
import type { ReportedRunEvent } from '../core/events';
import { hostQueue } from '../core/queues';
import {
  rolesThatMustCommit,
  type BudgetCommand,
  type SessionAttemptReport,
  type SessionDecisionRecord,
  type SessionMeters,
  type SessionOutcome,
  type SessionRequest,
  type SessionStatusView,
} from '../core/session-types';
import { capsule, sessionRun } from './activity-options';
import { budgetUpdate, runEventSignal, sessionStatusQuery } from '../core/messages';
import { metrics } from './metrics';
import { budgetCommandProblem, budgetExhausted, budgetLeft, extendBudget, type BudgetLimits } from '../policies/budget';
import { classifySession } from '../policies/session-classifier';
import { decideNext, type AttemptClass } from '../policies/session-policy';
import { searchAttributes } from '../core/search-attributes';

function emptyMeters(): SessionMeters {
  return { sessionsSpawned: 0, respawns: 0, escalations: 0, reattachments: 0, inputTokens: 0, outputTokens: 0, costUsd: 0, wallTimeMs: 0, capsulesRun: 0, budgetPauses: 0 };
}

/** The activity was never picked up by a worker of its queue (the attempt's schedule-to-start timeout). */
function scheduleToStartTimedOut(error: unknown): boolean {
  const cause = (error as { cause?: { timeoutType?: unknown } }).cause;
  return cause?.timeoutType === TimeoutType.SCHEDULE_TO_START;
}

/** What is known of an attempt whose host never ran it: nothing but that. */
function lostHostReport(attempt: number, harnessModel: string, hostId: string, durationMs: number): SessionAttemptReport {
  return { attempt, harnessModel, hostId, containerId: '', exitCode: null, oomKilled: false, timedOut: false, reattached: false, foundFinished: false, durationMs, sawFirstTurn: false, commitsAdded: 0, headSha: '', logRef: '' };
}

function failureOf(error: unknown): { type: string; message: string } {
  const cause = (error as { cause?: { type?: string; message?: string } }).cause;
  return { type: cause?.type ?? 'TARMAC_INTERNAL', message: cause?.message ?? (error instanceof Error ? error.message : String(error)) };
}

/**
 * agentSession: validate harness#model → prepare (or use the run's workspace) →
 * attempt → classify → evidence gate → policy (collect / respawn / escalate / give up),
 * with meters and a budget that pauses or stops the run when spent.
 */
export async function agentSession(request: SessionRequest): Promise<SessionOutcome> {
  const { taskQueue, workflowId } = workflowInfo();
  const started = Date.now();
  const meters = emptyMeters();
  const decisions: SessionDecisionRecord[] = [];
  const attempts: SessionOutcome['attempts'] = [];
  let state: SessionStatusView['state'] = 'validating';
  let harnessModel = request.harnessModel;
  let budget: (BudgetLimits & { onExhausted: 'pause' | 'stop' }) | undefined;
  let pausedFor: string | undefined;
  let pendingCommand: BudgetCommand | undefined;
  let outcome: SessionOutcome | undefined;

  setHandler(sessionStatusQuery, () => ({
    state,
    attempt: attempts.length,
    harnessModel,
    ...(budget ? { budget } : {}),
    ...(pausedFor ? { pausedFor } : {}),
    decisions: [...decisions],
    meters: { ...meters, wallTimeMs: outcome?.meters.wallTimeMs ?? Date.now() - started },
    ...(outcome ? { outcome } : {}),
  }));
  setHandler(
    budgetUpdate,
    (command) => {
      pendingCommand = command;
      return { accepted: true, budget };
    },
    {
      validator: (command: BudgetCommand) => {
        const problem = budgetCommandProblem(command, pausedFor !== undefined);
        if (problem) throw new Error(problem);
      },
    },
  );

  const finish = (status: SessionOutcome['status'], summary: string, extra: Partial<SessionOutcome> = {}): SessionOutcome => {
    meters.wallTimeMs = Date.now() - started;
    state = 'done';
    pausedFor = undefined;
    outcome = {
      status,
      summary,
      runId: request.runId,
      sessionId: request.sessionId,
      role: request.role,
      harnessModel,
      attempts: [...attempts],
      decisions: [...decisions],
      meters: { ...meters },
      ...extra,
    };
    upsertSearchAttributes([{ key: searchAttributes.outcome, value: status }]);
    return outcome;
  };

  /** Tells the run this session works for what just happened (its live event stream). */
  let reports = 0;
  const reportEvent = async (event: Omit<Extract<ReportedRunEvent, { kind: 'session' }>, 'kind' | 'sessionId' | 'role' | 'key'>): Promise<void> => {
    if (!request.reportTo) return;
    reports += 1;
    const key = `${workflowId}:${reports}`;
    await getExternalWorkflowHandle(request.reportTo)
      .signal(runEventSignal, { kind: 'session', sessionId: request.sessionId, role: request.role, ...event, key })
      .catch(() => undefined);
  };

  const shared = proxyActivities<Activities>({ ...capsule, taskQueue });
  let plan: DispatchPlan;
  try {
    meters.capsulesRun += 1;
    plan = await shared['session.validateDispatch']({
      harnessModel: request.harnessModel,
      ...(request.ladder ? { ladder: request.ladder } : {}),
      ...(request.limits ? { limits: request.limits } : {}),
      ...(request.budget ? { budget: request.budget } : {}),
    });
  } catch (error) {
    const failure = failureOf(error);
    return finish('invalid-request', `not dispatched: ${failure.message}; no container was started`, { failure });
  }
  harnessModel = plan.harnessModel;
  if (plan.unavailable !== undefined) {
    return finish('agent-unavailable', `agent-unavailable: ${plan.unavailable}; no container was started`, {
      failure: { type: FailureType.agentUnavailable, message: plan.unavailable },
      recipeVersion: plan.recipeVersion,
    });
  }
  budget = {
    tokens: plan.budget.tokens,
    costUsd: plan.budget.costUsd,
    sessions: plan.budget.sessions,
    wallMs: parseDuration(plan.budget.wall) ?? 8 * 3_600_000,
    onExhausted: plan.budget.onExhausted,
  };

  let host: Activities | undefined;
  try {
    return await runAttempts();
  } finally {
    if (outcome) {
      const end = outcome;
      await CancellationScope.nonCancellable(() =>
        reportEvent({ type: end.status === 'delivered' ? 'delivered' : 'ended', harnessModel: end.harnessModel, attempt: end.attempts.length, detail: end.summary }),
      );
    }
    // A session that made its own workspace cleans up after itself (manifest and labels only)
    // and stores its outcome; inside a landing, the landing does both.
    const cleaner = host;
    if (cleaner && request.workspace.kind === 'fresh' && outcome) {
      const record = outcome;
      await CancellationScope.nonCancellable(async () => {
        meters.capsulesRun += 1;
        await cleaner['capsule.cleanupRun']({ runId: request.runId }).catch(() => undefined);
        await cleaner['capsule.recordOutcome']({ outcome: record, name: `session-${request.sessionId}` }).catch(() => undefined);
      });
    }
  }

  async function runAttempts(): Promise<SessionOutcome> {
    try {
      state = 'preparing';
      let hostId = '';
      let baseSha = '';
      let pinned!: Activities;
      const repo = request.workspace.repo;
      const workspace = request.workspace;
      /** Where the attempts run: a workspace of the session's own (on whichever host prepares it) or the run's. */
      const placeOnHost = async () => {
        if (workspace.kind === 'fresh') {
          meters.capsulesRun += 1;
          ({ hostId, baseSha } = await shared['capsule.prepareSessionWorkspace']({ runId: request.runId, repo, ref: workspace.ref }));
        } else {
          ({ hostId, baseSha } = workspace);
        }
        const hostLostAfterMs = parseDuration(plan.limits.hostLostAfter ?? '5m') ?? 5 * 60_000;
        pinned = proxyActivities<Activities>({ ...sessionRun(parseDuration(plan.limits.timeout) ?? 30 * 60_000, hostLostAfterMs), taskQueue: hostQueue(hostId) });
        host = proxyActivities<Activities>({ ...capsule, taskQueue: hostQueue(hostId) });
      };
      await placeOnHost();

      state = 'running';
      for (;;) {
        // The budget is checked before every new container: spent → pause and ask, or stop.
        for (;;) {
          meters.wallTimeMs = Date.now() - started;
          const limits = budget!;
          const spent = budgetExhausted(meters, limits);
          if (!spent) break;
          if (limits.onExhausted === 'stop') {
            decisions.push({ afterAttempt: attempts.length, action: 'stop', reason: `budget exhausted (${spent})` });
            return finish('budget-exhausted', `stopped: the run budget is exhausted (${spent})`);
          }
          decisions.push({ afterAttempt: attempts.length, action: 'pause', reason: `budget exhausted (${spent}); waiting for extend or stop` });
          meters.budgetPauses += 1;
          state = 'paused-budget';
          pausedFor = spent;
          await condition(() => pendingCommand !== undefined);
          const command = pendingCommand!;
          pendingCommand = undefined;
          pausedFor = undefined;
          state = 'running';
          if (command.action === 'stop') {
            decisions.push({ afterAttempt: attempts.length, action: 'stop', reason: 'stopped by an operator while paused for budget' });
            return finish('budget-exhausted', `stopped by an operator: the run budget was exhausted (${spent})`);
          }
          budget = extendBudget(limits, command);
          decisions.push({ afterAttempt: attempts.length, action: 'resume', reason: 'budget extended' });
        }

        const harness = plan.harnesses[harnessModel.split('#')[0]!]!;
        // After a lost host, a session with a workspace of its own starts over on a live host.
        if (attempts.at(-1)?.class === 'lost-host') {
          if (workspace.kind !== 'fresh') {
            return finish('failed', `the host ${hostId} of this run's workspace was lost; the session cannot move without it`, {
              failure: { type: 'TARMAC_LOST_HOST', message: `no worker of host ${hostId} picked up the attempt` },
            });
          }
          state = 'preparing';
          await placeOnHost();
          state = 'running';
        }
        meters.sessionsSpawned += 1;
        const attemptStarted = Date.now();
        const report: SessionAttemptReport | undefined = await pinned['session.run']({
          runId: request.runId,
          sessionId: request.sessionId,
          attempt: attempts.length + 1,
          role: request.role,
          harnessModel,
          harness,
          task: request.task,
          limits: plan.limits,
          repo,
          baseSha,
          ...(request.reportTo ? { reportTo: request.reportTo } : {}),
          ...(request.continues ? { continues: request.continues } : {}),
          // What the attempt's model gateway lets through: what is left of the run budget.
          modelBudget: (({ tokens, costUsd }) => ({ tokens, costUsd }))(budgetLeft(meters, budget!)),
        }).catch((error: unknown) => {
          // No worker of the host picked the attempt up in time: the host is lost (an answer, not an error).
          if (scheduleToStartTimedOut(error)) return undefined;
          throw error;
        });
        const hostLost = report === undefined;
        // An attempt its worker could not start spawned nothing.
        if (report?.unavailable !== undefined) meters.sessionsSpawned -= 1;
        const seen: SessionAttemptReport = report ?? lostHostReport(attempts.length + 1, harnessModel, hostId, Date.now() - attemptStarted);
        if (seen.reattached) meters.reattachments += 1;
        // Usage metered by the model gateway wins over what the CLI reports of itself.
        const usage = seen.modelUsage ?? seen.result?.usage;
        if (usage) {
          meters.inputTokens += usage.inputTokens;
          meters.outputTokens += usage.outputTokens;
          meters.costUsd += usage.costUsd;
        }
        let attemptClass: AttemptClass = classifySession({
          exitCode: seen.exitCode,
          oomKilled: seen.oomKilled,
          timedOut: seen.timedOut,
          hostLost,
          sawFirstTurn: seen.sawFirstTurn,
          result: seen.result ? 'valid' : seen.resultProblem === 'result.json is missing' ? 'missing' : 'invalid',
          // The activity read the result, so it is collected even when the container had finished unseen.
          collected: true,
          // The model gateway refused a request: the run's budget, not the agent, ended the attempt.
          budgetExceeded: (seen.modelUsage?.budgetRefusals ?? 0) > 0,
          unavailable: seen.unavailable !== undefined,
        });
        if (seen.foundFinished) {
          decisions.push({ afterAttempt: seen.attempt, action: 'collect', reason: 'found the session finished (done-undelivered) and collected its result' });
        }
        // Trust the evidence, not the claim: code roles must have added commits.
        // A resolver that left its rebase unfinished has not resolved the conflict, whatever it commits.
        if (attemptClass === 'delivered' && rolesThatMustCommit.includes(request.role) && (seen.commitsAdded < 1 || seen.workspaceState === 'rebasing')) attemptClass = 'no-evidence';
        attempts.push({ ...seen, class: attemptClass });
        metrics.sessionAttempt(attemptClass, request.role);
        if (usage) metrics.tokens(request.role, usage.inputTokens, usage.outputTokens);
        await reportEvent({ type: 'classified', attempt: seen.attempt, harnessModel, class: attemptClass });

        const decision = decideNext({
          attempts: attempts.map((entry) => ({ harnessModel: entry.harnessModel, class: entry.class as AttemptClass })),
          ladder: plan.ladder,
          maxRespawns: plan.limits.maxRespawns,
          maxAttempts: plan.limits.maxAttempts,
          live: false,
        });
        decisions.push({
          afterAttempt: seen.attempt,
          action: decision.action,
          ...('harnessModel' in decision ? { harnessModel: decision.harnessModel } : {}),
          reason: 'reason' in decision ? decision.reason : `${attemptClass} on ${harnessModel}`,
        });
        switch (decision.action) {
          case 'done':
            return finish('delivered', `${harnessModel} delivered after ${attempts.length} attempt(s)${seen.commitsAdded ? ` with ${seen.commitsAdded} commit(s)` : ''}: ${seen.result?.summary ?? ''}`, {
              ...(seen.result ? { result: seen.result } : {}),
              headSha: seen.headSha,
              recipeVersion: plan.recipeVersion,
            });
          case 'respawn':
            meters.respawns += 1;
            harnessModel = decision.harnessModel;
            await reportEvent({ type: 'respawned', attempt: seen.attempt + 1, harnessModel });
            break;
          case 'escalate':
            meters.escalations += 1;
            harnessModel = decision.harnessModel;
            await reportEvent({ type: 'escalated', attempt: seen.attempt + 1, harnessModel });
            break;
          case 'give-up':
            if (attemptClass === 'budget-exhausted') {
              const why = seen.modelUsage?.lastBudgetRefusal ?? 'the run budget is exhausted';
              return finish('budget-exhausted', `stopped: ${why} (the model gateway refused the next request)`, { recipeVersion: plan.recipeVersion });
            }
            if (attemptClass === 'agent-unavailable') {
              const reasons = attempts.flatMap((entry) => (entry.unavailable ? [entry.unavailable] : []));
              return finish('agent-unavailable', `agent-unavailable: ${reasons.join('; ')} (no rung of the ladder left; ${reasons.length} of ${attempts.length} attempt(s) started nothing)`, {
                failure: { type: FailureType.agentUnavailable, message: reasons.join('; ') },
                recipeVersion: plan.recipeVersion,
              });
            }
            return finish('failed', `gave up after ${attempts.length} attempt(s): ${decision.reason}`, { recipeVersion: plan.recipeVersion });
          case 'wait':
          case 'collect':
            // The activity already waits on a live container and collects a finished one.
            return finish('failed', `unexpected policy decision ${decision.action}`);
        }
      }
    } catch (error) {
      if (isCancellation(error)) {
        return await CancellationScope.nonCancellable(async () => finish('cancelled', `cancelled after ${attempts.length} attempt(s)`));
      }
      const failure = failureOf(error);
      return finish('failed', `failed: ${failure.message}`, { failure });
    }
  }
}
