import type { Client, WorkflowStartOptions } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy } from '@temporalio/common';
import { workflowTaskTimeout } from '../core/timeouts';

/**
 * Starts a run under its business-key workflow id. The id never takes a second run
 * (`REJECT_DUPLICATE`), so the same request again finds the run it started: `duplicate`
 * is then true and the routes answer 200 with the existing id instead of 201. Its workflow tasks
 * time out after `workflowTaskTimeout` (a dead worker's task goes to another in seconds).
 */
export async function startRun(
  client: Client,
  workflowType: string,
  options: Omit<WorkflowStartOptions, 'workflowIdReusePolicy'>,
): Promise<{ duplicate: boolean }> {
  try {
    await client.workflow.start(workflowType, { workflowTaskTimeout, ...options, workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE });
    return { duplicate: false };
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return { duplicate: true };
    throw error;
  }
}
