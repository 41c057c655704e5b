import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { modelAllowance, type ModelProvider, type PricingTable } from '../../core/model-pricing';
import { modelBudgetRefusal, type ModelBudgetLeft } from '../../policies/model-budget';
import { containerUser } from '../git/git';
import { forwardExchange, type ExchangeResult } from './model-exchange';
import { loadUsage, meterResponse, type ModelGatewayUsage } from './model-gateway-usage';
import { allowedRoutes, forwardedRequest, gatewayError, routeAllowed, transcriptHeaders, type GatewayErrorKind } from './model-protocol';
import { ModelTranscript, transcriptBody, transcriptLimits } from './model-transcript';
import { serveHttpPrivately } from './private-socket';
import { writeFileAtomic } from '../stores/run-store';

export type { ModelGatewayUsage } from './model-gateway-usage';

/**
 * The model gateway: one per session, on a unix socket next to the tool gateway's
 * (/tarmac/gateway/model.sock in the container; the image's forwarder puts it on the
 * container's loopback for the CLI's base URL). The session has no network: this is its
 * only way to a model. For every request it
 *
 * - refuses what it does not forward (only generation, token counting, model lists), and a model
 *   the operator did not list for the provider (recipes/pricing.json);
 * - checks the budget before anything reaches the upstream;
 * - replaces whatever credentials the client sent with the worker's key;
 * - passes the response back as it arrives (streams event by event) while metering its
 *   usage exactly as the provider reports it, priced from `recipes/pricing.json`;
 * - appends the exchange to the transcript (no credentials, bodies capped).
 *
 * The counters are persisted after every exchange (`usage.json`), so a worker restart
 * neither loses what was spent nor resets the budget.
 */

/** How the gateway decides whether the next request may go. */
export type ModelBudget =
  /** What the session may spend through this gateway (counted from the persisted counters). */
  | { left: ModelBudgetLeft }
  /** Asked before every request with the counters so far: a reason refuses the request. */
  | { check: (spent: ModelGatewayUsage) => string | undefined | Promise<string | undefined> };

export const modelGatewayLimits = {
  /** A request body larger than this is refused (413); Anthropic's own limit is 32 MB. */
  requestBytes: 32 * 1024 * 1024,
  /** A non-streaming response larger than this passes through unmetered (flagged). */
  meteredResponseBytes: 32 * 1024 * 1024,
  /** Text rebuilt from one stream for the transcript. */
  streamTextChars: 1024 * 1024,
  /** Each body in the transcript. */
  transcriptBodyChars: transcriptLimits.bodyChars,
  /** The transcript file, after which it keeps entries without bodies. */
  transcriptBytes: transcriptLimits.fileBytes,
};

export interface ModelGatewayOptions {
  /** The gateway's own directory (worker-owned, never mounted): `usage.json` and, by default, `transcript.jsonl`. */
  dir: string;
  /**
   * Names the socket directory (default `dir`). Pass the tool gateway's `dir` so that
   * `model.sock` lands next to `gateway.sock`, in the one directory mounted at /tarmac/gateway.
   */
  socketKey?: string;
  /** The socket's file name (default `model.sock`). */
  socketName?: string;
  provider: ModelProvider;
  /** Where requests go, http or https; the request's path is appended (`https://api.anthropic.com` + `/v1/messages`). */
  upstream: string;
  /** The provider key from the worker's environment; undefined forwards without one (a local scripted endpoint). */
  apiKey: string | undefined;
  budget: ModelBudget;
  pricing: PricingTable;
  /** The transcript (JSONL; default `<dir>/transcript.jsonl`): keep it in the run's data dir. */
  transcriptPath?: string;
  /** Overrides of `modelGatewayLimits`. */
  limits?: Partial<typeof modelGatewayLimits>;
}

export interface ModelGatewayHandle {
  socketPath: string;
  /** The directory holding the socket: mount it (not the socket file) so a re-created socket is seen. */
  socketDir: string;
  /** The counters so far (all attempts of the session that used this `dir`). */
  usage(): ModelGatewayUsage;
  close(): Promise<void>;
}

