import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { Client } from '@temporalio/client';
import type Docker from 'dockerode';
import type { Config } from '../../core/node/config';
import { landingFamilies, renderMetrics, type RequestCounter } from '../metrics';
import { ErrorSchema } from '../schemas';

interface OpsRouteOptions {
  client: Client;
  docker: Docker;
  config: Config;
  requests: RequestCounter;
}

/** Gives up on a dependency that does not answer in time: a health check must answer fast. */
async function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const HealthSchema = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
  temporal: Type.Union([Type.Literal('ok'), Type.Literal('unreachable')]),
  docker: Type.Union([Type.Literal('ok'), Type.Literal('unreachable')]),
});

/** Unauthenticated operational routes: health and Prometheus metrics (rate limited in app.ts). */
export const opsRoutes: FastifyPluginAsyncTypebox<OpsRouteOptions> = async (app, { client, docker, config, requests }) => {
  app.get(
    '/healthz',
    {
      schema: {
        summary: 'Health: Temporal and Docker reachability (503 when either is down)',
        security: [],
        response: { 200: HealthSchema, 503: HealthSchema, 429: ErrorSchema },
      },
    },
    async function health(_request, reply) {
      const [temporal, dockerState] = await Promise.all([
        // A deadline, not only a race: the call must not keep retrying after the answer was given.
        within(
          3_500,
          client.connection.withDeadline(Date.now() + 3_000, () => client.connection.workflowService.getSystemInfo({})),
        ).then(
          () => 'ok' as const,
          () => 'unreachable' as const,
        ),
        within(3_000, docker.ping()).then(
          () => 'ok' as const,
          () => 'unreachable' as const,
        ),
      ]);
      const ok = temporal === 'ok' && dockerState === 'ok';
      return reply.status(ok ? 200 : 503).send({ status: ok ? 'ok' : 'degraded', temporal, docker: dockerState });
    },
  );

  app.get(
    '/metrics',
    {
      schema: {
        summary: "Prometheus metrics: landings by outcome and phase, API requests, and the worker's metrics (sessions, cache, tokens, phase durations, SDK)",
        security: [],
        // Only the 200 is text/plain; the 429 is the JSON error shape.
        response: { 200: { description: 'Prometheus text format 0.0.4', content: { 'text/plain': { schema: Type.String() } } }, 429: ErrorSchema },
      },
    },
    async function metrics(request, reply) {
      const families = [requests.family()];
      let landings = '';
      try {
        landings = renderMetrics(await within(5_000, landingFamilies(client)));
      } catch (error) {
        request.log.warn({ err: error }, 'metrics: visibility counts failed');
      }
      let worker = '';
      let workerUp = 0;
      if (config.workerMetricsUrl) {
        try {
          const response = await fetch(config.workerMetricsUrl, { signal: AbortSignal.timeout(3_000) });
          if (response.ok) {
            worker = await response.text();
            workerUp = 1;
          }
        } catch (error) {
          request.log.warn({ err: error }, 'metrics: the worker endpoint did not answer');
        }
      }
      const up = renderMetrics([
        { name: 'tarmac_api_up', help: 'The API answers (always 1 when scraped).', type: 'gauge', samples: [{ labels: {}, value: 1 }] },
        ...(config.workerMetricsUrl
          ? [
              {
                name: 'tarmac_worker_metrics_up',
                help: 'The configured worker metrics endpoint answered this scrape.',
                type: 'gauge' as const,
                samples: [{ labels: {}, value: workerUp }],
              },
            ]
          : []),
      ]);
      const text = [up, renderMetrics(families), landings, worker].filter((part) => part.length > 0).join('');
      return reply.type('text/plain; version=0.0.4; charset=utf-8').send(text.endsWith('\n') ? text : `${text}\n`);
    },
  );
};
