/** Types of fix loops. Pure data. */
import type { Intent } from '../workflows/policies/intent';

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
    /** Script harness only: edits the scripted implementer applies. */
    scriptEdits?: { file: string; find?: string; replace: string }[];
    /** Script harness only: the command a scripted gateway agent runs, and its pause before the last try. */
    scriptTask?: { command?: string; pauseMs?: number };
  };
  /** Repairs after the first edit (default: limits.maxRepairs of recipes/playbooks.json). */
  maxRepairs?: number;
}

export interface FixOutcome {
  outcome: 'fixed' | 'nothing-to-fix' | 'answered' | 'exhausted' | 'thrashing' | 'failed' | 'cancelled';
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
  sessions: { sessionId: string; status: string; harnessModel: string }[];
  meters: { capsulesRun: number; containersRun: number; agentSessions: number; inputTokens: number; outputTokens: number; costUsd: number; wallTimeMs: number };
}
