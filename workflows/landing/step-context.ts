import type { BudgetCommand } from '../../core/session-types';
import type { LandingRequest } from '../../core/types';
import type { GateFileApproval } from '../../policies/gate-file-change';
import type { LandingTracker } from './record';

/**
 * What the landing's compound steps (steps.ts, flake.ts, environment.ts) work with: the request,
 * the record, the budget and gate-file controls. In a file of its own so the step modules import
 * it from here, not from each other.
 */
export interface LandingStepContext {
  runId: string;
  taskQueue: string;
  request: LandingRequest;
  tracker: LandingTracker;
  /** The operator's answer to a budget pause (the `budget` update), when one is waiting. */
  budgetControl: { pending?: BudgetCommand };
  /** When the landing started (its budget's wall time). */
  startedAt: number;
  /** The gate-file version an operator approved in this landing (none until one is), and how many times it was asked. */
  gateFiles: { approved?: GateFileApproval; asked: number };
  /** A host-pinned step no worker of the host picks up for this long: the host is lost (the recipe's `limits.session.hostLostAfter`). */
  hostLostAfterMs?: number;
  /** How long a question may wait for its answer (the recipe's `limits.questions.wait`); none: as long as it takes. */
  questionWaitMs?: number;
}
