/**
 * Temporal visibility queries for listing runs, built from validated filters. Pure.
 * Values are quoted; characters that could end the quote are refused before this
 * point (the API answers 400 naming the field), so a filter can never widen a query.
 */
export interface RunFilter {
  /** One kind (`landing`), or any of several. */
  kind: string | readonly string[];
  repo?: string;
  target?: string;
  branch?: string;
  phase?: string;
  outcome?: string;
  /** Temporal execution status: Running, Completed, Failed, Canceled, Terminated, TimedOut. */
  status?: string;
}

export const executionStatuses = ['Running', 'Completed', 'Failed', 'Canceled', 'Terminated', 'TimedOut', 'ContinuedAsNew'] as const;

/** Why a filter value cannot be put in a query, or undefined when it can. */
export function filterValueProblem(value: string): string | undefined {
  // Control characters too: a NUL byte makes Temporal's list call fail (it was a 500 after 20 s).
  if (/['"\\]|\p{Cc}/u.test(value)) return 'must not contain quotes, backslashes or control characters';
  return undefined;
}

export function runListQuery(filter: RunFilter): string {
  const quote = (value: string) => `'${value}'`;
  const clauses = [typeof filter.kind === 'string' ? `TarmacKind = ${quote(filter.kind)}` : `TarmacKind IN (${filter.kind.map(quote).join(', ')})`];
  if (filter.repo !== undefined) clauses.push(`TarmacRepo = ${quote(filter.repo)}`);
  if (filter.target !== undefined) clauses.push(`TarmacTarget = ${quote(filter.target)}`);
  // TarmacBranch is a keyword list: `=` matches a run with this branch among its branches.
  if (filter.branch !== undefined) clauses.push(`TarmacBranch = ${quote(filter.branch)}`);
  if (filter.phase !== undefined) clauses.push(`TarmacPhase = ${quote(filter.phase)}`);
  if (filter.outcome !== undefined) clauses.push(`TarmacOutcome = ${quote(filter.outcome)}`);
  if (filter.status !== undefined) clauses.push(`ExecutionStatus = ${quote(filter.status)}`);
  // A run that continued as new is listed once, as its latest run (unless its earlier runs are asked for).
  else clauses.push(`ExecutionStatus != 'ContinuedAsNew'`);
  return clauses.join(' AND ');
}
