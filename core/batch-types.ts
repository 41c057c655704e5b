import type { GateSuiteResult } from './types';

/** An entry of the target queue: a landing waiting for its turn. */
export interface QueueTicket {
  landingId: string;
  /** Higher lanes are admitted first (default 0). */
  lane: number;
  /** Arrival order, kept when a landing comes back (a batch's culprit after its fixup round keeps its place). */
  seq: number;
  /** Set when the landing may be batched: the batch size its gate file asks for, and where its verified head is. */
  batch?: BatchTicket;
}

export interface BatchTicket {
  /** The landing's repository and target (the batch's). */
  repo: string;
  target: string;
  /** The batch size the target's gate file asks for (≥ 2). */
  size: number;
  /** The host of the landing's workspace (a batch stacks members of one host). */
  hostId: string;
  /** The target commit the landing's head was verified on. */
  base: string;
  /** The verified head. */
  headSha: string;
}

/** One landing in a speculative batch: where its verified head is (a workspace on the batch's host). */
export interface BatchMember {
  landingId: string;
  /** The target commit its head was verified on (the stack rebases `base..headSha`). */
  base: string;
  headSha: string;
}

/** What the target queue hands a batch: the members in queue order, all on one host. */
export interface BatchRequest {
  repo: string;
  target: string;
  hostId: string;
  members: BatchMember[];
  /** How long a host-pinned step may wait for a worker of the host before the host counts as lost. */
  hostLostAfterMs?: number;
}

/**
 * What a batch tells each member (the `batchResult` signal):
 * - `landed`: the target fast-forwarded to a tested stack that holds the member's commits;
 * - `culprit`: the first red prefix of the stack is the one this member adds — it retargets,
 *   gets its fixup round and comes back to the queue at its place;
 * - `retry`: not decided here (its commits conflict with the stack, the target moved outside the
 *   queue, the batch failed): it retargets and goes on alone, back in the queue at its place.
 */
export type BatchMemberResult =
  | { kind: 'landed'; batchId: string; mergedSha: string; stackedSha: string; treeSha: string; members: string[]; round: number }
  | { kind: 'culprit'; batchId: string; failing: string[]; summary: string; treeSha: string; round: number }
  | { kind: 'retry'; batchId: string; reason: string };

/** One gate round of a batch: which prefix of the stack, its tree, the suites' results. */
export interface BatchRound {
  round: number;
  prefix: number;
  headSha: string;
  treeSha: string;
  green: boolean;
  gates: GateSuiteResult[];
  /** The repository's environment of the prefix's tree did not build (issue 24): the round is red, no suite ran. */
  environmentFailed?: { why: string; logRef: string };
}

export interface BatchOutcome {
  batchId: string;
  target: string;
  /** Every target value the batch pushed, in order (each a stack prefix gated green). */
  merges: { from: string; to: string; members: string[]; round: number }[];
  rounds: BatchRound[];
  results: Record<string, BatchMemberResult>;
  summary: string;
}
