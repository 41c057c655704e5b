import { createHash } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { repoName } from '../../core/node/landing-id';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { admitUpdate, releaseSignal, type AdmitRequest } from '../../core/messages';
import { searchAttributes } from '../../core/search-attributes';
import { workflowTaskTimeout } from '../../core/timeouts';

/** The target queue's workflow id: one queue per (repo, target). */
export function targetQueueId(repo: string, target: string): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([repo, target]))
    .digest('hex')
    .slice(0, 12);
  return `queue.${repoName(repo).replace(/[^A-Za-z0-9._-]+/g, '_')}.${target.replace(/[^A-Za-z0-9._-]+/g, '_')}.${digest}`;
}

export function createQueueActivities({ taskQueue }: { taskQueue: string }) {
  return {
    /**
     * Asks the (repo, target) queue to admit a landing, starting the queue if it is not running
     * (update-with-start). `admitted: true` when the target was free: the landing merges now,
     * with no signal round trip; otherwise the queue signals `admitted` when its turn comes.
     */
    requestAdmission: async ({
      repo,
      target,
      ...admit
    }: { repo: string; target: string } & AdmitRequest): Promise<{ queueId: string; admitted: boolean; seq?: number }> => {
      const queueId = targetQueueId(repo, target);
      const { client } = Context.current();
      const { admitted, seq } = await client.workflow.executeUpdateWithStart(admitUpdate, {
        args: [admit],
        startWorkflowOperation: new WithStartWorkflowOperation('targetQueue', {
          workflowId: queueId,
          taskQueue,
          workflowTaskTimeout,
          workflowIdConflictPolicy: 'USE_EXISTING',
          args: [{ waiting: [], admitted: 0 }],
          typedSearchAttributes: [
            { key: searchAttributes.kind, value: 'target-queue' },
            { key: searchAttributes.repo, value: repo },
            { key: searchAttributes.target, value: target },
          ],
        }),
      });
      return { queueId, admitted, ...(seq === undefined ? {} : { seq }) };
    },

    /** Frees the target for the next landing (a queue that is gone has nobody to free it for). */
    release: async ({ queueId, landingId }: { queueId: string; landingId: string }): Promise<void> => {
      await Context.current()
        .client.workflow.getHandle(queueId)
        .signal(releaseSignal, { landingId })
        .catch((error: unknown) => {
          if ((error as { name?: string }).name !== 'WorkflowNotFoundError') throw error;
        });
    },
  };
}
