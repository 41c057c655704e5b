import { CancellationScope, isCancellation, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities, DispatchPlan } from '../../activities';
import { parseDuration } from '../../core/duration';
import { FailureCode } from '../../core/failures';
import type { SessionAttemptReport, SessionOutcome, SessionRequest } from '../../core/session-types';
import { decideNext, type AttemptClass, type AttemptRecord, type SessionDecision } from '../../policies/session-policy';
import { capsule } from '../activity-options';
import { placeOnHost, runAttempt, type Placement } from './attempt';
import { SessionRecord } from './record';
import { typedCauseOf } from '../run-record';

/**
 * agentSession: validate harness#model → prepare (or use the run's workspace) →
 * attempt → classify → evidence gate → policy (collect / respawn / escalate / give up),
 * with meters and a budget that pauses or stops the run when spent.
 */
export async function agentSession(request: SessionRequest): Promise<SessionOutcome> {
  const record = new SessionRecord(request);
  const shared = proxyActivities<Activities>({ ...capsule, taskQueue: workflowInfo().taskQueue });
  const dispatched = await dispatch(record, request, shared);
  if (!('plan' in dispatched)) return dispatched.outcome;
  const { plan } = dispatched;
  const placed: { place?: Placement } = {};
  try {
    return await runAttempts(record, plan, request, shared, placed);
  } finally {
    await CancellationScope.nonCancellable(() => finale(record, request, placed.place));
  }
}

/** Dispatch validation before any container: the plan, or the outcome that says why there is none. */
async function dispatch(record: SessionRecord, request: SessionRequest, shared: Activities): Promise<{ plan: DispatchPlan } | { outcome: SessionOutcome }> {
  let plan: DispatchPlan;
  try {
    record.meters.capsulesRun += 1;
    plan = await shared['session.validateDispatch']({
      harnessModel: request.harnessModel,
      ...(request.ladder ? { ladder: request.ladder } : {}),
      ...(request.limits ? { limits: request.limits } : {}),
      ...(request.budget ? { budget: request.budget } : {}),
      ...(request.recipes ? { recipes: request.recipes } : {}),
    });
  } catch (error) {
    // Whatever refused the dispatch, nothing was started: the request is what cannot run.
    const failure = typedCauseOf(error);
    return { outcome: record.fail(FailureCode.invalidRequest, `not dispatched: ${failure.message}; no container was started`, failure) };
  }
  record.harnessModel = plan.harnessModel;
  if (plan.unavailable !== undefined) {
    return {
      outcome: record.fail(
        FailureCode.agentUnavailable,
        `agent-unavailable: ${plan.unavailable}; no container was started`,
        { message: plan.unavailable },
        { recipeVersion: plan.recipeVersion },
      ),
    };
  }
  const { tokens, costUsd, sessions, wall, onExhausted } = plan.budget;
  record.budget = { tokens, costUsd, sessions, wallMs: parseDuration(wall) ?? 8 * 3_600_000, onExhausted };
  return { plan };
}

async function runAttempts(
  record: SessionRecord,
  plan: DispatchPlan,
  request: SessionRequest,
  shared: Activities,
  placed: { place?: Placement },
): Promise<SessionOutcome> {
  try {
    record.state = 'preparing';
    placed.place = await placeOnHost(record, plan, request);
    record.state = 'running';
    for (;;) {
      // The budget is checked before every new container: spent → pause and ask, or stop.
      const stopped = await record.budgetGate();
      if (stopped) return stopped;
      // After a lost host, a session with a workspace of its own starts over on a live host.
      if (record.attempts.at(-1)?.class === 'lost-host') {
        if (request.workspace.kind !== 'fresh') {
          const hostId = placed.place.hostId;
          return record.fail(FailureCode.lostHost, `the host ${hostId} of this run's workspace was lost; the session cannot move without it`, {
            message: `no worker of host ${hostId} picked up the attempt`,
          });
        }
        record.state = 'preparing';
        placed.place = await placeOnHost(record, plan, request);
        record.state = 'running';
      }
      const { seen, attemptClass } = await runAttempt(record, plan, request, placed.place);
      const decision = decideNext({
        attempts: record.attempts.map(attemptRecord),
        ladder: plan.ladder,
        maxRespawns: plan.limits.maxRespawns,
        maxAttempts: plan.limits.maxAttempts,
      });
      record.decisions.push({
        afterAttempt: seen.attempt,
        action: decision.action,
        ...('harnessModel' in decision ? { harnessModel: decision.harnessModel } : {}),
        reason: 'reason' in decision ? decision.reason : `${attemptClass} on ${record.harnessModel}`,
      });
      const ended = await follow(record, plan, decision, seen, attemptClass);
      if (ended) return ended;
    }
  } catch (error) {
    if (isCancellation(error)) {
      return await CancellationScope.nonCancellable(async () => record.finish('cancelled', `cancelled after ${record.attempts.length} attempt(s)`));
    }
    const failure = typedCauseOf(error);
    return record.fail(FailureCode.internal, `failed: ${failure.message}`, failure);
  }
}

