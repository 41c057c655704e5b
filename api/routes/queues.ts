import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { WorkflowNotFoundError } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import { targetQueueId } from '../../activities/stores/queue';
import { queueStatusQuery, type QueueStatusView } from '../../core/messages';
import { searchAttributes } from '../../core/search-attributes';
import { runListQuery } from '../../core/visibility-query';
import { queueEta } from '../../policies/batch';
import { ErrorSchema, QueueViewSchema } from '../schemas';
import { canonicalRepo, checkedTarget } from '../target-filter';

const QueueParams = Type.Object({
  repo: Type.String({ minLength: 1, maxLength: 4096, description: 'the repository as given to POST /v1/landings, URL-encoded (a path or git URL)' }),
  target: Type.String({ minLength: 1, maxLength: 255, description: 'the target branch, URL-encoded' }),
});

// 431: a request line or headers larger than the server accepts (a long repo in the query or path).
const errors = { 400: ErrorSchema, 401: ErrorSchema, 431: ErrorSchema, 500: ErrorSchema };

/** The queue's answer as the view reads it: the ETA of each waiting landing from the queue's recent turns. */
function queueView(repo: string, target: string, queueId: string, status: QueueStatusView | undefined, now: number) {
  if (!status) return { repo, target, queueId, running: false, waiting: [], admitted: 0, batches: 0, recentTurnMs: [] };
  const recent = status.recentTurnMs ?? [];
  const tickets = status.tickets ?? status.waiting.map((landingId, seq) => ({ landingId, lane: 0, seq, batchable: false, batchSize: 1 }));
  const inFlightForMs = status.turnStartedAt === undefined ? undefined : Math.max(0, now - status.turnStartedAt);
  const batchSize = tickets[0]?.batchable ? (tickets[0].batchSize ?? 1) : 1;
  return {
    repo,
    target,
    queueId,
    running: true,
    ...(status.current ? { current: status.current } : {}),
    ...(status.batch ? { batch: { id: status.batch.id, members: [...status.batch.members], links: { self: `/v1/runs/${status.batch.id}` } } } : {}),
    waiting: tickets.map((ticket, position) => {
      const eta = queueEta({ position, batchSize, recentTurnMs: recent, ...(inFlightForMs === undefined ? {} : { inFlightForMs }) });
      return {
        landingId: ticket.landingId,
        position,
        lane: ticket.lane,
        seq: ticket.seq,
        batchable: ticket.batchable,
        ...(eta ? { etaMs: eta.etaMs } : {}),
        links: { landing: `/v1/landings/${ticket.landingId}` },
      };
    }),
    admitted: status.admitted,
    batches: status.batches ?? 0,
    ...(inFlightForMs === undefined ? {} : { turnInFlightMs: inFlightForMs }),
    recentTurnMs: [...recent],
  };
}

/**
 * Target queues (workflows/target-queue/target-queue.ts): who holds the target, the batch in flight, the waiting
 * line by lane and arrival with each landing's ETA from the queue's recent turns. Read from the
 * target's entity workflow, so any API instance answers for every host.
 */
export const queueRoutes: FastifyPluginAsyncTypebox<{ client: Client }> = async (app, { client }) => {
  const read = async (repo: string, target: string) => {
    const queueId = targetQueueId(repo, target);
    let status: QueueStatusView | undefined;
    try {
      status = await client.workflow.getHandle(queueId).query(queueStatusQuery);
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    }
    return queueView(repo, target, queueId, status, Date.now());
  };

  app.get(
    '/queues',
    {
      schema: {
        summary: 'Target queues that run now (one per repo and target): who holds each target, the batch in flight, the waiting line with ETAs',
        response: { 200: Type.Object({ queues: Type.Array(QueueViewSchema) }), ...errors },
      },
    },
    async function listQueues() {
      const queues = [];
      for await (const execution of client.workflow.list({ query: runListQuery({ kind: 'target-queue', status: 'Running' }) })) {
        const attributes = execution.typedSearchAttributes;
        const repo = attributes.get(searchAttributes.repo);
        const target = attributes.get(searchAttributes.target);
        if (repo && target) queues.push(await read(repo, target));
        if (queues.length >= 100) break;
      }
      return { queues };
    },
  );

  app.get(
    '/queues/:repo/:target',
    {
      schema: {
        summary: "One target's queue: who holds the target, the batch in flight, the waiting line (position, lane, batchable, ETA from recent turns)",
        params: QueueParams,
        response: { 200: QueueViewSchema, ...errors },
      },
    },
    async function showQueue(request) {
      return await read(canonicalRepo(request.params.repo), checkedTarget(request.params.target));
    },
  );
};
