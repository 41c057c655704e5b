/**
 * The tool gateway's circuit breaker, as a pure reducer. If the same command fails
 * twice with no edit and no read of a file not read before in between, the third
 * run is refused. Progress (an edit, or reading something new) resets the count.
 */
export interface BreakerState {
  /** Consecutive failures per command since the last progress. */
  failures: Record<string, number>;
  /** Files read in this session (grounding also uses this). */
  filesRead: string[];
  /** Set once the breaker has refused a command; never unset for the session. */
  triggered: boolean;
  /** Failures per command over the whole session (for the outcome's commandFailures). */
  totalFailures: Record<string, number>;
}

export type ToolEvent = { kind: 'read'; file: string } | { kind: 'edit'; file: string } | { kind: 'command-result'; command: string; exitCode: number };

export function emptyBreaker(): BreakerState {
  return { failures: {}, filesRead: [], triggered: false, totalFailures: {} };
}

/** Normalises a command line so trivially different spellings count as the same command. */
function commandKey(command: string): string {
  return command.trim().replace(/\s+/g, ' ');
}

/** May this command run now? Pure: returns the refusal reason, or undefined. */
export function breakerRefusal(state: BreakerState, command: string): string | undefined {
  const count = state.failures[commandKey(command)] ?? 0;
  if (count >= 2) {
    return `circuit breaker: "${commandKey(command)}" failed ${count} times with no edit and no new file read in between; change something (edit a file, or read one you have not read) before running it again`;
  }
  return undefined;
}

export function applyToolEvent(state: BreakerState, event: ToolEvent): BreakerState {
  switch (event.kind) {
    case 'read':
      if (state.filesRead.includes(event.file)) return state;
      return { ...state, filesRead: [...state.filesRead, event.file], failures: {} };
    case 'edit':
      return { ...state, failures: {} };
    case 'command-result': {
      const key = commandKey(event.command);
      if (event.exitCode === 0) {
        const { [key]: _cleared, ...rest } = state.failures;
        return { ...state, failures: rest };
      }
      return {
        ...state,
        failures: { ...state.failures, [key]: (state.failures[key] ?? 0) + 1 },
        totalFailures: { ...state.totalFailures, [key]: (state.totalFailures[key] ?? 0) + 1 },
      };
    }
  }
}

/** Records a refusal: the breaker has triggered for this session. */
export function markTriggered(state: BreakerState): BreakerState {
  return state.triggered ? state : { ...state, triggered: true };
}
