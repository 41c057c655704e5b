import { getExternalWorkflowHandle, setHandler } from '@temporalio/workflow';
import type { BatchMemberResult, BatchOutcome, BatchRequest } from '../../core/batch-types';
import { batchMemberGoneSignal, batchResultSignal, batchStatusQuery, type BatchStatusView } from '../../core/messages';
import { metrics } from '../metrics';

/*
 * A batch's record: the outcome its phases fill in (rounds, merges, each member's result), what its
 * `status` query shows, the members that ended meanwhile, and how a member hears its result. It does
 * not extend the shared `RunRecord` (../run-record.ts): that protocol maps a run's failure to its
 * outcome through the failure table (core/failures.ts), and a batch never ends through it — a failed
 * or cancelled batch keeps what merged, writes why in its summary, and its members go on alone.
 */

/** How a member hears what the batch decided about it (landed, culprit, retry); once per member. */
export type Report = (landingId: string, result: BatchMemberResult) => Promise<void>;

/** The batch's handlers (a member gone, the status query) and its report to the members, on `outcome`. */
export function batchRecord(
  request: BatchRequest,
  outcome: BatchOutcome,
): { gone: Set<string>; progress: { state: BatchStatusView['state'] }; report: Report } {
  // Members that ended while the batch runs (cancelled, failed: the queue forwards their release): never merged.
  const gone = new Set<string>();
  setHandler(batchMemberGoneSignal, ({ landingId }) => void gone.add(landingId));
  const progress: { state: BatchStatusView['state'] } = { state: 'stacking' };
  setHandler(batchStatusQuery, () => ({
    state: progress.state,
    members: request.members.map((member) => member.landingId),
    rounds: [...outcome.rounds],
    merges: [...outcome.merges],
    results: { ...outcome.results },
  }));
  const report = async (landingId: string, result: BatchMemberResult) => {
    if (outcome.results[landingId]) return;
    outcome.results[landingId] = result;
    metrics.batchResult(result.kind);
    // A member that is gone (cancelled, ended) has nobody to tell.
    await getExternalWorkflowHandle(landingId)
      .signal(batchResultSignal, result)
      .catch(() => undefined);
  };
  return { gone, progress, report };
}

/** The summary of a batch that ended without one of its own (no invalid gate file, refusal or failure). */
export function batchSummary(request: BatchRequest, outcome: BatchOutcome): string {
  const landed = Object.values(outcome.results).filter((result) => result.kind === 'landed').length;
  const culprits = Object.entries(outcome.results)
    .filter(([, result]) => result.kind === 'culprit')
    .map(([id]) => id);
  return `${landed} of ${request.members.length} landed in ${outcome.merges.length} fast-forward(s) after ${outcome.rounds.length} gate round(s)${culprits.length ? `; culprit(s): ${culprits.join(', ')}` : ''}`;
}
