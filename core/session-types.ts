/** Types of agent sessions, shared by workflows, activities and the API. Pure data. */
import type { EnvironmentRef } from './environment-types';
import type { Budget, RecipeSnapshot, SessionLimits } from './recipe-schemas';
import type { SessionResult } from './session-result';

export const SessionRole = ['reviewer', 'fixer', 'implementer', 'resolver', 'architect'] as const;
export type SessionRole = (typeof SessionRole)[number];

/** Roles whose work is code: they complete only if the workspace gained commits. */
export const rolesThatMustCommit: readonly SessionRole[] = ['fixer', 'implementer', 'resolver'];

/** What the agent is asked to do; written to `/tarmac/task.json` (and the prompt to `/tarmac/prompt.md`). */
export interface SessionTask {
  prompt: string;
  /** Files the task is about (changed files for a reviewer, conflicted files for a resolver). */
  files?: string[];
}

/** Where the session works: a landing's run workspace, or a fresh one made from repo + ref. */
export type SessionWorkspace = { kind: 'run'; repo: string; hostId: string; baseSha: string } | { kind: 'fresh'; repo: string; ref: string };

export interface SessionRequest {
  /** The run the session belongs to: its workspace is `runs/<runId>/worktree`; containers carry `tarmac.run`. */
  runId: string;
  sessionId: string;
  role: SessionRole;
  /** harness#model of the first attempt. */
  harnessModel: string;
  task: SessionTask;
  workspace: SessionWorkspace;
  /** Ladder override (validated like the recipe's); default the recipe ladder. */
  ladder?: string[];
  /** Overrides of the recipe's session limits. */
  limits?: Partial<SessionLimits>;
  /** Overrides of the recipe's run budget. */
  budget?: Partial<Budget>;
  /** Workflow id whose event journal hears this session's lifecycle (the landing it works for). */
  reportTo?: string;
  /**
   * Reuse first: this session is a follow-up of an earlier one of the run (its prompt is the next
   * message). When the attempt runs the same harness and the harness can resume, the CLI continues
   * that conversation, so the model sees the earlier turns; otherwise it starts a fresh one.
   */
  continues?: ConversationRef;
  /**
   * The recipes of the run this session belongs to (the snapshot it started with): dispatch, the
   * tool gateway and the model gateway read these, never the live files. None only in a run started
   * before runs carried snapshots (the activities then read the live recipes).
   */
  recipes?: RecipeSnapshot;
  /**
   * The repository environment the session works in (a landing's last gate round's): its
   * `run_command` runs in a command container of that environment on the session's workspace copy,
   * so the agent runs the project's real build and tests; the CLI stays in its own image. It is on
   * the host of the run's workspace. None: commands run in the session container.
   */
  environment?: EnvironmentRef;
}

/** A session attempt's conversation, as a follow-up names it. */
export interface ConversationRef {
  sessionId: string;
  attempt: number;
  harnessModel: string;
}

/** Everything the session activity observed about one container. */
export interface SessionAttemptReport {
  attempt: number;
  harnessModel: string;
  containerId: string;
  exitCode: number | null;
  oomKilled: boolean;
  timedOut: boolean;
  /** The container was found running or finished from an earlier activity attempt. */
  reattached: boolean;
  /** It had already exited when found: a done session whose result had not been collected. */
  foundFinished: boolean;
  durationMs: number;
  sawFirstTurn: boolean;
  result?: SessionResult;
  resultProblem?: string;
  commitsAdded: number;
  /** The agent's head, imported from its bundle into the worker-owned workspace (the base when nothing crossed). */
  headSha: string;
  /** `rebasing`: the agent left a rebase unfinished in its copy (a resolver that did not finish). */
  workspaceState?: 'rebasing';
  /** Why the agent's commits did not cross the boundary (no bundle, refused bundle, …). */
  exportProblem?: string;
  logRef: string;
  /** The host the attempt ran on (its queue is `tarmac.host.<hostId>`). */
  hostId?: string;
  /**
   * What the attempt spent through its model gateway, metered from the provider's responses
   * (CLI harnesses). When present it is the attempt's usage: it wins over the CLI's own report.
   */
  modelUsage?: {
    inputTokens: number;
    outputTokens: number;
    costUsd: number;
    requests: number;
    budgetRefusals: number;
    lastBudgetRefusal?: string;
    /** The model gateway refused a request for a model off the operator's list (recipes/pricing.json): why, the model named. */
    refusedModel?: string;
  };
  /** Set when nothing was started: this worker cannot run the agent (the missing image or key named). */
  unavailable?: string;
  /** The conversation the attempt continued (a follow-up that resumed it), if any. */
  continued?: ConversationRef;
  /** What the tool gateway saw in this attempt (state is per session: it carries across attempts and restarts). */
  gateway?: {
    toolCalls: number;
    commandFailures: { command: string; count: number }[];
    circuitBreakerTriggered: boolean;
    refusals: { tool: string; reason: string }[];
  };
}

export interface SessionMeters {
  sessionsSpawned: number;
  respawns: number;
  escalations: number;
  reattachments: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  wallTimeMs: number;
  capsulesRun: number;
  budgetPauses: number;
}

export interface SessionDecisionRecord {
  afterAttempt: number;
  action: 'done' | 'ask' | 'collect' | 'respawn' | 'escalate' | 'give-up' | 'pause' | 'resume' | 'stop';
  harnessModel?: string;
  reason: string;
}

export interface SessionOutcome {
  /**
   * `agent-unavailable`: no agent of the session could run on its worker (image or key missing); nothing was started.
   * `asked`: the agent's result asks questions (`result.questions`); whoever started the session asks them and
   * hands the answer to a follow-up session that continues this one.
   */
  status: 'delivered' | 'asked' | 'failed' | 'invalid-request' | 'budget-exhausted' | 'agent-unavailable' | 'cancelled';
  summary: string;
  runId: string;
  sessionId: string;
  role: SessionRole;
  harnessModel: string;
  attempts: (SessionAttemptReport & { class: string })[];
  decisions: SessionDecisionRecord[];
  result?: SessionResult;
  headSha?: string;
  failure?: { type: string; message: string };
  meters: SessionMeters;
  recipeVersion?: string;
}

/** The budget update's argument: raise limits, or stop the run. */
export type BudgetCommand = { action: 'extend'; tokens?: number; costUsd?: number; sessions?: number; wallMs?: number } | { action: 'stop' };

export interface SessionStatusView {
  state: 'validating' | 'preparing' | 'running' | 'paused-budget' | 'done';
  attempt: number;
  harnessModel: string;
  budget?: { tokens: number; costUsd: number; sessions: number; wallMs: number; onExhausted: 'pause' | 'stop' };
  pausedFor?: string;
  decisions: SessionDecisionRecord[];
  meters: SessionMeters;
  outcome?: SessionOutcome;
}
