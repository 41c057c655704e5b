/** Types of review panels. Pure data. */
import type { Budget, Panel, RecipeSnapshot } from './recipe-schemas';
import type { Finding } from './session-result';

export interface PanelRequest {
  /** The run the reviewers' containers belong to (`tarmac.run`) and whose workspace they read. */
  runId: string;
  repo: string;
  /** Inside a landing: the landing's host, workspace head, its tree and the changed files. */
  hostId?: string;
  headSha?: string;
  treeSha?: string;
  files?: string[];
  /** Standalone (POST /v1/reviews): review `base...head` in a workspace the panel makes itself. */
  fresh?: { head: string; base: string; baseSha: string };
  /** A recipe panel by name, with an optional quorum override (from the gate file). */
  panel: string;
  quorum?: number;
  /** Workflow id whose event journal hears the cache status and the reviewers' sessions. */
  reportTo?: string;
  /** Budget of the reviewers together (split evenly among those that run); default each session's recipe budget. */
  budget?: Partial<Budget>;
  /**
   * The recipes this run started with (resolved by the API, or handed down by the landing that started the panel; its version is
   * the memo's `recipeVersion`). The run and its children use these to the end. None only in a run
   * started before runs carried snapshots: its activities read the live recipes.
   */
  recipes?: RecipeSnapshot;
}

export type CacheStatus = 'hit' | 'partial' | 'miss';

export interface PanelVerdict {
  status: 'approved' | 'changes-requested' | 'review-incomplete';
  summary: string;
  /** A reviewer's question got no decision to go on (empty answer, or none in the recipe's wait): the run ends needs-decision. */
  needsDecision?: string;
  treeSha: string;
  panel: string;
  cache: CacheStatus;
  /** Reviewers restored from the cache, and why the others were not. */
  restored: string[];
  misses: { harnessModel: string; reason: string }[];
  /**
   * Each reviewer in the panel's order: where its report came from, and for a session its end, how
   * many containers it took and how many of them were respawns (the session policy's), and why a
   * reviewer without a verdict has none.
   */
  reviewers: PanelReviewer[];
  quorum: number;
  delivered: number;
  /**
   * Reviewers without a verdict: `errored` (ran, no verdict: the panel is incomplete whatever the
   * quorum) and `unavailable` (could not start here: incomplete too, unless the panel skips them).
   */
  missing: string[];
  errored: string[];
  unavailable: string[];
  /** Under the panel's `"unavailable": "skip"`: the reviewers left out of the quorum because they cannot run here, each with why. */
  skipped?: { harnessModel: string; reason: string }[];
  findings: MergedFinding[];
  blocking: MergedFinding[];
  /** Reviewer sessions started (cached reviewers start none). */
  sessionsStarted: number;
  /** What the panel's reviewer sessions spent, summed: the landing adds it to its meters and budget. */
  meters: PanelMeters;
}

export interface PanelReviewer {
  harnessModel: string;
  source: 'cache' | 'session';
  status: ReviewerReport['status'];
  sessionStatus?: string;
  /** Containers the reviewer's session ran, and how many were respawns after a failed attempt. */
  attempts?: number;
  respawns?: number;
  reason?: string;
}

export interface PanelMeters {
  /** Containers started by the reviewer sessions (respawns included). */
  sessionsSpawned: number;
  respawns: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
}

export type ResolvedPanel = Panel & { name: string };

export interface ReviewerReport {
  harnessModel: string;
  /**
   * delivered: a valid report (from a session or the cache); errored: the reviewer ran and has no
   * verdict (after its session's respawns); unavailable: it could not start on this worker.
   */
  status: 'delivered' | 'errored' | 'unavailable';
  findings: Finding[];
  /** Why a reviewer without a verdict has none. */
  reason?: string;
  /** The reviewer asked and the answer declined (or none came in time): the run's decision, not a verdict. */
  undecided?: string;
}

export interface MergedFinding extends Finding {
  fingerprint: string;
  /** The reviewers that reported it. */
  votes: string[];
}
