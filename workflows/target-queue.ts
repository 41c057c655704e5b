import { condition, continueAsNew, getExternalWorkflowHandle, log, setHandler, workflowInfo } from '@temporalio/workflow';
import { admissionRequestSignal, admitUpdate, admittedSignal, queueStatusQuery, releaseSignal } from '../core/messages';

export interface TargetQueueState {
  waiting: string[];
  admitted: number;
}

/** How long one landing may hold the target before the queue moves on without its release. */
const holdLimit = '2 hours';
/** Admissions per run before the queue continues as new (keeps history small). */
const admissionsPerRun = 200;

/**
 * targetQueue(repo, target): an entity workflow (signal-with-start) that admits
 * merges to one target one at a time, in arrival order. A landing asks to be
 * admitted (the `admit` update: admitted at once when the target is free and nobody waits;
 * or the older `requestAdmission` signal), is told `admitted` when it waits, merges, and
 * signals `release`.
 */
export async function targetQueue(state: TargetQueueState = { waiting: [], admitted: 0 }): Promise<void> {
  const waiting = [...state.waiting];
  let admitted = 0;
  let current: string | undefined;
  const released = new Set<string>();
  const closing = () => admitted >= admissionsPerRun || workflowInfo().continueAsNewSuggested;
  /** Set when the `admit` update handed the free target over directly (the loop then only waits for its release). */
  let handedOver = false;
  const enqueue = (landingId: string) => {
    if (landingId !== current && !waiting.includes(landingId)) waiting.push(landingId);
  };
  setHandler(admissionRequestSignal, ({ landingId }) => enqueue(landingId));
  setHandler(admitUpdate, ({ landingId }) => {
    if (landingId === current) return { admitted: true };
    if (current === undefined && waiting.length === 0 && !closing()) {
      current = landingId;
      handedOver = true;
      released.delete(landingId);
      return { admitted: true };
    }
    enqueue(landingId);
    return { admitted: false };
  });
  setHandler(releaseSignal, ({ landingId }) => {
    released.add(landingId);
    const index = waiting.indexOf(landingId);
    if (index >= 0) waiting.splice(index, 1);
  });
  setHandler(queueStatusQuery, () => ({ ...(current ? { current } : {}), waiting: [...waiting], admitted: state.admitted + admitted }));

  for (;;) {
    await condition(() => handedOver || waiting.length > 0 || (admitted >= admissionsPerRun && waiting.length === 0) || workflowInfo().continueAsNewSuggested);
    if (closing() && current === undefined) {
      await continueAsNew<typeof targetQueue>({ waiting, admitted: state.admitted + admitted });
    }
    let next: string | undefined;
    if (handedOver) {
      handedOver = false;
      next = current!;
    } else {
      next = waiting.shift();
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
    const releasedInTime = await condition(() => released.has(next), holdLimit);
    if (!releasedInTime) log.warn('landing held the target too long; moving on', { landingId: next });
    released.delete(next);
    current = undefined;
  }
}
