import { CancellationScope, ContinueAsNew, getExternalWorkflowHandle, isCancellation, patched, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { parseDuration } from '../../core/duration';
import { FailureCode } from '../../core/failures';
import { releaseSignal } from '../../core/messages';
import type { BudgetCommand } from '../../core/session-types';
import type { LandingOutcome, LandingRequest } from '../../core/types';
import { localCapsule } from '../activity-options';
import { hostLost } from '../pinned';
import { continueAsNewDue, continueLanding, resumedState, type LandingResume } from './continue';
import { initialState, type LandingContext, type LandingState, type Next, type Phase } from './context';
import { causeOf } from '../run-record';
import { fixup } from './fixup';
import { gate } from './gate';
import { installHandlers } from './handlers';
import { merge, retarget } from './merge';
import { questions } from './questions';
import { rebase } from './rebase';
import { review } from './review';
import { LandingTracker } from './record';
import { prepare, validate } from './validate';
import { queue, verify } from './verify';

/**
 * The phases, each a function of (context, state) to the next phase or the outcome:
 *
 *   validate → prepare → rebase → questions → gate ─green─→ review ─approved─→ verify → queue → merge → landed
 *                          ↑          ↑          │red          │findings                        │target moved
 *                          │          └─ fixup ←─┴─────────────┘                                ↓
 *                          └──────────────────────────────────────────────────────────────── retarget
 */
const phases: Record<Phase, (ctx: LandingContext, state: LandingState) => Promise<Next>> = {
  validate,
  prepare,
  rebase,
  questions,
  gate,
  review,
  fixup,
  verify,
  queue,
  merge,
  retarget,
};

/**
 * landing: the loop over the phases, then the finale (release the target queue, cleanup by
 * manifest, the recorded outcome). Every exit path, cancellation included, returns and records
 * an outcome. A long landing continues as new between phases (continue.ts): `resume` is what the
 * run before it handed on.
 */
export async function landing(request: LandingRequest, resume?: LandingResume): Promise<LandingOutcome> {
  const { workflowId: runId, taskQueue } = workflowInfo();
  const tracker = new LandingTracker(runId, request);
  if (request.budget) {
    const { tokens, costUsd, sessions, wall, onExhausted } = request.budget;
    tracker.budget = { tokens, costUsd, sessions, wallMs: parseDuration(wall) ?? 8 * 3_600_000, onExhausted };
  }
  if (resume) tracker.takeOn(resume.tracker);
  const budgetControl: { pending?: BudgetCommand } = {};
  const admission: LandingContext['queue'] = resume ? { ...resume.queue } : { admitted: false };
  installHandlers(tracker, budgetControl, admission);
  const ctx: LandingContext = {
    runId,
    taskQueue,
    request,
    tracker,
    budgetControl,
    startedAt: resume?.startedAt ?? Date.now(),
    gateFiles: resume?.gateFiles ?? { asked: 0 },
    hostLostAfterMs: parseDuration(request.recipes?.limits.session.hostLostAfter ?? '5m') ?? 5 * 60_000,
    // The recipe's wait for an answer (none: as long as it takes), from the snapshot the run started with.
    ...(request.recipes?.limits.questions?.wait ? { questionWaitMs: parseDuration(request.recipes.limits.questions.wait) } : {}),
    local: proxyLocalActivities<Activities>(localCapsule),
    queue: admission,
  };
  const state = resume ? resumedState(resume, ctx.hostLostAfterMs) : initialState();

  let outcome: LandingOutcome;
  try {
    outcome = await run(ctx, state, resume?.next ?? 'validate', resume?.continued ?? 0);
  } catch (error) {
    // Going on in a fresh run is not an ending: no finale, no outcome.
    if (error instanceof ContinueAsNew) throw error;
    outcome = endedBy(error, tracker);
  }
  await CancellationScope.nonCancellable(() => finale(ctx, state, outcome));
  tracker.journal.finished = true;
  return outcome;
}

/** Hosts a landing may lose before it gives up (each loss re-places it on a live host). */
const maxLostHosts = 2;

async function run(ctx: LandingContext, state: LandingState, first: Phase, continued: number): Promise<LandingOutcome> {
  for (let next: Phase = first; ;) {
    let decided: Next;
    try {
      decided = await phases[next](ctx, state);
    } catch (error) {
      if (!state.hostId || !hostLost(error) || state.lostHosts.length >= maxLostHosts) throw error;
      next = await replace(ctx, state);
      continue;
    }
    if ('outcome' in decided) return decided.outcome;
    next = decided.next;
    // Between phases nothing is open: a history past its budget goes on in a fresh run here.
    const long = continueAsNewDue(ctx);
    if (long) await continueLanding(ctx, state, next, long, continued);
  }
}

/**
 * The run's host is lost (no worker of it picked up a step in time): what lived only there — the
 * workspace with the rebased and fixed commits, the gate's containers, the sessions' copies — is
 * gone with it. The landing gives the target back, forgets the host and places itself again on a
 * live host from its request (origin and the host's new mirror): the same run, its journal, meters,
 * answers and approvals kept; the work redone there, from the rebase on.
 */
async function replace(ctx: LandingContext, state: LandingState): Promise<Phase> {
  const { tracker, queue } = ctx;
  const lost = state.hostId;
  tracker.journal.record({
    kind: 'host',
    state: 'lost',
    hostId: lost,
    reason: `no worker of host ${lost} picked up a step within ${Math.round((ctx.hostLostAfterMs ?? 0) / 1000)} s; the landing places itself on a live host`,
  });
  if (queue.id)
    await getExternalWorkflowHandle(queue.id)
      .signal(releaseSignal, { landingId: ctx.runId })
      .catch(() => undefined);
  const lostHosts = [...state.lostHosts, lost];
  // Counters that name steps and children (gate rounds) keep rising; everything learned on the lost host goes.
  Object.assign(state, { ...initialState(), round: state.round, mergeTries: state.mergeTries, lostHosts });
  queue.id = undefined;
  queue.admitted = false;
  return 'validate';
}

/** The outcome of a landing a phase did not finish: cancelled, out of budget, or failed (the cause named). */
function endedBy(error: unknown, tracker: LandingTracker): LandingOutcome {
  if (isCancellation(error)) return tracker.finish('cancelled', `cancelled in phase ${tracker.phase}; nothing was merged by this run`);
  if ((error as { type?: string }).type === FailureCode.budgetExhausted) {
    const message = (error as Error).message;
    return tracker.fail(FailureCode.budgetExhausted, `${message}; stopped in phase ${tracker.phase}; nothing was merged`, { message });
  }
  // Anything else a phase did not turn into an outcome: failed, with the cause's own type when it has one.
  const failure = causeOf(error);
  return tracker.fail(FailureCode.internal, `failed in phase ${tracker.phase}: ${failure.message}`, failure);
}

/** The history marker of landings that end with `capsule.finishRun` (their cleanup after they close) instead of `capsule.cleanupRun`. */
const finishOnHostPatch = 'landing-finish-on-host';

/** Runs even when the workflow is cancelled: free the target, clean up by manifest, record the outcome. */
async function finale({ runId, tracker, queue }: LandingContext, state: LandingState, outcome: LandingOutcome): Promise<void> {
  // A lost host cleans up after itself when it comes back (its files and containers are its own).
  const host = state.lostHosts.includes(state.hostId) ? undefined : state.host;
  // Free the target for the next landing, whether this one merged, failed or was cancelled: the
  // cleanup does it first; without a cleanup (or when it failed), a signal of the landing's own.
  const release = () =>
    queue.id
      ? getExternalWorkflowHandle(queue.id)
          .signal(releaseSignal, { landingId: runId })
          .catch(() => undefined)
      : undefined;
  if (!host) return void (await release());
  tracker.enter('cleanup');
  const releasing = queue.id ? { release: { queueId: queue.id } } : {};
  try {
    if (patched(finishOnHostPatch)) {
      // On the host, in this workflow task (a local activity there): the target freed, the outcome
      // stored, the run marked for the host's janitor, which removes its containers and workspace
      // once the run has closed (activities/janitor/run-janitor.ts) — no trip, no task after it.
      await tracker.step(
        'capsule.finishRun',
        'capsule',
        () => host['capsule.finishRun']({ runId, outcome, ...releasing }),
        () => 'cleanup once the run has closed',
      );
    } else {
      // One round trip: release, cleanup, and the outcome stored in the run dir.
      await tracker.step('capsule.cleanupRun', 'capsule', () => host['capsule.cleanupRun']({ runId, outcome, ...releasing }));
    }
    tracker.enter('done');
  } catch (error) {
    outcome.summary += ` (cleanup failed: ${causeOf(error).message})`;
    tracker.enter('done');
    await release();
    await host['capsule.recordOutcome']({ outcome }).catch(() => undefined);
  }
}
