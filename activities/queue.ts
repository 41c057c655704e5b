import { createHash } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { repoName } from '../core/node/landing-id';
import { admissionRequestSignal } from '../core/messages';
import { searchAttributes } from '../core/search-attributes';

/** The target queue's workflow id: one queue per (repo, target). */
export function targetQueueId(repo: string, target: string): string {
  const digest = createHash('sha256').update(JSON.stringify([repo, target])).digest('hex').slice(0, 12);
  return `queue.${repoName(repo).replace(/[^A-Za-z0-9._-]+/g, '_')}.${target.replace(/[^A-Za-z0-9._-]+/g, '_')}.${digest}`;
}

export function createQueueActivities({ taskQueue }: { taskQueue: string }) {
  return {
    /** Asks the (repo, target) queue to admit a landing, starting the queue if it is not running. */
    requestAdmission: async ({ repo, target, landingId }: { repo: string; target: string; landingId: string }): Promise<{ queueId: string }> => {
      const queueId = targetQueueId(repo, target);
      await Context.current().client.workflow.signalWithStart('targetQueue', {
        workflowId: queueId,
        taskQueue,
        args: [{ waiting: [], admitted: 0 }],
        signal: admissionRequestSignal,
        typedSearchAttributes: [
          { key: searchAttributes.kind, value: 'target-queue' },
          { key: searchAttributes.repo, value: repo },
          { key: searchAttributes.target, value: target },
        ],
        signalArgs: [{ landingId }],
      });
      return { queueId };
    },
  };
}
