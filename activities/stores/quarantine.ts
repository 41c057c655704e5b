import { Context } from '@temporalio/activity';
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { suiteQuarantineId } from '../../core/node/quarantine-id';
import { quarantinesQuery, quarantineUpdate, type Quarantine, type QuarantineRequest, type SuiteQuarantineInput } from '../../core/quarantine';
import { searchAttributes } from '../../core/search-attributes';
import { workflowTaskTimeout } from '../../core/timeouts';
import { activeQuarantines } from '../../policies/flake';

/**
 * The quarantines in force on one (repo, target), asked of its entity (workflows/suite-quarantine.ts)
 * and compared with this clock: none when the entity is not running (nothing was ever quarantined, or
 * everything expired and it ended).
 */
export async function quarantinesInForce(client: Client, repo: string, target: string): Promise<Quarantine[]> {
  const handle = client.workflow.getHandle(suiteQuarantineId(repo, target));
  try {
    const { status } = await handle.describe();
    if (status.name !== 'RUNNING') return [];
    return activeQuarantines(await handle.query(quarantinesQuery), Date.now());
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return [];
    throw error;
  }
}

/** Quarantines a suite on (repo, target), starting the target's entity when it is not running (update-with-start). */
export async function quarantineSuite(client: Client, taskQueue: string, repo: string, target: string, request: QuarantineRequest): Promise<Quarantine> {
  return await client.workflow.executeUpdateWithStart(quarantineUpdate, {
    args: [request],
    startWorkflowOperation: new WithStartWorkflowOperation('suiteQuarantine', {
      workflowId: suiteQuarantineId(repo, target),
      taskQueue,
      workflowTaskTimeout,
      workflowIdConflictPolicy: 'USE_EXISTING',
      args: [{ repo, target, entries: [] } satisfies SuiteQuarantineInput],
      typedSearchAttributes: [
        { key: searchAttributes.kind, value: 'suite-quarantine' },
        { key: searchAttributes.repo, value: repo },
        { key: searchAttributes.target, value: target },
      ],
    }),
  });
}

export function createQuarantineActivities({ taskQueue }: { taskQueue: string }) {
  return {
    /** The suites quarantined on a landing's target now (a landing asks when a suite of its round is red). */
    active: async ({ repo, target }: { repo: string; target: string }): Promise<Quarantine[]> =>
      await quarantinesInForce(Context.current().client, repo, target),

    /** Quarantines a suite on (repo, target): an entity that ended meanwhile is started again (a retry of this step finds it). */
    quarantine: async ({ repo, target, request }: { repo: string; target: string; request: QuarantineRequest }): Promise<Quarantine> =>
      await quarantineSuite(Context.current().client, taskQueue, repo, target, request),
  };
}
