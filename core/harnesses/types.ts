import type { SessionResult } from '../session-result';

/** Where the container contract puts things, as seen inside the container. */
export const containerPaths = {
  workspace: '/workspace',
  task: '/tarmac/task.json',
  prompt: '/tarmac/prompt.md',
  out: '/tarmac/out',
  result: '/tarmac/out/result.json',
  /** The CLI's own state (its conversation), kept per session so a follow-up can resume it. */
  conversation: '/tarmac/conversation',
} as const;

/** The conversation an attempt belongs to (one per session; a follow-up session continues it). */
export interface Conversation {
  /** A UUID naming it (Claude Code's --session-id / --resume). */
  id: string;
  /** true: the attempt is a follow-up, a new message in the existing conversation (the CLI's resume). */
  resume: boolean;
}

export interface HarnessAdapter {
  /** argv of the session container for a model; the prompt is read from `/tarmac/prompt.md`. */
  command(model: string, conversation: Conversation): string[];
  /**
   * The CLI keeps its conversation under `/tarmac/conversation` and can continue it with a new
   * message (reuse first); a harness without it gets a fresh conversation for every session.
   */
  resumable?: boolean;
  /**
   * How a result is obtained: `result-file` harnesses write `/tarmac/out/result.json`
   * themselves; the others print to stdout and `parse` turns that into a result.
   */
  output: 'result-file' | 'stdout';
  /**
   * Environment that points the CLI at the model gateway's forwarder (`baseUrl`, on the
   * container's loopback) with a placeholder key: the gateway puts the worker's key in its place.
   */
  modelEnv?(baseUrl: string): string[];
  /**
   * The CLI has no MCP client (aider): it edits the session's copy with its own tools, so the tool
   * gateway's telemetry, grounding and circuit breaker see none of it. Its edits are recorded in the
   * session's telemetry from the resulting diff instead (activities/sessions/diff-telemetry.ts).
   * Default false: the tool gateway's tools are the CLI's only ones.
   */
  ownTools?: boolean;
  /** Parses the CLI's stdout into a result; a `problem` means the session did not deliver. */
  parse(stdout: string): { ok: true; result: SessionResult } | { ok: false; problem: string };
}

/** Where the agent images carry the model forwarder and its launcher (images/shared/). */
export const tarmacRun = '/opt/tarmac/shared/tarmac-run';

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The conversation's id, checked to be a UUID before it goes into a command line. */
export function conversationId(conversation: Conversation): string {
  if (!uuid.test(conversation.id)) throw new Error(`conversation id ${JSON.stringify(conversation.id)} is not a UUID`);
  return conversation.id;
}

/**
 * Runs a CLI with the prompt file as one argument. The model arrives as `$1`, so
 * neither the prompt nor the model is ever interpreted by the shell.
 */
export function withPrompt(script: string, model: string): string[] {
  return ['sh', '-c', `exec ${script}`, 'tarmac-harness', model];
}

export function jsonLines(stdout: string): Record<string, unknown>[] {
  const events: Record<string, unknown>[] = [];
  for (const line of stdout.split('\n')) {
    const trimmed = line.trim();
    if (!trimmed.startsWith('{')) continue;
    try {
      events.push(JSON.parse(trimmed) as Record<string, unknown>);
    } catch {
      // Lines that are not JSON (progress, warnings) are not events.
    }
  }
  return events;
}

export const num = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0);

/** A string field of a parsed event, or the fallback when it is anything else. */
export const text = (value: unknown, fallback: string): string => (typeof value === 'string' && value ? value : fallback);
