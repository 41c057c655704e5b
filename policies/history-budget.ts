/**
 * When a long-lived workflow should continue as new: Temporal keeps a workflow's whole history,
 * warns at 10,240 events or 10 MB and terminates it at 51,200 events or 50 MB. A workflow that can
 * take thousands of steps hands its state to a fresh run well before that. Pure: the workflow
 * passes what `workflowInfo()` says.
 */
interface HistoryFacts {
  /** Events in the current run's history so far. */
  length: number;
  /** Its size in bytes (0 when the server does not say). */
  sizeBytes: number;
  /** Temporal's own hint (`continueAsNewSuggested`). */
  suggested: boolean;
  /** Events the run's journal keeps in memory now (workflows/run-journal.ts trims past its cap). */
  journalSize?: number;
}

interface HistoryBudget {
  events: number;
  bytes: number;
  /** Journal events kept in memory: continuing before the journal's cap (2000) means no event is ever trimmed away. */
  journalEvents: number;
}

/**
 * Temporal's warning levels: continue before any warning, far from the limits; and half the
 * journal's cap, so that one more phase (a gate round, a session's reports) never fills it.
 */
export const defaultHistoryBudget: HistoryBudget = { events: 10_000, bytes: 10 * 1024 * 1024, journalEvents: 1_000 };

/** Why the run should continue as new now, or undefined while its history is within the budget. */
export function continueAsNewReason(facts: HistoryFacts, budget: HistoryBudget = defaultHistoryBudget): string | undefined {
  if (facts.suggested) return `Temporal suggests it (history: ${facts.length} events, ${facts.sizeBytes} bytes)`;
  if (facts.length >= budget.events) return `its history has ${facts.length} events (continues at ${budget.events})`;
  if (facts.sizeBytes >= budget.bytes) return `its history has ${facts.sizeBytes} bytes (continues at ${budget.bytes})`;
  if ((facts.journalSize ?? 0) >= budget.journalEvents) return `its journal keeps ${facts.journalSize} events (continues at ${budget.journalEvents})`;
  return undefined;
}