/** Reads a request body up to `max` bytes; undefined when it is larger. */
function readBody(request: IncomingMessage, max: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    request.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > max) {
        request.pause();
        resolve(undefined);
      } else chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

/** What one gateway's handler works with: its options, counters, transcript and upstream connection. */
interface ModelGatewayState {
  provider: ModelProvider;
  pricing: PricingTable;
  apiKey: string | undefined;
  limits: typeof modelGatewayLimits;
  base: URL;
  agent: http.Agent;
  usage: ModelGatewayUsage;
  transcript: ModelTranscript;
  persist: () => Promise<void>;
  budgetRefusal: () => Promise<string | undefined>;
}

/** Refuses a request in its provider's error shape and records the refusal in the transcript. */
async function answer(
  { provider, transcript }: ModelGatewayState,
  response: ServerResponse,
  kind: GatewayErrorKind,
  message: string,
  entry: Record<string, unknown>,
): Promise<void> {
  const error = gatewayError(provider, kind, message);
  if (kind === 'too-large') error.headers.connection = 'close';
  if (!response.destroyed) response.writeHead(error.status, error.headers).end(error.body);
  await transcript.append({ ...entry, status: error.status, refused: { kind, message } });
}

/** One exchange: refused (route, size, budget) or forwarded, metered, persisted and written to the transcript. */
async function handle(gateway: ModelGatewayState, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const { provider, pricing, apiKey, limits, base, agent, usage, transcript, persist, budgetRefusal } = gateway;
  const started = Date.now();
  const url = new URL(request.url ?? '/', 'http://model-gateway');
  const entry: Record<string, unknown> = {
    at: new Date(started).toISOString(),
    id: randomBytes(6).toString('hex'),
    method: request.method,
    path: url.pathname + url.search,
  };
  const requestHeaders = transcriptHeaders(request.headers);
  if (!routeAllowed(provider, request.method, url.pathname)) {
    usage.otherRefusals += 1;
    await persist();
    request.resume();
    return answer(
      gateway,
      response,
      'route',
      `tarmac: the model gateway does not forward ${request.method} ${url.pathname} (it forwards ${allowedRoutes(provider)})`,
      {
        ...entry,
        request: { headers: requestHeaders },
      },
    );
  }
  const body = await readBody(request, limits.requestBytes);
  if (!body) {
    usage.otherRefusals += 1;
    await persist();
    return answer(gateway, response, 'too-large', `tarmac: the request body is over the model gateway's limit of ${limits.requestBytes} bytes`, {
      ...entry,
      request: { headers: requestHeaders },
    });
  }
  const forwarded = forwardedRequest(provider, url.pathname, body);
  const requestRecord = {
    headers: requestHeaders,
    body: transcriptBody(forwarded.body, limits.transcriptBodyChars),
    ...(forwarded.changed ? { changed: forwarded.changed } : {}),
  };
  Object.assign(entry, { model: forwarded.model, stream: forwarded.stream });

  // Only the models the operator listed for this provider go out (each has a price: nothing is
  // metered at an unknown cost). A request that names none (a model list) passes.
  const allowance = forwarded.model === undefined ? { ok: true as const } : modelAllowance(pricing, provider, forwarded.model);
  if (!allowance.ok) {
    usage.modelRefusals = (usage.modelRefusals ?? 0) + 1;
    usage.lastModelRefusal = { at: new Date().toISOString(), model: forwarded.model!, reason: allowance.reason };
    await persist();
    return answer(gateway, response, 'model', `tarmac: ${allowance.reason}; the request was not sent`, { ...entry, request: requestRecord });
  }

  const refusal = await budgetRefusal();
  if (refusal) {
    usage.budgetRefusals += 1;
    usage.lastBudgetRefusal = { at: new Date().toISOString(), reason: refusal };
    await persist();
    return answer(gateway, response, 'budget', `tarmac: run budget exhausted (${refusal}); the request was not sent`, { ...entry, request: requestRecord });
  }

  usage.requests += 1;
  const target = new URL(`${base.pathname.replace(/\/+$/, '')}${url.pathname}${url.search}`, base.origin);
  const result: ExchangeResult = await forwardExchange({
    provider,
    target,
    agent,
    apiKey,
    clientRequest: request,
    clientResponse: response,
    request: forwarded,
    maxMeteredBytes: limits.meteredResponseBytes,
    maxStreamTextChars: limits.streamTextChars,
  });
  const metered = result.tokens ? meterResponse(usage, pricing, result.tokens, [result.model, forwarded.model]) : undefined;
  if (!metered) usage.unmetered += 1;
  if (result.failure) usage.failures += 1;
  await persist();
  await transcript.append({
    ...entry,
    upstream: target.origin,
    status: result.status,
    durationMs: Date.now() - started,
    firstByteMs: result.firstByteMs,
    request: { ...requestRecord, sentHeaders: transcriptHeaders(result.sentHeaders) },
    response: {
      headers: result.responseHeaders ? transcriptHeaders(result.responseHeaders) : undefined,
      ...(result.assembled ? { events: result.events, assembled: result.assembled } : { body: transcriptBody(result.body, limits.transcriptBodyChars) }),
      ...(result.streamError !== undefined ? { streamError: result.streamError } : {}),
    },
    usage: result.tokens ? { ...result.tokens, ...metered, model: result.model, reported: result.usage } : undefined,
    ...(result.meterProblem ? { meterProblem: result.meterProblem } : {}),
    ...(result.failure ? { failure: result.failure } : {}),
  });
}

