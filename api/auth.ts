import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { FailureCode } from '../core/failures';
import { ApiError } from './errors';

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * Bearer-token check for `/v1`. Tokens are compared as SHA-256 digests with a
 * constant-time compare, so neither content nor length leaks through timing; the
 * 401 never says which part was wrong.
 */
export function bearerAuth(tokens: readonly string[]) {
  const accepted = tokens.map(digest);
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const header = request.headers.authorization ?? '';
    const match = /^Bearer ([^\s]+)$/i.exec(header);
    const offered = digest(match?.[1] ?? '');
    let ok = false;
    for (const token of accepted) ok = timingSafeEqual(token, offered) || ok;
    if (!match || !ok) throw new ApiError(FailureCode.unauthorized, 'a valid bearer token is required');
  };
}
