import { condition, continueAsNew, executeChild, getExternalWorkflowHandle, log, workflowInfo } from '@temporalio/workflow';
import type { BatchOutcome, BatchRequest, QueueTicket } from '../../core/batch-types';
import { admittedSignal, batchResultSignal } from '../../core/messages';
import { childRecord } from '../../core/search-attributes';
import { workflowTaskTimeout } from '../../core/timeouts';
import { nextBatch } from '../../policies/batch';
import { QueueState, type RunningBatch, type TargetQueueState } from './queue-state';

/** How long one landing may hold the target before the queue moves on without its release. */
const holdLimit = '2 hours';

/**
 * targetQueue(repo, target): an entity workflow (update-with-start) that admits merges to one
 * target, one at a time or — when the target's gate file asks for batches — a speculative batch
 * at a time (workflows/merge-batch/merge-batch.ts). The line is ordered by priority lane, then by arrival; a
 * landing that comes back (a batch's culprit after its fixup round) keeps its place.
 *
 * A landing asks to be admitted (the `admit` update: admitted at once when the target is free and
 * nobody waits), is told `admitted` when it waits, merges, and signals `release`. Landings that
 * may be batched and wait together are handed to a batch instead, which tells each its result.
 */
export async function targetQueue(state: TargetQueueState = { waiting: [], admitted: 0 }): Promise<void> {
  const queue = new QueueState(state);
  queue.install();
  for (;;) {
    await condition(() => queue.hasWork());
    if (queue.closing() && queue.current === undefined) {
      await continueAsNew<typeof targetQueue>(queue.carry());
    }
    const members = queue.handedOver ? [] : nextBatch(queue.line);
    if (members.length > 0) {
      await batchTurn(queue, members);
      continue;
    }
    const next = await nextHolder(queue);
    if (next) await holdTurn(queue, next);
  }
}

/** A batch's turn: its members leave the line, and the batch holds the target until it is done. */
async function batchTurn(queue: QueueState, members: QueueTicket[]): Promise<void> {
  for (const member of members) queue.line.splice(queue.line.indexOf(member), 1);
  queue.batches += 1;
  queue.admitted += members.length;
  queue.turnStartedAt = Date.now();
  await runBatch(queue.batches, members, (running) => (queue.batch = running));
  queue.batch = undefined;
  queue.turnDone();
}

/** Who holds the target next: the landing it was handed over to, or the head of the line once told (none: it is gone). */
async function nextHolder(queue: QueueState): Promise<string | undefined> {
  if (queue.handedOver) {
    queue.handedOver = false;
    return queue.current!;
  }
  const next = queue.line.shift()?.landingId;
  if (!next) return undefined;
  queue.current = next;
  queue.released.delete(next);
  try {
    await getExternalWorkflowHandle(next).signal(admittedSignal, { queueId: workflowInfo().workflowId });
  } catch (error) {
    // The landing is gone (finished or terminated): nobody to wait for.
    log.warn('could not admit landing', { landingId: next, error: String(error) });
    queue.current = undefined;
    return undefined;
  }
  return next;
}

/** A landing's turn: it holds the target until it releases it, or until the hold limit. */
async function holdTurn(queue: QueueState, holder: string): Promise<void> {
  queue.admitted += 1;
  queue.turnStartedAt ??= Date.now();
  const releasedInTime = await condition(() => queue.released.has(holder), holdLimit);
  if (!releasedInTime) log.warn('landing held the target too long; moving on', { landingId: holder });
  queue.released.delete(holder);
  queue.current = undefined;
  queue.turnDone();
}

/**
 * One speculative batch, as a child workflow on the members' host: it holds the target until it
 * has told every member its result. A batch that fails tells its members to go on alone.
 */
async function runBatch(number: number, members: QueueTicket[], running: (batch: RunningBatch | undefined) => void): Promise<void> {
  const { workflowId } = workflowInfo();
  const id = `${workflowId}.batch-${number}`;
  const { hostId, repo, target } = members[0]!.batch!;
  const ids = members.map((member) => member.landingId);
  running({ id, members: ids });
  const request: BatchRequest = {
    repo,
    target,
    hostId,
    members: members.map(({ landingId, batch }) => ({ landingId, base: batch!.base, headSha: batch!.headSha })),
  };
  try {
    const outcome = (await executeChild('mergeBatch', {
      workflowId: id,
      workflowTaskTimeout,
      ...childRecord('merge-batch', { repo: request.repo, target: request.target, parent: workflowId, summary: { members: ids.join(', ') } }),
      args: [request],
    })) as BatchOutcome;
    log.info('batch done', { batchId: id, summary: outcome.summary });
  } catch (error) {
    // The batch tells its members their results; one that failed as a whole may not have: told here.
    log.warn('batch failed; its members go on alone', { batchId: id, error: String(error) });
    for (const landingId of ids) {
      await getExternalWorkflowHandle(landingId)
        .signal(batchResultSignal, { kind: 'retry', batchId: id, reason: `the batch failed: ${String(error)}` })
        .catch(() => undefined);
    }
  }
}
