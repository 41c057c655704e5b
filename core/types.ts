import type { EgressEntry } from './environment-types';
import type { Budget, RecipeSnapshot } from './recipe-schemas';
import type { PanelMeters, PanelReviewer } from './review-types';

/**
 * Types shared by workflows, activities and the API. Pure data only: this file is
 * imported by workflow code, so it must not import Node builtins.
 */

/** One source branch of a landing, pinned to the commit the request resolved. */
export interface BranchHead {
  branch: string;
  sha: string;
}

export interface LandingRequest {
  /** Normalised repository location: an absolute local path or a git URL. */
  repo: string;
  /** Target branch the landing fast-forwards. */
  target: string;
  /** Source branches in landing order, each pinned to a commit. */
  heads: BranchHead[];
  /** Target head when the request was accepted (informational; the run re-reads it). */
  requestedTargetSha?: string;
  /** Agents for the judgment steps; default the first rung of the recipe ladder. */
  agents?: LandingAgents;
  /**
   * The landing's budget, shared by every session it starts (resolved by the API: the recipe's
   * budget with the request's overrides). Without it each session has its own recipe budget.
   */
  budget?: Budget;
  /**
   * The recipes this run started with (resolved by the API when it started the run; its version is
   * the memo's `recipeVersion`). The run and its children use these to the end. None only in a run
   * started before runs carried snapshots: its activities read the live recipes.
   */
  recipes?: RecipeSnapshot;
  /** Priority lane in the target queue: higher lanes are admitted first (default 0); a batch in flight is never reordered. */
  priority?: number;
}

export interface LandingAgents {
  /** harness#model that resolves rebase conflicts. */
  resolver?: string;
  /** harness#model of the fixup round. */
  fixer?: string;
  /** Ladder for those sessions (validated); default the recipe ladder. */
  ladder?: string[];
}

export const LandingPhase = {
  validate: 'validate',
  prepare: 'prepare',
  rebase: 'rebase',
  questions: 'questions',
  gate: 'gate',
  review: 'review',
  fixup: 'fixup',
  queue: 'queue',
  verify: 'verify',
  merge: 'merge',
  cleanup: 'cleanup',
  done: 'done',
} as const;
export type LandingPhase = (typeof LandingPhase)[keyof typeof LandingPhase];

export const LandingStatus = {
  landed: 'landed',
  gateFailed: 'gate-failed',
  invalidGateFile: 'invalid-gate-file',
  invalidEnvironment: 'invalid-environment',
  environmentFailed: 'environment-failed',
  needsRebase: 'needs-rebase',
  conflictUnresolved: 'conflict-unresolved',
  droppedCommits: 'dropped-commits',
  fixupFailed: 'fixup-failed',
  reviewIncomplete: 'review-incomplete',
  reviewBlocked: 'review-blocked',
  needsDecision: 'needs-decision',
  targetMoved: 'target-moved',
  verifyFailed: 'verify-failed',
  budgetExhausted: 'budget-exhausted',
  agentUnavailable: 'agent-unavailable',
  failed: 'failed',
  cancelled: 'cancelled',
} as const;
export type LandingStatus = (typeof LandingStatus)[keyof typeof LandingStatus];

export interface GateSuiteResult {
  suiteId: string;
  treeSha: string;
  status: 'passed' | 'failed' | 'timed-out';
  exitCode: number | null;
  /** Path of the suite's container log, relative to the data dir. */
  logRef: string;
  durationMs: number;
  /** True when the result was collected from a container started by an earlier attempt. */
  reattached: boolean;
  /**
   * `hit`: reused from the gate cache (a sealed result of the same tree, suite definition and runner
   * image; no container ran, the log is the sealed run's); `miss`: the suite ran. Absent in runs
   * recorded before the cache.
   */
  cache?: 'hit' | 'miss';
  /** Gate round: 1 for the first gate, then one per fixup round or re-gate after the target moved. */
  round?: number;
  /**
   * A red result settled by evidence (policies/flake.ts): `flaky` (the same tree passed when run
   * again), `pre-existing` (red on the base too), `failed` (red again, green on the base).
   */
  settled?: GateSettlement;
  /** The runs that settled it: the re-run on the same tree and the run on the base, each with its log. */
  evidence?: GateEvidenceRun[];
  /** A red result that does not block this landing, and why (the recipe's `limits.gate`); `until`: the quarantine's end. */
  excused?: { by: 'retry' | 'quarantine' | 'pre-existing'; until?: string };
}

export type GateSettlement = 'flaky' | 'pre-existing' | 'failed';

/** One run that settles a red gate result: on the identical tree again, or on the base the head is rebased onto. */
export interface GateEvidenceRun {
  on: 'same-tree' | 'base';
  commitSha: string;
  treeSha: string;
  status: GateSuiteResult['status'];
  exitCode: number | null;
  logRef: string;
  durationMs: number;
  /** `hit`: the gate cache's sealed result for that tree (a base gated before), no container ran. */
  cache?: 'hit' | 'miss';
}

export interface Meters {
  capsulesRun: number;
  containersRun: number;
  agentSessions: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  wallTimeMs: number;
}

/** When one part of a compound capsule ran (the landing records each part as its own step). */
export interface StepTiming {
  name: string;
  startedAt: string;
  endedAt: string;
  /** What the part found (e.g. `ENV_CACHE=hit …`), shown as the step's detail. */
  detail?: string;
}

