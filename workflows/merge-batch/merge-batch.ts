import { CancellationScope, isCancellation, log, workflowInfo } from '@temporalio/workflow';
import type { BatchOutcome, BatchRequest } from '../../core/batch-types';
import { pinnedTo } from '../pinned';
import { stackGateMerge } from './phases';
import { batchRecord, batchSummary } from './record';

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
  const { gone, progress, report } = batchRecord(request, outcome);
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
  if (!outcome.summary) outcome.summary = batchSummary(request, outcome);
  return outcome;
}
