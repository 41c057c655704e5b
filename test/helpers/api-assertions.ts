import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { FailureCode } from '../../core/failures';

type Inject = Awaited<ReturnType<FastifyInstance['inject']>>;

/** The one error shape `{ error: { code, message, details? } }` with this status and code; returns the error. */
export function assertError(response: Inject, status: number, code: string): { code: string; message: string; details?: Record<string, unknown> } {
  assert.equal(response.statusCode, status, response.body);
  const body = response.json<{ error: { code: string; message: string; details?: Record<string, unknown> } }>();
  assert.deepEqual(Object.keys(body), ['error'], 'one error shape');
  assert.equal(body.error.code, code);
  assert.equal(typeof body.error.message, 'string');
  return body.error;
}

/** A concrete URL for an OpenAPI path: `{id}` filled with a plausible id. */
const concrete = (path: string) => path.replace(/\{[^}]+\}/g, 'landing-x');

/**
 * Every /v1 operation of the app's OpenAPI document answers 401 without a token, with a wrong one
 * and with a malformed header — the same message each time; only health and metrics are open.
 */
export async function assertEveryRouteNeedsToken(app: FastifyInstance, token: string): Promise<void> {
  const document = app.swagger() as { paths: Record<string, Record<string, unknown>> };
  const operations = Object.entries(document.paths)
    .filter(([path]) => path.startsWith('/v1/'))
    .flatMap(([path, methods]) => Object.keys(methods).map((method) => ({ path, method: method.toUpperCase() as 'GET' | 'POST' | 'DELETE' })));
  assert.ok(operations.length >= 14, `the document lists the /v1 operations (${operations.length})`);
  for (const { path, method } of operations) {
    const url = concrete(path);
    const anonymous = assertError(await app.inject({ method, url }), 401, FailureCode.unauthorized);
    const wrong = assertError(await app.inject({ method, url, headers: { authorization: 'Bearer not-the-token-0123456789' } }), 401, FailureCode.unauthorized);
    const malformed = assertError(await app.inject({ method, url, headers: { authorization: token } }), 401, FailureCode.unauthorized);
    assert.equal(wrong.message, anonymous.message, `${method} ${path}: the 401 does not say which part was wrong`);
    assert.equal(malformed.message, anonymous.message);
  }
  assert.deepEqual(
    Object.keys(document.paths)
      .filter((path) => !path.startsWith('/v1/'))
      .sort(),
    ['/healthz', '/metrics'],
    'only health and metrics are served without a token',
  );
}
