import type { FastifyInstance } from 'fastify';
import { FailureCode, httpStatus } from '../core/failures';

/** A route path (`/v1/runs/:id`, `/docs/*`) as a pattern over concrete paths. */
function pathPattern(url: string): RegExp {
  const segments = url.split('/').map((segment) => {
    if (segment.startsWith(':')) return '[^/]+';
    if (segment === '*') return '.*';
    return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  });
  return new RegExp(`^${segments.join('/')}$`);
}

/**
 * A known path asked with a method it does not serve gets 405 with `Allow` (RFC 9110),
 * not Fastify's 404: Fastify routes per method, so without this a client cannot tell a
 * wrong method from a wrong path. It answers in `onRequest`, before a body is parsed,
 * so a body method with no content type (QUERY) gets the 405 too.
 */
export function answerMethodNotAllowed(app: FastifyInstance): void {
  const routes: { pattern: RegExp; methods: string[] }[] = [];
  app.addHook('onRoute', (route) => {
    routes.push({ pattern: pathPattern(route.url), methods: [route.method].flat().map((method) => method.toUpperCase()) });
  });
  app.addHook('onRequest', async (request, reply) => {
    if (!request.is404) return;
    const path = request.url.split('?')[0]!;
    const allowed = new Set(routes.filter(({ pattern }) => pattern.test(path)).flatMap(({ methods }) => methods));
    if (allowed.size === 0) return;
    const allow = [...allowed].sort().join(', ');
    return reply
      .status(httpStatus(FailureCode.methodNotAllowed))
      .header('allow', allow)
      .send({ error: { code: FailureCode.methodNotAllowed, message: `${request.method} is not served on ${path}; allowed: ${allow}` } });
  });
}
