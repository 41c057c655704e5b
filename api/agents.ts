import type { Client } from '@temporalio/client';
import { agentsReportEveryMs, namedAgentAvailability, type HostAgents } from '../core/agent-availability';
import { FailureCode } from '../core/failures';
import { registeredHarnessModel, type HarnessModelRegistry } from '../core/harness-models';
import { agentRegistryId, agentsQuery } from '../workflows/agent-registry';
import { ApiError, assertKnownHarnessModels } from './errors';

/** A report older than this is not evidence of anything (its worker may be gone or changed). */
const freshMs = 3 * agentsReportEveryMs;

/** What the workers last reported; none when the registry does not exist yet (no worker has started). */
async function workerReports(client: Client): Promise<HostAgents[]> {
  try {
    return await client.workflow.getHandle(agentRegistryId).query(agentsQuery);
  } catch {
    return [];
  }
}

/**
 * Dispatch validation at the door for the agents a request names: each must be in the
 * registry (400 TARMAC_UNKNOWN_MODEL) and runnable by some worker, as the workers last
 * reported (400 TARMAC_AGENT_UNAVAILABLE naming the field and the missing image or key).
 * Nothing is started on either. When no worker has reported recently nothing is known, and
 * the request goes on: its agent step will say what is missing if it reaches one.
 */
export async function assertAgentsRunnable(
  specs: { field: string; spec: string | undefined }[],
  registry: HarnessModelRegistry,
  client: Client,
): Promise<void> {
  assertKnownHarnessModels(specs, registry);
  const named = specs.filter((entry): entry is { field: string; spec: string } => entry.spec !== undefined);
  if (named.length === 0) return;
  const reports = await workerReports(client);
  const now = Date.now();
  for (const { field, spec } of named) {
    // Workers report the registry's models; a script model's scenario is looked for by the worker that runs it.
    const answer = namedAgentAvailability(registeredHarnessModel(spec, registry), reports, now, freshMs);
    if (!answer.ok) throw new ApiError(FailureCode.agentUnavailable, `${field} ${answer.reason}`, { field, missing: answer.missing });
  }
}
