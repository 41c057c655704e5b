/**
 * The fix loop's limits on repetition. The same command failing the same way twice means the
 * round in between changed nothing that matters: the loop goes back to its playbooks with the new
 * failure instead of running another identical agent round, and when no playbook helps it ends
 * `thrashing` (command-thrashing) instead of spending more agent time. The agent's own tool loop
 * counts too: a command the gateway saw fail twice in one round sends the loop to the playbooks
 * before its next agent round. Pure.
 */

/** Most characters of a failure's output that decide whether two failures are the same. */
const shapeChars = 2_000;

/**
 * What makes two failures of one command "the same": the end of the output with what changes
 * from run to run by itself blanked out — timestamps, clock times, durations, hex ids, long numbers,
 * temp paths — and whitespace collapsed. Short numbers are content (a value an agent changed).
 */
export function failureShape(output: string): string {
  return (
    output
      // Colour codes (ESC [ … m), written without a control character in the pattern.
      .replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), '')
      .replace(/\/tmp\/[^\s'"]+/g, '/tmp/…')
      // Timestamps, clock times and durations; then hex ids and long numbers (pids, ports, sizes). Short
      // numbers stay: "value=0" and "value=1" are two different failures, an agent's round changed it.
      .replace(/\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?/g, '#')
      .replace(/\b\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\b/g, '#')
      .replace(/\b\d+(?:\.\d+)?\s?(?:ms|s|sec|secs|seconds?|m|min|minutes?|h|hours?)\b/g, '#')
      .replace(/\b[0-9a-f]{7,64}\b/gi, '#')
      .replace(/\b\d{5,}\b/g, '#')
      .replace(/\s+/g, ' ')
      .trim()
      .slice(-shapeChars)
  );
}

/** One run of the repro that failed. */
export interface FailureSighting {
  command: string;
  exitCode: number | null;
  shape: string;
}

/** A sighting's identity: command, exit code and shape (kept in workflow state as text). */
export const sightingKey = ({ command, exitCode, shape }: FailureSighting): string => JSON.stringify([command, exitCode, shape]);

/** What the loop does after a verify that failed, given what it has seen. */
export type NextMove =
  | { move: 'agent' }
  /** Back to the playbooks with this failure; `orThrash`: when none applies, end command-thrashing. */
  | { move: 'playbook'; orThrash: boolean; why: string };

interface AfterFailureInput {
  /** How often each sighting (sightingKey) has been seen, this one included. */
  seen: Readonly<Record<string, number>>;
  latest: FailureSighting;
  /** The round's tool loop: commands the gateway saw fail, with counts for this round. */
  toolFailures: readonly { command: string; count: number }[];
}

/**
 * After an agent round whose verify failed: the same failure seen twice → playbooks, or thrash;
 * a command the agent's tool loop failed twice in the round → playbooks once, then the agent
 * again (its failures were its own exploring, the repro's failure is new); else the agent.
 */
export function afterFailedVerify({ seen, latest, toolFailures }: AfterFailureInput): NextMove {
  const times = seen[sightingKey(latest)] ?? 0;
  if (times >= 2)
    return { move: 'playbook', orThrash: true, why: `\`${latest.command}\` failed the same way ${times} times (exit ${latest.exitCode ?? 'none'})` };
  const repeated = toolFailures.filter(({ count }) => count >= 2);
  if (repeated.length > 0)
    return {
      move: 'playbook',
      orThrash: false,
      why: `the agent's ${repeated.map(({ command, count }) => `\`${command}\` failed ${count} times`).join(', ')} in its tool loop`,
    };
  return { move: 'agent' };
}
