import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import type { Static } from '@sinclair/typebox';
import { searchAttributes } from '../../core/search-attributes';
import { filterValueProblem, runListQuery } from '../../core/visibility-query';
import { invalid } from '../errors';
import type { RunSummaryBaseSchema } from '../schemas';
import { canonicalRepo } from '../target-filter';

type Filter = Parameters<typeof runListQuery>[0];

/**
 * A list request's filters as a visibility query takes them: each value safe in the query, and the
 * repository read the way runs record it (canonical; no allow-list: a filter starts nothing).
 */
export function readerFilter<Query extends { repo?: string }>(query: Query): Omit<Query, 'repo'> & { repo?: string } {
  const { repo, ...rest } = query;
  const canonical = repo === undefined ? undefined : canonicalRepo(repo);
  for (const [field, value] of Object.entries(rest)) {
    const problem = typeof value === 'string' ? filterValueProblem(value) : undefined;
    if (problem) throw invalid(field, problem);
  }
  return { ...rest, ...(canonical === undefined ? {} : { repo: canonical }) };
}

/** What every listing says of a run: its id, status and times, and the search attributes it was recorded with. */
export function runSummary(execution: WorkflowExecutionInfo): Static<typeof RunSummaryBaseSchema> {
  const attributes = execution.typedSearchAttributes;
  const repo = attributes.get(searchAttributes.repo);
  const target = attributes.get(searchAttributes.target);
  const branches = attributes.get(searchAttributes.branch);
  const phase = attributes.get(searchAttributes.phase);
  const outcome = attributes.get(searchAttributes.outcome);
  return {
    id: execution.workflowId,
    workflowStatus: execution.status.name,
    startTime: execution.startTime.toISOString(),
    ...(execution.closeTime ? { closeTime: execution.closeTime.toISOString() } : {}),
    ...(repo ? { repo } : {}),
    ...(target ? { target } : {}),
    ...(branches ? { branches: [...branches] } : {}),
    ...(phase ? { phase } : {}),
    ...(outcome ? { outcome } : {}),
  };
}

/** The runs a filter matches, newest first, at most `limit`, each as `summary` reads it. */
export async function listRuns<Summary>(
  client: Client,
  filter: Filter,
  limit: number,
  summary: (execution: WorkflowExecutionInfo) => Summary,
): Promise<Summary[]> {
  const runs: Summary[] = [];
  for await (const execution of client.workflow.list({ query: runListQuery(filter) })) {
    runs.push(summary(execution));
    if (runs.length >= limit) break;
  }
  return runs;
}
