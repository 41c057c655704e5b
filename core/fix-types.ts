/** Types of fix loops. Pure data. */
import type { Budget, RecipeSnapshot } from './recipe-schemas';

/** What a fix request asks for (policies/intent.ts routes it). */
export type Intent = 'boot-fix' | 'build-fix' | 'test-fix' | 'design-question' | 'other-fix';

export interface FixRequest {
  /** Workflow id of the loop; its workspace is `runs/<runId>/worktree`. */
  runId: string;
  repo: string;
  /** Branch the loop starts from; fixes land on a new run-owned branch. */
  branch: string;
  /** What is wrong, in words (routes the loop: boot/build/test fix → implementer; design → architect). */
  request: string;
  /** Command that reproduces the failure (argv run by `sh -c` in the runner); default by intent. */
  reproCommand?: string;
  agents?: {
    implementer?: string;
    architect?: string;
    ladder?: string[];
  };
  /** Budget of the loop's sessions together (a landing passes what is left of its own); default each session's recipe budget. */
  budget?: Partial<Budget>;
  /**
   * Inside a landing: work in the landing's workspace (`runs/<runId>/worktree` on that host, from
   * that commit). The loop then makes no workspace and no branch of its own, and leaves cleanup and
   * the record to the landing.
   */
  workspace?: { hostId: string; baseSha: string };
  /** Image the repro runs in; default `tarmac/runner:bookworm` (a landing passes its gate's image). */
  reproImage?: string;
  /** Repro timeout; default 10 minutes (a landing passes its slowest suite's). */
  reproTimeoutMs?: number;
  /** Names this loop's sessions and repro steps within its run (a landing's second fixup round is another loop). */
  label?: string;
  /** Workflow id whose event journal hears this loop's sessions (the landing it works for). */
  reportTo?: string;
  /** Repairs after the first edit (default: limits.maxRepairs of recipes/playbooks.json). */
  maxRepairs?: number;
  /**
   * The recipes this run started with (resolved by the API, or handed down by the landing or nightly that started the loop; its version is
   * the memo's `recipeVersion`). The run and its children use these to the end. None only in a run
   * started before runs carried snapshots: its activities read the live recipes.
   */
  recipes?: RecipeSnapshot;
}

export interface FixOutcome {
  /** `agent-unavailable`: the loop needed an agent and none could start (the missing image or key named); never `thrashing`. */
  outcome: 'fixed' | 'nothing-to-fix' | 'answered' | 'exhausted' | 'thrashing' | 'agent-unavailable' | 'failed' | 'cancelled';
  summary: string;
  runId: string;
  intent: Intent;
  routedTo: 'implementer' | 'architect';
  reproCommand: string;
  /** Exit code of the last run of the repro command. */
  reproExitCode: number | null;
  repairAttempts: number;
  verifyFailed: boolean;
  playbookUsed: string | null;
  filesChanged: string[];
  /** Commands that failed in the agent's tool loop, with counts (tool gateway). */
  commandFailures: { command: string; count: number }[];
  circuitBreakerTriggered: boolean;
  failureType: string | null;
  /** The run-owned branch holding the fixes (land it like any branch), when there are fixes. */
  fixBranch: string | null;
  sessions: { sessionId: string; status: string; harnessModel: string; attempts?: number }[];
  meters: { capsulesRun: number; containersRun: number; agentSessions: number; inputTokens: number; outputTokens: number; costUsd: number; wallTimeMs: number };
}
