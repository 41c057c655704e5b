import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Client } from '@temporalio/client';
import Ajv from 'ajv';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Config } from '../core/config';
import { bearerAuth } from './auth';
import { registerErrorHandler } from './errors';
import { eventRoutes } from './routes/events';
import { landingControlRoutes, landingRoutes } from './routes/landings';
import { fixLoopRoutes } from './routes/fix-loops';
import { reviewRoutes } from './routes/reviews';
import { runRoutes } from './routes/runs';
import { scheduleRoutes } from './routes/schedules';

export interface AppDeps {
  client: Client;
  config: Config;
  logger?: FastifyBaseLogger;
}

/** Builds the HTTP API. It only translates HTTP into Temporal start / query calls. */
export async function buildApp({ client, config, logger }: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    ...(logger ? { loggerInstance: logger } : { logger: false }),
    bodyLimit: 1024 * 1024,
  }).withTypeProvider<TypeBoxTypeProvider>();
  // Bodies are validated strictly (a string is never coerced into an array or number);
  // query strings and path params are text, so their numbers and booleans are coerced.
  const strict = new Ajv({ coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false, strict: false });
  const coercing = new Ajv({ coerceTypes: true, removeAdditional: false, useDefaults: true, allErrors: false, strict: false });
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? strict : coercing).compile(schema));
  registerErrorHandler(app);
  await app.register(swagger, {
    openapi: {
      info: { title: 'Tarmac API', version: '0.1.0', description: 'Durable landings for agent-written branches.' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  app.get('/healthz', { schema: { summary: 'Liveness and Temporal reachability', security: [] } }, async (_request, reply) => {
    try {
      await client.connection.workflowService.getSystemInfo({});
      return { status: 'ok', temporal: 'ok' };
    } catch {
      return reply.status(503).send({ status: 'degraded', temporal: 'unreachable' });
    }
  });

  await app.register(
    async (v1) => {
      v1.addHook('onRequest', bearerAuth(config.apiTokens));
      await v1.register(landingRoutes, { client, config });
      await v1.register(landingControlRoutes, { client });
      await v1.register(eventRoutes, { client, config });
      await v1.register(runRoutes, { client });
      await v1.register(reviewRoutes, { client, config });
      await v1.register(fixLoopRoutes, { client, config });
      await v1.register(scheduleRoutes, { client, config });
    },
    { prefix: '/v1' },
  );
  return app;
}
