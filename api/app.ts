import cors from '@fastify/cors';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Client } from '@temporalio/client';
import Ajv from 'ajv';
import Docker from 'dockerode';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Config } from '../core/node/config';
import { FailureCode } from '../core/failures';
import { bearerAuth } from './auth';
import { dashboardRoutes } from './dashboard';
import { ApiError, clientErrorHandler, frameworkErrors, registerErrorHandler } from './errors';
import { RequestCounter } from './metrics';
import { ErrorSchema } from './schemas';
import { opsRoutes } from './routes/ops';
import { recipeRoutes } from './routes/recipes';
import { agentRoutes } from './routes/agents';
import { eventRoutes } from './routes/events';
import { landingControlRoutes, landingRoutes } from './routes/landings';
import { landingRetryRoutes } from './routes/landing-retry';
import { fixLoopRoutes } from './routes/fix-loops';
import { reviewRoutes } from './routes/reviews';
import { runRoutes } from './routes/runs';
import { scheduleRoutes } from './routes/schedules';
import { retentionRoutes } from './routes/retention';
import { quarantineRoutes } from './routes/quarantines';
import { queueRoutes } from './routes/queues';
import { environmentRoutes } from './routes/environments';

interface AppDeps {
  client: Client;
  config: Config;
  /** Docker client for the health check; default one on `config.dockerSocket`. */
  docker?: Docker;
  logger?: FastifyBaseLogger;
  /** The built dashboard served at /dashboard/; default dist/dashboard (npm run build:dashboard). */
  dashboardDir?: string;
}

/** Builds the HTTP API. It only translates HTTP into Temporal start / query calls. */
export async function buildApp({ client, config, logger, docker, dashboardDir }: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    ...(logger ? { loggerInstance: logger } : { logger: false }),
    bodyLimit: 1024 * 1024,
    // Above every path parameter's maxLength (ids: 200), so the schema answers with its message;
    // longer ones get the same 400 through frameworkErrors (Fastify's default is 100, then a bare 414).
    routerOptions: { maxParamLength: 256 },
    frameworkErrors,
    clientErrorHandler,
  }).withTypeProvider<TypeBoxTypeProvider>();
  // Bodies are validated strictly (a string is never coerced into an array or number);
  // query strings and path params are text, so their numbers and booleans are coerced.
  const strict = new Ajv({ coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false, strict: false });
  const coercing = new Ajv({ coerceTypes: true, removeAdditional: false, useDefaults: true, allErrors: false, strict: false });
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? strict : coercing).compile(schema));
  registerErrorHandler(app);
  // Any /v1 route can meet a missing token, a bug, or Temporal being down: the error handler
  // answers those the same way everywhere, so every /v1 operation documents them.
  app.addHook('onRoute', (route) => {
    const response = route.schema?.response as Record<string, unknown> | undefined;
    if (!route.url.startsWith('/v1/') || !response) return;
    response[401] ??= ErrorSchema;
    response[500] ??= ErrorSchema;
    response[503] ??= ErrorSchema;
  });
  const requests = new RequestCounter();
  app.addHook('onResponse', async (request, reply) => {
    requests.count(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode);
  });
  // CORS is off unless origins are configured: browsers then get no CORS headers at all.
  if (config.apiCorsOrigins.length > 0) {
    await app.register(cors, {
      origin: [...config.apiCorsOrigins],
      methods: ['GET', 'POST', 'DELETE'],
      allowedHeaders: ['authorization', 'content-type', 'last-event-id'],
    });
  }
  // Paths without a token (health, metrics, docs, unknown paths) are rate limited per client;
  // /v1 is behind bearer tokens instead.
  await app.register(rateLimit, {
    global: true,
    max: config.apiRateLimit,
    timeWindow: 60_000,
    allowList: (request) => request.url.startsWith('/v1/'),
    errorResponseBuilder: (_request, context) =>
      new ApiError(FailureCode.rateLimited, `too many requests: at most ${context.max} per minute on this path; retry in ${Math.ceil(context.ttl / 1000)} s`),
  });
  await app.register(swagger, {
    openapi: {
      info: { title: 'Tarmac API', version: '0.1.0', description: 'Durable landings for agent-written branches.' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  await app.register(opsRoutes, { client, docker: docker ?? new Docker({ socketPath: config.dockerSocket }), config, requests });
  await app.register(dashboardRoutes, dashboardDir ? { dir: dashboardDir } : {});

  await app.register(
    async (v1) => {
      v1.addHook('onRequest', bearerAuth(config.apiTokens));
      await v1.register(landingRoutes, { client, config });
      await v1.register(landingControlRoutes, { client });
      await v1.register(landingRetryRoutes, { client, config });
      await v1.register(eventRoutes, { client, config });
      await v1.register(recipeRoutes, { recipesDir: config.recipesDir });
      await v1.register(agentRoutes, { client, recipesDir: config.recipesDir });
      await v1.register(runRoutes, { client });
      await v1.register(reviewRoutes, { client, config });
      await v1.register(fixLoopRoutes, { client, config });
      await v1.register(scheduleRoutes, { client, config });
      await v1.register(retentionRoutes, { client });
      await v1.register(quarantineRoutes, { client });
      await v1.register(queueRoutes, { client });
      await v1.register(environmentRoutes, { dataDir: config.dataDir });
    },
    { prefix: '/v1' },
  );
  return app;
}
