import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { ScheduleNotFoundError } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import type { ConnectionError, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { FailureCode, httpStatus, type ApiErrorCode } from '../core/failures';
import { checkHarnessModel, type HarnessModelRegistry } from '../core/harness-models';
import { answerMethodNotAllowed } from './method-not-allowed';

/** An error the API reports as-is: stable code (its HTTP status from the failure table), message naming the field. */
export class ApiError extends Error {
  readonly statusCode: number;

  constructor(
    readonly code: ApiErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'ApiError';
    this.statusCode = httpStatus(code);
  }
}

/** Nothing by that name: a 404 whose message names what was asked for (`no landing land.app.main.0`). */
export class NotFound extends ApiError {
  constructor(message: string, details?: Record<string, unknown>) {
    super(FailureCode.notFound, message, details);
  }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * What the route's `:id` names (`landing`, `run`): a workflow Temporal does not know is
     * answered 404 `no <names> <id>` by the error handler. Default `run`.
     */
    names?: string;
  }
}

/** Temporal's "no such workflow" or "no such schedule", as the one 404 of the API; undefined for any other error. */
function notFoundOf(error: unknown, request: FastifyRequest): NotFound | undefined {
  if (error instanceof WorkflowNotFoundError) return new NotFound(`no ${request.routeOptions.config.names ?? 'run'} ${error.workflowId}`);
  if (error instanceof ScheduleNotFoundError) return new NotFound(`no schedule ${error.scheduleId}`);
  return undefined;
}

export function invalid(field: string, message: string): ApiError {
  return new ApiError(FailureCode.validation, `${field} ${message}`, { field });
}

/** `/branches/0` → `branches[0]`: how users name a field. */
function fieldOf(instancePath: string, missing?: string): string {
  const parts = instancePath.split('/').filter(Boolean);
  if (missing) parts.push(missing);
  return parts.reduce((name, part) => (/^[0-9]+$/.test(part) ? `${name}[${part}]` : name ? `${name}.${part}` : part), '');
}

/** gRPC status UNAVAILABLE (14) / DEADLINE_EXCEEDED (4), anywhere in the cause chain: the Temporal frontend cannot be reached. */
function temporalUnreachable(error: unknown): boolean {
  for (
    let current = error as { code?: unknown; cause?: unknown } | undefined, depth = 0;
    current && depth < 5;
    current = current.cause as typeof current, depth += 1
  ) {
    if (current.code === 14 || current.code === 4) return true;
  }
  return false;
}

/**
 * One error shape for every route: `{ error: { code, message, details? } }`.
 * 5xx never carry the internal message or a stack; the log has them.
 */
export function registerErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((thrown: FastifyError | ApiError, request, reply) => {
    const error = notFoundOf(thrown, request) ?? thrown;
    if (error instanceof ApiError) {
      return reply.status(error.statusCode).send({ error: { code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}) } });
    }
    if (error.validation && error.validation.length > 0) {
      const first = error.validation[0]!;
      const params = first.params as { missingProperty?: string; additionalProperty?: string };
      const field = fieldOf(first.instancePath, params.missingProperty ?? params.additionalProperty) || error.validationContext || 'body';
      const message = params.missingProperty ? 'is required' : params.additionalProperty ? 'is not a known field' : (first.message ?? 'is invalid');
      return reply.status(httpStatus(FailureCode.validation)).send({
        error: { code: FailureCode.validation, message: `${field} ${message}`, details: { field, in: error.validationContext } },
      });
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      // Fastify's own client errors (bad JSON, wrong content type, body too large).
      return reply.status(status).send({ error: { code: FailureCode.validation, message: error.message } });
    }
    // The operator's recipe files do not load: their own data, named (file and field), not internals.
    if ((error as Error).name === 'RecipeError') {
      request.log.error({ err: error }, 'the recipes do not load');
      return reply
        .status(httpStatus(FailureCode.recipesInvalid))
        .send({ error: { code: FailureCode.recipesInvalid, message: `${(error as Error).message}; nothing was started` } });
    }
    if (temporalUnreachable(error)) {
      request.log.warn({ err: error }, 'Temporal is unreachable');
      return reply
        .status(httpStatus(FailureCode.unavailable))
        .header('retry-after', '5')
        .send({ error: { code: FailureCode.unavailable, message: 'Temporal is unreachable; nothing was started or changed; retry shortly' } });
    }
    request.log.error({ err: error }, 'request failed');
    return reply.status(httpStatus(FailureCode.internal)).send({ error: { code: FailureCode.internal, message: 'internal error; see the server log' } });
  });
  answerMethodNotAllowed(app);
  app.setNotFoundHandler((request, reply) =>
    reply
      .status(httpStatus(FailureCode.notFound))
      .send({ error: { code: FailureCode.notFound, message: `no route ${request.method} ${request.url.split('?')[0]}` } }),
  );
}

/**
 * Fastify's `frameworkErrors`: what its router rejects before any route runs (a path
 * parameter longer than `maxParamLength`, a malformed URL) in the one error shape, as
 * the 400 it is, instead of Fastify's own body and a 414 no route documents.
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH' || error.code === 'FST_ERR_BAD_URL') {
    const message = error.code === 'FST_ERR_BAD_URL' ? 'the URL is not valid' : 'a path parameter is too long';
    void reply.status(httpStatus(FailureCode.validation)).send({ error: { code: FailureCode.validation, message, details: { in: 'params' } } });
    return;
  }
  request.log.error({ err: error }, 'request failed in routing');
  void reply.status(httpStatus(FailureCode.internal)).send({ error: { code: FailureCode.internal, message: 'internal error; see the server log' } });
}

/**
 * Fastify's `clientErrorHandler`: what Node's HTTP parser rejects before Fastify sees a
 * request (a request line and headers over its limit, 16 KiB by default → 431; a timeout
 * → 408; anything else malformed → 400), answered in the one error shape.
 */
export function clientErrorHandler(error: ConnectionError, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'the request line and headers are larger than the server accepts']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'the request was not received in time']
        : [400, 'the request is not valid HTTP'];
  const body = JSON.stringify({ error: { code: FailureCode.validation, message } });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/**
 * Dispatch validation at the door: every harness#model a request names must be in
 * the registry, else 400 TARMAC_UNKNOWN_MODEL naming the field and the nearest names.
 */
export function assertKnownHarnessModels(specs: { field: string; spec: string | undefined }[], registry: HarnessModelRegistry): void {
  for (const { field, spec } of specs) {
    if (spec === undefined) continue;
    const check = checkHarnessModel(spec, registry);
    if (!check.ok) throw new ApiError(FailureCode.unknownModel, `${field} ${check.message}`, { field, nearest: check.nearest });
  }
}
