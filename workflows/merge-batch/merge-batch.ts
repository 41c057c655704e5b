import { CancellationScope, getExternalWorkflowHandle, isCancellation, log, setHandler, workflowInfo } from '@temporalio/workflow';
import type { BatchMemberResult, BatchOutcome, BatchRequest } from '../../core/batch-types';
import { batchMemberGoneSignal, batchResultSignal, batchStatusQuery, type BatchStatusView } from '../../core/messages';
import { metrics } from '../metrics';
import { pinnedTo } from '../pinned';
import { stackGateMerge } from './phases';

/**
 * mergeBatch: the target queue's speculative batch (policies/batch.ts). The members' verified
 * heads are stacked on the target in queue order, the stack's head is gated once, and green
 * fast-forwards the target to it. Red is bisected by prefix: a green prefix merges as it is (a
 * tested tree), the member the first red prefix adds is the culprit (it goes to its fixup round),
 * and the members after it are stacked again on what merged and gated again. Every member is told
 * its result (`batchResult`): landed, culprit, or retry (go on alone). The target moves only by
 * fast-forwards to trees this batch gated green.
 *
 *   stack ──→ gate(prefix) ──green all──→ verify → merge → landed
 *     ↑           │red
 *     │           ↓
 *     │       bisect ──→ merge green prefix, culprit named ──┐
 *     └──────────────── members after the culprit ───────────┘
 */
export async function mergeBatch(request: BatchRequest): Promise<BatchOutcome> {
  const { workflowId: batchId } = workflowInfo();
  const { target, hostId } = request;
  const host = pinnedTo(hostId, request.hostLostAfterMs);
  const outcome: BatchOutcome = { batchId, target, merges: [], rounds: [], results: {}, summary: '' };
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
  try {
    await stackGateMerge(request, host, outcome, report, gone, progress);
  } catch (error) {
    // Cancelled (by an operator) or failed: what merged stays merged; the rest go on alone.
    log.warn('batch failed', { batchId, error: String(error) });
    outcome.summary = isCancellation(error) ? 'the batch was cancelled' : `the batch failed: ${error instanceof Error ? error.message : String(error)}`;
  } finally {
    // Whatever happened, every member hears a result: the ones not decided here go on alone.
    await CancellationScope.nonCancellable(async () => {
      for (const member of request.members)
        await report(member.landingId, { kind: 'retry', batchId, reason: outcome.summary || 'the batch ended before deciding about it' });
      await host['capsule.cleanupRun']({ runId: batchId }).catch((error: unknown) => log.warn('batch cleanup failed', { batchId, error: String(error) }));
    });
    progress.state = 'done';
  }
  if (!outcome.summary) {
    const landed = Object.values(outcome.results).filter((result) => result.kind === 'landed').length;
    const culprits = Object.entries(outcome.results)
      .filter(([, result]) => result.kind === 'culprit')
      .map(([id]) => id);
    outcome.summary = `${landed} of ${request.members.length} landed in ${outcome.merges.length} fast-forward(s) after ${outcome.rounds.length} gate round(s)${culprits.length ? `; culprit(s): ${culprits.join(', ')}` : ''}`;
  }
  return outcome;
}
