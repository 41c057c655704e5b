import { condition, continueAsNew, defineQuery, defineSignal, setHandler, workflowInfo } from '@temporalio/workflow';
import type { HostAgents } from '../core/agent-availability';

/** The one registry of a namespace: every worker reports to it, the API reads it. */
export const agentRegistryId = 'tarmac.agent-registry';

/** A worker's report: every harness#model of its recipes, runnable or with what is missing. */
export const agentsReportSignal = defineSignal<[HostAgents]>('agentsReport');

/** The latest report of every host that reported (the reader judges freshness by `at`). */
export const agentsQuery = defineQuery<HostAgents[]>('agents');

/**
 * Which agents each worker can run, as the workers last said (at start and then periodically).
 * An entity workflow, signalled with start; it keeps one report per host and continues as new
 * after many reports so its history stays small.
 */
export async function agentRegistry(carried: HostAgents[] = []): Promise<void> {
  const reports = new Map(carried.map((report) => [report.hostId, report]));
  let received = 0;
  setHandler(agentsReportSignal, (report) => {
    reports.set(report.hostId, report);
    received += 1;
  });
  setHandler(agentsQuery, () => [...reports.values()]);
  await condition(() => received >= 500 || workflowInfo().continueAsNewSuggested);
  await continueAsNew<typeof agentRegistry>([...reports.values()]);
}
