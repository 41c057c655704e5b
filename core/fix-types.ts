/** Types of fix loops. Pure data. */
import type { EnvironmentRef } from './environment-types';
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
  /**
   * Command that reproduces the failure (run by `sh -c` in the runner). Without it the loop grounds
   * one: from the request's words, then from what the repository defines (policies/repro-discovery.ts).
   */
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
  /**
   * The repository environment to work in (a landing passes its last gate round's, on the host of
   * `workspace`): the repro runs in it as the gate suite did, and the agents' `run_command` too.
   * None: the repro runs in `reproImage`, commands in the agent's container.
   */
  environment?: EnvironmentRef;
}

export interface FixOutcome {
  /**
   * `agent-unavailable`: the loop needed an agent and none could start (the missing image or key named); never `thrashing`.
   * `no-repro`: the request names no failing command and the repository defines none for it; nothing was run.
   * `needs-decision`: an agent's question got an empty answer, or none in the recipe's wait.
   */
  outcome: 'fixed' | 'nothing-to-fix' | 'answered' | 'exhausted' | 'thrashing' | 'agent-unavailable' | 'no-repro' | 'needs-decision' | 'failed' | 'cancelled';
  summary: string;
  runId: string;
  intent: Intent;
  routedTo: 'implementer' | 'architect';
  /** The repro the loop ran ('' when it had none: a design question, or `no-repro`). */
  reproCommand: string;
  /** Where the repro came from: the request's `reproCommand`, the request's words, or the repository's own definitions. */
  reproSource: ReproSource | null;
  /** Why this repro (or why none): the words or the definition it rests on. */
  reproReason: string;
  /** Files the loop read to ground its repro and its playbooks (package.json, the makefiles make read, …). */
  groundingFiles: string[];
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

/** Where a fix loop's repro came from. */
export type ReproSource = 'explicit' | 'request' | 'repository';

/** A target in make's database, and where its recipe starts when it has one. */
export interface MakeTarget {
  name: string;
  recipe?: { file: string; line: number };
}

/**
 * What make knows of a repository's makefiles: `make -p` (included makefiles and `$(eval)` rules
 * too), or — when make could not be asked — the top makefile's rules read as text.
 */
export interface MakeDatabase {
  source: 'make' | 'text';
  targets: MakeTarget[];
  /** The makefiles read, in make's order (`MAKEFILE_LIST`); the top one first. */
  makefiles: string[];
}

/** What a fix loop read of its workspace's head to ground the repro and the playbooks (activities/fix/grounding.ts). */
export interface RepoFacts {
  headSha: string;
  /** Regular files of the tree (at most `maxFactFiles`, `node_modules/` left out). */
  files: string[];
  filesTruncated: boolean;
  /** The makefile make would read at the top (`GNUmakefile`, `makefile` or `Makefile`), if any. */
  makefile: string | null;
  make: MakeDatabase | null;
  /** package.json's scripts and main, or why it could not be read. */
  packageJson: { scripts: Record<string, string>; main?: string } | { error: string } | null;
  /** The files read, for the outcome's `groundingFiles`. */
  read: string[];
  /** What did not go as planned (make's database unavailable, a manifest unreadable), for the reason. */
  notes: string[];
}
