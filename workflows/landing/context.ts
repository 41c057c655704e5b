import type { Activities, RebaseResult } from '../../activities';
import type { BatchMemberResult } from '../../core/batch-types';
import type { GateFileFacts } from '../../policies/gate-file-change';
import type { GateFile } from '../../core/gate-file';
import type { EnvironmentDeclaration } from '../../core/environment';
import type { EnvironmentRef } from '../../core/environment-types';
import type { ConversationRef } from '../../core/session-types';
import type { LandingOutcome } from '../../core/types';
import type { GateVerdict } from '../../policies/supersedes';
import type { LandingStepContext } from './step-context';

/** The landing's phases, in the order of the design; `retarget` follows a target that moved under a merge. */
export type Phase = 'validate' | 'prepare' | 'rebase' | 'questions' | 'gate' | 'review' | 'fixup' | 'verify' | 'queue' | 'merge' | 'retarget';

/** What a phase decides: the next phase, or the landing's outcome. */
export type Next = { next: Phase } | { outcome: LandingOutcome };
export const go = (next: Phase): Next => ({ next });
export const end = (outcome: LandingOutcome): Next => ({ outcome });

/** What every phase works with: the request, the record, the budget and gate-file controls (steps.ts), the queue. */
export interface LandingContext extends LandingStepContext {
  /** Short steps any host can run, as local activities of the worker running the landing (no trip to the server). */
  local: Activities;
  /**
   * The target queue's admission (set by the `admitted` signal): its place in the line (`seq`, kept
   * when it comes back), and a batch's result for it when it waited in a batch (`batchResult` signal).
   */
  queue: { id?: string; admitted: boolean; seq?: number; batchResult?: BatchMemberResult; moved?: boolean; batchesSeen?: string[] };
}

export interface Head {
  headSha: string;
  treeSha: string;
  commitsSince: number;
}

/** What the next fixup round repairs: the failing suites of a red gate, a panel's blocking findings, or what verify refused. */
export type Repair =
  | { kind: 'red'; failing: string[]; problem: string }
  | { kind: 'findings'; findings: string; problem: string }
  | { kind: 'verify'; problems: string; problem: string }
  | { kind: 'environment'; failure: string; problem: string };

/** What the phases learn and hand on. */
export interface LandingState {
  /** The host of the run's workspace (from validate on), and its activities: every step after validate is pinned there. */
  hostId: string;
  host?: Activities;
  /** The first rebase, done by validate's placement capsule (taken by the rebase phase, once). */
  placement?: RebaseResult;
  /** The gate file's facts on the head, when the step that made the head read them (else the questions phase does). */
  headFacts?: { base: string; headSha: string; facts: GateFileFacts };
  /** The target's gate file: read again when the target moves. */
  gate?: GateFile;
  /** The target's environment declaration (the gate file's, else its devcontainer's; issue 24), read with the gate file. */
  environment?: EnvironmentDeclaration;
  /** The environment the placement found (a hit) for the head its rebase made: the first gate round of that head takes it. */
  placedEnvironment?: { commitSha: string; environment: EnvironmentRef };
  /** The environment the last gate round ran in (its tree's): fixup rounds run their agents' commands and repros in it. */
  ready?: EnvironmentRef;
  /** The target SHA the head is rebased onto (the expected value of the merge). */
  base: string;
  head?: Head;
  /** Commits a resolver dropped on purpose, with its reasons. */
  declaredDrops: Map<string, string>;
  /** Original commits the rebased result lacks (verify checks again). */
  dropped: string[];
  /** How the questions phase describes the head it checks ("After the rebase", "After fixup round 1", …). */
  when: string;
  round: number;
  verdict?: GateVerdict;
  fixups: number;
  /** Fixup rounds verify's refusal got (at most one). */
  verifyFixups: number;
  repair?: Repair;
  /** The agent of the last fixup round that delivered: review findings go to it as a follow-up (reuse first). */
  lastAgent?: ConversationRef;
  /** The tree the review panel last approved (null: a panel is configured but nothing approved yet). */
  approvedTree: string | null;
  mergeTries: number;
  /** Hosts this landing lost (no worker of theirs picked up a step in time): it re-placed itself after each. */
  lostHosts: string[];
  /** Set when the target moved under the merge: the rebase phase rebases onto it; failures after it are final. */
  moved?: { to: string };
  /**
   * Set when a speculative batch named this landing its culprit: it retargets onto what the batch
   * merged, and a red gate there gets its fixup round (not final, as after an ordinary move).
   */
  culprit?: { batchId: string; failing: string[] };
}

/** After a moved target a red re-gate or a refused review is final — but not for a batch's culprit, which gets its fixup round. */
export function finalAfterMove(state: LandingState): boolean {
  return state.moved !== undefined && state.culprit === undefined;
}

export function initialState(): LandingState {
  return {
    hostId: '',
    base: '',
    declaredDrops: new Map(),
    dropped: [],
    when: 'After the rebase',
    round: 0,
    fixups: 0,
    verifyFixups: 0,
    approvedTree: null,
    mergeTries: 0,
    lostHosts: [],
  };
}

/** The parts of the state a phase needs once validate and rebase have run (a bug otherwise, not an outcome). */
export function placed(state: LandingState): { host: Activities; gate: GateFile; head: Head } {
  if (!state.host || !state.gate || !state.head) throw new Error('landing: a phase ran before validate and rebase placed the run');
  return { host: state.host, gate: state.gate, head: state.head };
}

/** Records the workspace head the phases go on with. */
export function setHead(ctx: LandingContext, state: LandingState, head: Head): void {
  state.head = head;
  ctx.tracker.facts.headSha = head.headSha;
  ctx.tracker.facts.treeSha = head.treeSha;
}
