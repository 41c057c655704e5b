import { condition, continueAsNew, executeChild, getExternalWorkflowHandle, log, setHandler, workflowInfo } from '@temporalio/workflow';
import type { BatchOutcome, BatchRequest, QueueTicket } from '../../core/batch-types';
import { admissionRequestSignal, admitUpdate, admittedSignal, batchMemberGoneSignal, batchResultSignal, queueStatusQuery, releaseSignal, type AdmitRequest } from '../../core/messages';
import { childRecord } from '../../core/search-attributes';
import { workflowTaskTimeout } from '../../core/timeouts';
import { nextBatch, ticketPosition } from '../../policies/batch';

export interface TargetQueueState {
  /** Landing ids in line order (what queues before lanes carried; kept for their continue-as-new). */
  waiting: string[];
  admitted: number;
  /** The line with lanes, places and batch tickets (absent in a queue started before lanes). */
  tickets?: QueueTicket[];
  /** The next arrival's place. */
  seq?: number;
  batches?: number;
  /** How long the last turns took (a landing's hold, or a whole batch), newest last: the view's ETA. */
  recentTurnMs?: number[];
}

/** Turns whose duration the queue keeps for its ETA. */
const recentTurns = 20;

/** How long one landing may hold the target before the queue moves on without its release. */
const holdLimit = '2 hours';
/** Admissions per run before the queue continues as new (keeps history small). */
const admissionsPerRun = 200;

/**
 * targetQueue(repo, target): an entity workflow (update-with-start) that admits merges to one
 * target, one at a time or — when the target's gate file asks for batches — a speculative batch
 * at a time (workflows/merge-batch.ts). The line is ordered by priority lane, then by arrival; a
 * landing that comes back (a batch's culprit after its fixup round) keeps its place.
 *
 * A landing asks to be admitted (the `admit` update: admitted at once when the target is free and
 * nobody waits), is told `admitted` when it waits, merges, and signals `release`. Landings that
 * may be batched and wait together are handed to a batch instead, which tells each its result.
 */
export async function targetQueue(state: TargetQueueState = { waiting: [], admitted: 0 }): Promise<void> {
  const line: QueueTicket[] = state.tickets ? [...state.tickets] : state.waiting.map((landingId, index) => ({ landingId, lane: 0, seq: index }));
  let seq = state.seq ?? line.length;
  let admitted = 0;
  let batches = state.batches ?? 0;
  let current: string | undefined;
  let batch: { id: string; members: string[] } | undefined;
  const recent = [...(state.recentTurnMs ?? [])];
  let turnStartedAt: number | undefined;
  const turnDone = () => {
    if (turnStartedAt !== undefined) recent.push(Date.now() - turnStartedAt);
    if (recent.length > recentTurns) recent.splice(0, recent.length - recentTurns);
    turnStartedAt = undefined;
  };
  const released = new Set<string>();
  const closing = () => admitted >= admissionsPerRun || workflowInfo().continueAsNewSuggested;
  /** Set when the `admit` update handed the free target over directly (the loop then only waits for its release). */
  let handedOver = false;
  const waitingIds = () => line.map((ticket) => ticket.landingId);
  const enqueue = ({ landingId, lane, seq: place, batch: batchTicket }: AdmitRequest): number => {
    const known = line.find((ticket) => ticket.landingId === landingId);
    if (known) return known.seq;
    const ticket: QueueTicket = { landingId, lane: lane ?? 0, seq: place ?? seq++, ...(batchTicket ? { batch: batchTicket } : {}) };
    if (landingId !== current || released.has(landingId)) line.splice(ticketPosition(line, ticket), 0, ticket);
    return ticket.seq;
  };
  setHandler(admissionRequestSignal, ({ landingId }) => void enqueue({ landingId }));
  setHandler(admitUpdate, (request) => {
    const { landingId } = request;
    // The holder asks again after giving the target back (its merge found the target moved): it queues.
    if (landingId === current && !released.has(landingId)) return { admitted: true };
    if (!request.moved && current === undefined && batch === undefined && line.length === 0 && !closing()) {
      current = landingId;
      handedOver = true;
      turnStartedAt = Date.now();
      released.delete(landingId);
      return { admitted: true, seq: request.seq ?? seq++ };
    }
    return { admitted: false, seq: enqueue(request) };
  });
  setHandler(releaseSignal, ({ landingId }) => {
    released.add(landingId);
    // A member of the batch in flight that ends (cancelled, failed) must not be merged by it.
    if (batch?.members.includes(landingId)) {
      void getExternalWorkflowHandle(batch.id)
        .signal(batchMemberGoneSignal, { landingId })
        .catch(() => undefined);
    }
    const index = line.findIndex((ticket) => ticket.landingId === landingId);
    if (index >= 0) line.splice(index, 1);
  });
  setHandler(queueStatusQuery, () => ({
    ...(current ? { current } : {}),
    waiting: waitingIds(),
    admitted: state.admitted + admitted,
    tickets: line.map(({ landingId, lane, seq: place, batch: ticket }) => ({ landingId, lane, seq: place, batchable: ticket !== undefined, ...(ticket ? { batchSize: ticket.size } : {}) })),
    ...(batch ? { batch: { ...batch, members: [...batch.members] } } : {}),
    batches,
    ...(turnStartedAt !== undefined ? { turnStartedAt } : {}),
    recentTurnMs: [...recent],
  }));

  for (;;) {
    await condition(() => handedOver || line.length > 0 || (admitted >= admissionsPerRun && line.length === 0) || workflowInfo().continueAsNewSuggested);
    if (closing() && current === undefined) {
      await continueAsNew<typeof targetQueue>({ waiting: waitingIds(), admitted: state.admitted + admitted, tickets: line, seq, batches, recentTurnMs: recent });
    }
    const members = handedOver ? [] : nextBatch(line);
    if (members.length > 0) {
      for (const member of members) line.splice(line.indexOf(member), 1);
      batches += 1;
      admitted += members.length;
      turnStartedAt = Date.now();
      await runBatch(batches, members, (running) => (batch = running));
      batch = undefined;
      turnDone();
      continue;
    }
    let next: string | undefined;
    if (handedOver) {
      handedOver = false;
      next = current!;
    } else {
      next = line.shift()?.landingId;
      if (!next) continue;
      current = next;
      released.delete(next);
      try {
        await getExternalWorkflowHandle(next).signal(admittedSignal, { queueId: workflowInfo().workflowId });
      } catch (error) {
        // The landing is gone (finished or terminated): nobody to wait for.
        log.warn('could not admit landing', { landingId: next, error: String(error) });
        current = undefined;
        continue;
      }
    }
    admitted += 1;
    turnStartedAt ??= Date.now();
    const releasedInTime = await condition(() => released.has(next), holdLimit);
    if (!releasedInTime) log.warn('landing held the target too long; moving on', { landingId: next });
    released.delete(next);
    current = undefined;
    turnDone();
  }
}

/**
 * One speculative batch, as a child workflow on the members' host: it holds the target until it
 * has told every member its result. A batch that fails tells its members to go on alone.
 */
async function runBatch(number: number, members: QueueTicket[], running: (batch: { id: string; members: string[] } | undefined) => void): Promise<void> {
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
