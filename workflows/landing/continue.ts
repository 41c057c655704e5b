import { continueAsNew, patched, workflowInfo } from '@temporalio/workflow';
import type { LandingRequest } from '../../core/types';
import { continueAsNewReason, defaultHistoryBudget } from '../../policies/history-budget';
import { pinnedTo } from '../pinned';
import type { LandingContext, LandingState, Phase } from './context';
import type { TrackerCarry } from './record';

/**
 * What a landing hands to the run it continues as: the phase it goes on with, what the phases
 * learned (the state, but the host's activities, which are made again from its id), the record
 * behind the status and the outcome, and where the journal's numbering goes on.
 */
export interface LandingResume {
  next: Phase;
  state: Omit<LandingState, 'host' | 'declaredDrops'> & { declaredDrops: [string, string][] };
  tracker: TrackerCarry;
  startedAt: number;
  gateFiles: LandingContext['gateFiles'];
  queue: { id?: string; admitted: boolean };
  /** Runs of this landing before the one resumed (1 after the first continue-as-new). */
  continued: number;
}

/**
 * Why the landing should continue as new before its next phase, or undefined. A landing's
 * history grows with its steps (gate suites × rounds × retargets, sessions, reports); past
 * the budget (default Temporal's warning level, 10,000 events or 10 MB, the recipe's
 * `limits.landing.historyEvents`; or 1,000 journal events, half the journal's cap, so that no
 * event is ever trimmed from the stream) it goes on in a fresh run. Behind a patch: a run whose history
 * crossed the budget before this existed replays as it ran.
 */
export function continueAsNewDue({ request, tracker }: Pick<LandingContext, 'request' | 'tracker'>): string | undefined {
  const info = workflowInfo();
  const events = request.recipes?.limits.landing.historyEvents;
  const facts = { length: info.historyLength, sizeBytes: info.historySize, suggested: info.continueAsNewSuggested, journalSize: tracker.journal.size };
  const reason = continueAsNewReason(facts, { ...defaultHistoryBudget, ...(events ? { events } : {}) });
  return reason && patched('landing-continue-as-new') ? reason : undefined;
}

/**
 * Continues the landing as new at a phase boundary (no step, child or question is open there):
 * the same workflow id, a fresh history. Children, the target queue and the API address the
 * landing by its workflow id, so they reach the new run; its journal goes on with the next number.
 */
export async function continueLanding(ctx: LandingContext, state: LandingState, next: Phase, reason: string, continued: number): Promise<never> {
  const { tracker } = ctx;
  const { host: _host, declaredDrops, ...rest } = state;
  tracker.journal.record({
    kind: 'step',
    name: 'workflow.continueAsNew',
    status: 'done',
    detail: `${reason}: run ${continued + 1} of this landing goes on with phase ${next}`,
  });
  const resume: LandingResume = {
    next,
    state: { ...rest, declaredDrops: [...declaredDrops] },
    tracker: tracker.carry(workflowInfo().runId),
    startedAt: ctx.startedAt,
    gateFiles: ctx.gateFiles,
    queue: { ...ctx.queue },
    continued: continued + 1,
  };
  return await continueAsNew<(request: LandingRequest, resume?: LandingResume) => Promise<unknown>>(ctx.request, resume);
}

/** The state a resumed landing goes on with: the host's activities made again from its id. */
export function resumedState(resume: LandingResume, hostLostAfterMs?: number): LandingState {
  const { declaredDrops, ...rest } = resume.state;
  return { ...rest, declaredDrops: new Map(declaredDrops), ...(rest.hostId ? { host: pinnedTo(rest.hostId, hostLostAfterMs) } : {}) };
}