export async function startModelGateway(options: ModelGatewayOptions): Promise<ModelGatewayHandle> {
  const limits = { ...modelGatewayLimits, ...(options.limits ?? {}) };
  const { provider, pricing, apiKey } = options;
  const base = new URL(options.upstream);
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new Error(`model upstream ${options.upstream}: only http and https are forwarded to`);
  mkdirSync(options.dir, { recursive: true });
  const usagePath = join(options.dir, 'usage.json');
  const usage = loadUsage(usagePath, provider);
  const transcript = await ModelTranscript.open(options.transcriptPath ?? join(options.dir, 'transcript.jsonl'), [apiKey], limits.transcriptBytes);
  const agent = base.protocol === 'https:' ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });

  let persisting: Promise<void> = Promise.resolve();
  const persist = (): Promise<void> => {
    usage.updatedAt = new Date().toISOString();
    const text = JSON.stringify(usage);
    const write = () => writeFileAtomic(usagePath, text);
    persisting = persisting.then(write, write);
    return persisting;
  };

  const budgetRefusal = async (): Promise<string | undefined> =>
    'left' in options.budget ? modelBudgetRefusal(usage, options.budget.left) : await options.budget.check(structuredClone(usage));

  const gateway: ModelGatewayState = { provider, pricing, apiKey, limits, base, agent, usage, transcript, persist, budgetRefusal };
  const server = http.createServer((request, response) => {
    const work = handle(gateway, request, response).catch((error: Error) => {
      // A fault of the gateway itself: the client gets an error in its provider's shape, the key never.
      if (!response.headersSent && !response.destroyed) {
        const message = `tarmac: the model gateway failed: ${error.message}`;
        const failed = gatewayError(provider, 'upstream', apiKey ? message.split(apiKey).join('[key removed]') : message);
        response.writeHead(failed.status, failed.headers).end(failed.body);
      } else response.destroy();
    });
    inFlight.add(work);
    void work.finally(() => inFlight.delete(work));
  });
  // Clients keep connections open between turns; a server that closes first races them.
  server.keepAliveTimeout = 120_000;
  server.headersTimeout = 130_000;
  server.requestTimeout = 0;
  const inFlight = new Set<Promise<void>>();
  const sockets = new Set<Socket>();

  const socket = await serveHttpPrivately(options.socketKey ?? options.dir, options.socketName ?? 'model.sock', containerUser(), server, sockets);

  return {
    socketPath: socket.socketPath,
    socketDir: socket.socketDir,
    usage: () => structuredClone(usage),
    close: async () => {
      for (const connection of sockets) connection.destroy();
      await socket.close();
      await Promise.allSettled([...inFlight]);
      await persisting.catch(() => undefined);
      await transcript.flush();
      agent.destroy();
    },
  };
}
