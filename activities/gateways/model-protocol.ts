import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { ModelProvider } from '../../core/model-pricing';

/**
 * What the model gateway knows of each provider's HTTP API: which requests it forwards,
 * how the key is sent, what an error looks like. Pure.
 */

/** The providers' public endpoints; a request path (`/v1/messages`) is appended to them. */
export const defaultModelUpstreams: Record<ModelProvider, string> = {
  anthropic: 'https://api.anthropic.com',
  openai: 'https://api.openai.com',
};

/**
 * The requests forwarded: generation, token counting and the model list. Everything
 * else is refused, because the key is the worker's: a batch, a file upload or a
 * fine-tuning job would spend it without a response the gateway could meter.
 */
const routes: Record<ModelProvider, { method: string; path: RegExp }[]> = {
  anthropic: [
    { method: 'POST', path: /^\/v1\/messages$/ },
    { method: 'POST', path: /^\/v1\/messages\/count_tokens$/ },
    { method: 'GET', path: /^\/v1\/models(\/[A-Za-z0-9._:-]+)?$/ },
    // Claude Code's connectivity check (not sent with CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1).
    { method: 'GET', path: /^\/api\/hello$/ },
    { method: 'HEAD', path: /^\/api\/hello$/ },
  ],
  openai: [
    { method: 'POST', path: /^\/v1\/chat\/completions$/ },
    { method: 'POST', path: /^\/v1\/responses$/ },
    { method: 'POST', path: /^\/v1\/responses\/(compact|input_tokens)$/ },
    { method: 'GET', path: /^\/v1\/models(\/[A-Za-z0-9._:-]+)?$/ },
  ],
};

export function routeAllowed(provider: ModelProvider, method: string | undefined, pathname: string): boolean {
  return routes[provider].some((route) => route.method === method && route.path.test(pathname));
}

export function allowedRoutes(provider: ModelProvider): string {
  return routes[provider].map((route) => `${route.method} ${route.path.source.replace(/^\^|\$$/g, '').replace(/\\\//g, '/')}`).join(', ');
}

/** Headers that carry credentials (the client's, whatever they are) or belong to one hop only. */
const credentialHeaders = new Set(['authorization', 'proxy-authorization', 'x-api-key', 'api-key', 'cookie', 'openai-organization', 'openai-project']);
const hopHeaders = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'host',
  'content-length',
  'expect',
]);

/**
 * The headers sent upstream: the client's, without its credentials and hop-by-hop
 * headers, with the worker's key. Responses are asked uncompressed so the gateway can
 * read their usage as they pass (it still decodes a compressed one).
 */
export function upstreamHeaders(provider: ModelProvider, client: IncomingHttpHeaders, apiKey: string | undefined, bodyBytes: number): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(client)) {
    if (value === undefined || credentialHeaders.has(name) || hopHeaders.has(name)) continue;
    headers[name] = value;
  }
  headers['accept-encoding'] = 'identity';
  headers['content-length'] = bodyBytes;
  if (provider === 'anthropic') {
    headers['anthropic-version'] ??= '2023-06-01';
    if (apiKey) headers['x-api-key'] = apiKey;
  } else if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  return headers;
}

/** Headers as the transcript shows them: credentials named, never their values. */
export function transcriptHeaders(headers: IncomingHttpHeaders | OutgoingHttpHeaders): Record<string, unknown> {
  const shown: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    shown[lower] = credentialHeaders.has(lower) || lower === 'set-cookie' ? '[removed]' : value;
  }
  return shown;
}

/** Response headers passed back to the client (hop-by-hop ones belong to the upstream connection). */
export function clientHeaders(upstream: IncomingHttpHeaders): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(upstream)) {
    if (value === undefined || (hopHeaders.has(name) && name !== 'content-length') || name === 'set-cookie') continue;
    headers[name] = value;
  }
  return headers;
}

export type GatewayErrorKind = 'budget' | 'model' | 'route' | 'too-large' | 'upstream';

/**
 * An error the gateway answers itself, in the provider's own shape, so the CLI shows
 * its message as it shows the provider's. A spent budget is a 400 for both: CLIs retry
 * 429 and 5xx with backoff for minutes (OpenAI's own out-of-quota answer is a 429), but
 * end the turn on a 400 (Claude Code re-sends it a few times within a second, then
 * exits with the message; Codex fails the turn at once). The body is the provider's
 * out-of-credit shape (Anthropic's "credit balance is too low" is an
 * `invalid_request_error`; OpenAI's is `insufficient_quota`), and `x-should-retry:
 * false` tells the providers' SDKs not to retry it. A model off the operator's list is answered as
 * the provider answers a model it does not have: a 404 (`not_found_error`; OpenAI's
 * `model_not_found`), which no CLI retries.
 */
export function gatewayError(provider: ModelProvider, kind: GatewayErrorKind, message: string): { status: number; headers: OutgoingHttpHeaders; body: string } {
  const anthropic: Record<GatewayErrorKind, [number, string]> = {
    budget: [400, 'invalid_request_error'],
    model: [404, 'not_found_error'],
    route: [404, 'not_found_error'],
    'too-large': [413, 'request_too_large'],
    upstream: [502, 'api_error'],
  };
  const openai: Record<GatewayErrorKind, [number, string, string | null]> = {
    budget: [400, 'insufficient_quota', 'insufficient_quota'],
    model: [404, 'invalid_request_error', 'model_not_found'],
    route: [404, 'invalid_request_error', 'unknown_url'],
    'too-large': [413, 'invalid_request_error', 'request_too_large'],
    upstream: [502, 'server_error', null],
  };
  const headers: OutgoingHttpHeaders = { 'content-type': 'application/json', 'x-tarmac-gateway': kind };
  if (kind !== 'upstream') headers['x-should-retry'] = 'false';
  if (provider === 'anthropic') {
    const [status, type] = anthropic[kind];
    return { status, headers, body: JSON.stringify({ type: 'error', error: { type, message } }) };
  }
  const [status, type, code] = openai[kind];
  return { status, headers, body: JSON.stringify({ error: { message, type, param: null, code } }) };
}

export interface ForwardedRequest {
  body: Buffer;
  /** The parsed JSON body, when it is JSON. */
  json?: unknown;
  model?: string;
  stream: boolean;
  /** What the gateway changed in the body, for the transcript. */
  changed?: string;
}

/**
 * The request body as forwarded. A streamed Chat Completions request is made to ask
 * for its usage (`stream_options.include_usage`): without it the stream carries none
 * and the gateway could not meter it. Everything else goes byte for byte.
 */
export function forwardedRequest(provider: ModelProvider, pathname: string, body: Buffer): ForwardedRequest {
  let json: unknown;
  try {
    json = body.length > 0 ? JSON.parse(body.toString('utf8')) : undefined;
  } catch {
    return { body, stream: false };
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return { body, json, stream: false };
  const fields = json as Record<string, unknown>;
  const model = typeof fields.model === 'string' ? fields.model : undefined;
  const stream = fields.stream === true;
  if (provider === 'openai' && stream && pathname === '/v1/chat/completions') {
    const options = typeof fields.stream_options === 'object' && fields.stream_options !== null ? (fields.stream_options as Record<string, unknown>) : {};
    if (options.include_usage !== true) {
      const changed = { ...fields, stream_options: { ...options, include_usage: true } };
      return { body: Buffer.from(JSON.stringify(changed)), json: changed, model, stream, changed: 'added stream_options.include_usage' };
    }
  }
  return { body, json, model, stream };
}