export interface StepRecord {
  name: string;
  /** `agent-unavailable`: an agent step whose worker could not start any agent (the missing image or key in `detail`). */
  status: 'running' | 'done' | 'failed' | 'skipped' | 'agent-unavailable';
  startedAt: string;
  endedAt?: string;
  detail?: string;
}

export interface LandingOutcome {
  status: LandingStatus;
  summary: string;
  runId: string;
  repo: string;
  target: string;
  heads: BranchHead[];
  /** Phase the run was in when it ended. */
  endedInPhase: LandingPhase;
  targetSha?: string;
  headSha?: string;
  treeSha?: string;
  mergedSha?: string;
  gates: GateSuiteResult[];
  /** Original commit → rebased commit, per branch. */
  provenance?: { branch: string; original: string; subject: string; rebased: string | null; how: string }[];
  /**
   * The speculative batch this landing merged in (issue 17): the batch's workflow id, the landings
   * in it, the gate round whose green tree the target moved to, and this landing's commit on the stack.
   */
  batch?: { id: string; members: string[]; round: number; treeSha: string; stackedSha: string };
  /** Time in the target queue: every turn it waited for (alone or for a batch) added up. */
  queue?: { waitedMs: number; turns: number };
  /** Batches that named this landing their culprit (it got a fixup round and came back to the queue). */
  culpritIn?: { batchId: string; round: number; treeSha: string; failing: string[] }[];
  /** Red gate results retired by later green ones (both kept in `gates`). */
  supersedes?: { suiteId: string; red: { treeSha: string; round: number; status: string }; supersededBy: { treeSha: string; round: number } }[];
  /** Review panels run, one per reviewed tree: verdict, cache status, restored reviewers. */
  reviews?: ReviewRecord[];
  /** Questions asked (the landing's own and its agents'), who asked and why, and their answers. */
  questions?: Question[];
  /** Fix loops that repaired a red gate (one per fixup round): outcome, playbook, repairs. */
  fixLoops?: { id: string; outcome: string; summary: string; playbookUsed: string | null; repairAttempts: number; filesChanged: string[] }[];
  /** Agent sessions run by this landing, with their end. */
  sessions?: { sessionId: string; role: string; status: string; harnessModel: string; attempts: number }[];
  /** Machine-readable details of the failure, when there is one (file, field, exit code…). */
  failure?: { type: string; message: string; field?: string; file?: string };
  /** The repository's environments the gates ran in (issue 24), one per tree gated: key, ENV_CACHE, what the setup reached. */
  environments?: EnvironmentUse[];
  meters: Meters;
}

/** A landing's use of its repository's environment on one tree. */
export interface EnvironmentUse {
  /** The commit whose inputs keyed it, and its tree when the gate ran on it (the base's settling run names the commit only). */
  commitSha: string;
  treeSha?: string;
  key: string;
  cache: 'hit' | 'miss';
  buildMs: number;
  /** Every connection the build's setup made through the egress gateway (a failed build's too). */
  egress: EgressEntry[];
  /** Set when the build failed: why, in one line. */
  failed?: string;
}

/**
 * A question a run waits on. Questions first, from anyone: the landing asks about its gate file,
 * and an agent that asks stops its run at the next safe point until an answer comes.
 */
export interface Question {
  id: string;
  question: string;
  /** Who asked: the landing itself, or a session (`resolver-1 (resolver, claude-code#…)`). */
  from?: string;
  /** Why the run asks now (what it was doing when the question came). */
  why?: string;
  /** The workflow waiting for the answer when it is a child of the run (a fix loop): answers are forwarded to it. */
  owner?: string;
  /** The answer (trimmed); empty is a decision not to go on. */
  answer?: string;
  /** The child that asked ended before an answer came here (see its outcome): nobody waits for it any more. */
  withdrawn?: boolean;
}

export interface ReviewRecord {
  treeSha: string;
  status: string;
  summary: string;
  cache: 'hit' | 'partial' | 'miss';
  restored: string[];
  sessionsStarted: number;
  missing: string[];
  blocking: { file: string; line?: number; severity: string; message: string; votes: string[] }[];
  /** Each reviewer: its report's source and status, its session's attempts and respawns, why it has no verdict. */
  reviewers: PanelReviewer[];
  /** Reviewers the panel left out of its quorum (`"unavailable": "skip"`) because they cannot run here, each with why. */
  skipped?: { harnessModel: string; reason: string }[];
  /** What the panel's sessions spent (in the landing's meters too). */
  meters: PanelMeters;
}

export interface LandingStatusView {
  runId: string;
  phase: LandingPhase;
  steps: StepRecord[];
  meters: Meters;
  gates: GateSuiteResult[];
  /** Review panels so far (REVIEW_CACHE status and restored reviewers included). */
  reviews: ReviewRecord[];
  /** Questions waiting for an answer (the `answer` update): who asked and why. */
  pendingQuestions: Omit<Question, 'answer' | 'owner'>[];
  /** The landing's budget (when it has one) and, while paused for it, which limit was crossed. */
  budget?: { tokens: number; costUsd: number; sessions: number; wallMs: number; onExhausted: 'pause' | 'stop' };
  pausedFor?: string;
  outcome?: LandingOutcome;
}
