import { setHandler } from '@temporalio/workflow';
import type { BatchMemberResult } from '../../core/batch-types';
import type { BudgetCommand } from '../../core/session-types';
import { admittedSignal, batchResultSignal, budgetUpdate, eventsQuery, landingStatusQuery, runEventSignal } from '../../core/messages';
import { budgetCommandProblem } from '../../policies/budget';
import type { LandingTracker } from './record';

/**
 * What a landing answers while it runs: its status and events, the reports of the sessions and
 * panels working for it, answers to its questions, budget commands, and the target queue's admission.
 */
export function installHandlers(
  tracker: LandingTracker,
  budgetControl: { pending?: BudgetCommand },
  queue: { id?: string; admitted: boolean; batchResult?: BatchMemberResult; batchesSeen?: string[] },
): void {
  setHandler(landingStatusQuery, () => tracker.view());
  setHandler(eventsQuery, ({ after, limit } = {}) => tracker.journal.page(after, limit));
  // Sessions and review panels working for this landing report their lifecycle here.
  setHandler(runEventSignal, ({ key, ...event }) => (event.kind === 'question' ? tracker.desk.adopt(event, key) : tracker.journal.record(event, key)));
  // Answers to its questions, and to its children's (forwarded to the child that waits).
  tracker.desk.install();
  // The landing's budget, shared by its sessions: paused when spent, until extended or stopped.
  setHandler(
    budgetUpdate,
    (command) => {
      budgetControl.pending = command;
      return { accepted: true, budget: tracker.budget };
    },
    {
      validator: (command: BudgetCommand) => {
        // A landing takes `stop` only while paused: running, it has no budget decision to make.
        const paused = tracker.pausedFor !== undefined;
        const problem = command?.action === 'stop' && !paused ? 'the landing is not paused for its budget' : budgetCommandProblem(command, paused);
        if (problem) throw new Error(problem);
      },
    },
  );
  // A speculative batch it waited in: landed, its culprit, or go on alone (workflows/merge-batch/merge-batch.ts).
  setHandler(batchResultSignal, (result) => {
    // One result per batch: a second word from a batch it heard from already (a failed batch's queue repeating it) is stale.
    if (queue.batchesSeen?.includes(result.batchId)) return;
    queue.batchesSeen = [...(queue.batchesSeen ?? []), result.batchId];
    queue.batchResult = result;
  });
  setHandler(admittedSignal, ({ queueId }) => {
    queue.id = queueId;
    queue.admitted = true;
  });
}