/** An attempt as the session policy reads it: its rung, its class, and why a rung could not run or a model was refused. */
function attemptRecord(entry: SessionRecord['attempts'][number]): AttemptRecord {
  return {
    harnessModel: entry.harnessModel,
    class: entry.class as AttemptClass,
    ...(entry.unavailable ? { unavailable: entry.unavailable } : {}),
    ...(entry.modelUsage?.refusedModel ? { refused: entry.modelUsage.refusedModel } : {}),
  };
}

/** Carries out the policy's decision: the outcome when the session ends, nothing when another attempt follows. */
async function follow(
  record: SessionRecord,
  plan: DispatchPlan,
  decision: SessionDecision,
  seen: SessionAttemptReport,
  attemptClass: AttemptClass,
): Promise<SessionOutcome | undefined> {
  const { attempts, meters } = record;
  switch (decision.action) {
    case 'done':
      return record.finish(
        'delivered',
        `${record.harnessModel} delivered after ${attempts.length} attempt(s)${seen.commitsAdded ? ` with ${seen.commitsAdded} commit(s)` : ''}: ${seen.result?.summary ?? ''}`,
        undefined,
        {
          ...(seen.result ? { result: seen.result } : {}),
          headSha: seen.headSha,
          recipeVersion: plan.recipeVersion,
        },
      );
    case 'ask': {
      const asked = seen.result?.questions ?? [];
      return record.finish(
        'asked',
        `${record.harnessModel} asked ${asked.length} question(s) after ${attempts.length} attempt(s): ${asked.join(' / ')}`,
        undefined,
        {
          ...(seen.result ? { result: seen.result } : {}),
          headSha: seen.headSha,
          recipeVersion: plan.recipeVersion,
        },
      );
    }
    case 'respawn':
    case 'escalate':
      if (decision.action === 'respawn') meters.respawns += 1;
      else meters.escalations += 1;
      record.harnessModel = decision.harnessModel;
      await record.report({
        type: decision.action === 'respawn' ? 'respawned' : 'escalated',
        attempt: seen.attempt + 1,
        harnessModel: record.harnessModel,
        detail: decision.reason,
      });
      return undefined;
    case 'give-up':
      return giveUp(record, plan, seen, decision.reason, attemptClass);
    case 'collect':
      // The activity already collects a finished container's result.
      return record.finish('failed', `unexpected policy decision ${decision.action}`);
  }
}

/** How a session that gives up ends: out of budget, with no agent to run, or failed. */
function giveUp(record: SessionRecord, plan: DispatchPlan, seen: SessionAttemptReport, reason: string, attemptClass: AttemptClass): SessionOutcome {
  if (attemptClass === 'budget-exhausted') {
    const why = seen.modelUsage?.lastBudgetRefusal ?? 'the run budget is exhausted';
    return record.finish('budget-exhausted', `stopped: ${why} (the model gateway refused the next request)`, undefined, {
      recipeVersion: plan.recipeVersion,
    });
  }
  if (attemptClass === 'agent-unavailable') {
    const reasons = record.attempts.flatMap((entry) => (entry.unavailable ? [entry.unavailable] : []));
    return record.fail(
      FailureCode.agentUnavailable,
      `agent-unavailable: ${reasons.join('; ')} (no rung of the ladder left; ${reasons.length} of ${record.attempts.length} attempt(s) started nothing)`,
      { message: reasons.join('; ') },
      { recipeVersion: plan.recipeVersion },
    );
  }
  return record.finish('failed', `gave up after ${record.attempts.length} attempt(s): ${reason}`, undefined, { recipeVersion: plan.recipeVersion });
}

/**
 * Runs even when cancelled: the run hears how the session ended; a session that made its own
 * workspace cleans up after itself (manifest and labels only) and stores its outcome — inside a
 * landing, the landing does both.
 */
async function finale(record: SessionRecord, request: SessionRequest, place: Placement | undefined): Promise<void> {
  const outcome = record.outcome;
  if (!outcome) return;
  await record.report({
    type: outcome.status === 'delivered' ? 'delivered' : 'ended',
    harnessModel: outcome.harnessModel,
    attempt: outcome.attempts.length,
    detail: outcome.summary,
  });
  if (!place || request.workspace.kind !== 'fresh') return;
  record.meters.capsulesRun += 1;
  await place.host['capsule.cleanupRun']({ runId: request.runId }).catch(() => undefined);
  await place.host['capsule.recordOutcome']({ outcome, name: `session-${request.sessionId}` }).catch(() => undefined);
}
