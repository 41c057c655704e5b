import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { anthropicMessages } from './anthropic-messages';
import { resolveTurn, type RequestView, type Usage } from './conversation';
import { openAiChat } from './openai-chat';
import { openAiResponses } from './openai-responses';
import type { Protocol } from './protocol';
import { loadScript, parseScript, type Script } from './script';
import { estimateTokens, RequestError, readJson, sendJson } from './wire';

export type ApiName = 'anthropic-messages' | 'openai-responses' | 'openai-chat';

/** Every request the endpoint saw, in order: what tests read ("the endpoint saw the earlier turns"). */
export interface RecordedRequest {
  /** 0-based arrival order. */
  index: number;
  method: string;
  /** The path without the query (`/v1/messages`). */
  path: string;
  /** The query string without `?` (`beta=true`), or ''. */
  query: string;
  /** As received, keys included: a gateway test checks what reached the upstream. */
  headers: IncomingHttpHeaders;
  body: unknown;
  api: ApiName | 'count-tokens' | 'models' | 'connectivity-check' | 'unknown';
  /**
   * `turn`: answered from the script; `side`: a side call (no tools declared: titles, summaries) answered
   * with the fixed side text; `refused`: the script has no answer (no conversation matches, no turn left,
   * undeclared tool); `served`: count_tokens or models; `error`: a malformed request; `not-found`: no such route.
   */
  outcome: 'turn' | 'side' | 'refused' | 'served' | 'error' | 'not-found';
  status: number;
  stream: boolean;
  model?: string;
  conversation?: string;
  /** 0-based index of the script turn answered (or asked for, when refused). */
  turn?: number;
  /** The usage reported in the answer. */
  usage?: Usage;
  /** Why the request was refused or failed. */
  message?: string;
}

interface ScriptedModelOptions {
  /** The script as data, or the path of a JSON script file; validated either way. */
  script: Script | string;
  /** Listen on this unix socket path (it must not exist; it is removed on close). */
  socketPath?: string;
  /** Listen on this TCP port of 127.0.0.1; 0 picks a free one. Default: 0 when no `socketPath` is given, else no TCP. */
  port?: number;
  /** Called with each request once answered (the CLI logs them). */
  onRequest?: (request: RecordedRequest) => void;
}

export interface ScriptedModel {
  /** `http://127.0.0.1:<port>` when listening on TCP. */
  url?: string;
  socketPath?: string;
  /** Live list of the requests seen so far. */
  requests: readonly RecordedRequest[];
  close(): Promise<void>;
}

const protocols: Record<string, { api: ApiName; protocol: Protocol }> = {
  '/v1/messages': { api: 'anthropic-messages', protocol: anthropicMessages },
  '/v1/responses': { api: 'openai-responses', protocol: openAiResponses },
  '/v1/chat/completions': { api: 'openai-chat', protocol: openAiChat },
};

type Answered = Omit<RecordedRequest, 'index' | 'method' | 'path' | 'query' | 'headers' | 'body'>;

function answerModelCall(script: Script, route: { api: ApiName; protocol: Protocol }, body: unknown, response: ServerResponse, responseId: string): Answered {
  let view: RequestView;
  try {
    view = route.protocol.read(body as Record<string, unknown>);
  } catch (error) {
    if (!(error instanceof RequestError)) throw error;
    route.protocol.error(response, error.status, error.message);
    return { api: route.api, outcome: 'error', status: error.status, stream: false, message: error.message };
  }
  const base = { api: route.api, stream: view.stream, model: view.model };
  const resolution = resolveTurn(script, view);
  if (resolution.kind === 'refused') {
    // 400, not 5xx: the CLIs retry server errors for minutes, but end the run within a second on a 400.
    route.protocol.error(response, 400, resolution.message);
    return { ...base, outcome: 'refused', status: 400, conversation: resolution.conversation, turn: resolution.turn, message: resolution.message };
  }
  try {
    route.protocol.reply(response, resolution.answer, view, responseId);
  } catch (error) {
    if (!(error instanceof RequestError)) throw error;
    route.protocol.error(response, error.status, error.message);
    return { ...base, outcome: 'error', status: error.status, message: error.message };
  }
  const where = resolution.kind === 'turn' ? { conversation: resolution.conversation, turn: resolution.turn } : {};
  return { ...base, ...where, outcome: resolution.kind, status: 200, usage: resolution.answer.usage };
}

function answerOther(method: string, path: string, headers: IncomingHttpHeaders, body: unknown, response: ServerResponse): Answered {
  const base = { stream: false };
  if (method === 'POST' && path === '/v1/messages/count_tokens') {
    sendJson(response, 200, { input_tokens: estimateTokens(body) });
    return { ...base, api: 'count-tokens', outcome: 'served', status: 200 };
  }
  if (method === 'GET' && path === '/v1/models') {
    const created = '2025-01-01T00:00:00Z';
    // One list, in the shape of whichever provider the client speaks.
    const anthropic = headers['anthropic-version'] !== undefined;
    sendJson(
      response,
      200,
      anthropic
        ? {
            data: [{ type: 'model', id: 'scripted-model', display_name: 'Scripted model', created_at: created }],
            has_more: false,
            first_id: 'scripted-model',
            last_id: 'scripted-model',
          }
        : { object: 'list', data: [{ id: 'scripted-model', object: 'model', created: Date.parse(created) / 1000, owned_by: 'tarmac' }] },
    );
    return { ...base, api: 'models', outcome: 'served', status: 200 };
  }
  if ((method === 'HEAD' || method === 'GET') && path === '/api/hello') {
    // Claude Code's connectivity check at start (skipped with CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1).
    sendJson(response, 200, {});
    return { ...base, api: 'connectivity-check', outcome: 'served', status: 200 };
  }
  const message = `scripted model: no route ${method} ${path}`;
  sendJson(response, 404, { type: 'error', error: { type: 'not_found_error', message } });
  return { ...base, api: 'unknown', outcome: 'not-found', status: 404, message };
}

function handler(script: Script, requests: RecordedRequest[], onRequest: ScriptedModelOptions['onRequest']) {
  return async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const index = requests.length;
    const [path = '/', query = ''] = (request.url ?? '/').split('?', 2);
    const method = request.method ?? 'GET';
    const seen = { index, method, path, query, headers: request.headers };
    // Reserve the slot now, so the order is the arrival order even when answers overlap.
    requests.push({ ...seen, body: undefined, api: 'unknown', outcome: 'error', status: 0, stream: false });
    let body: unknown;
    let result: Answered;
    try {
      body = await readJson(request);
      const route = method === 'POST' ? protocols[path] : undefined;
      const responseId = `scripted_${String(index).padStart(6, '0')}`;
      result = route ? answerModelCall(script, route, body, response, responseId) : answerOther(method, path, request.headers, body, response);
    } catch (error) {
      const status = error instanceof RequestError ? error.status : 500;
      const message = error instanceof Error ? error.message : String(error);
      if (!response.headersSent) sendJson(response, status, { error: { type: 'error', message } });
      else response.destroy();
      result = { api: 'unknown', outcome: 'error', status, stream: false, message };
    }
    const record: RecordedRequest = { ...seen, body, ...result };
    requests[index] = record;
    onRequest?.(record);
  };
}

function listen(server: Server, target: { port: number } | { path: string }): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    const done = () => {
      server.off('error', reject);
      resolve();
    };
    if ('path' in target) server.listen(target.path, done);
    else server.listen(target.port, '127.0.0.1', done);
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((error) => (error ? reject(error) : resolve()));
    server.closeAllConnections();
  });
}

/** Starts the scripted model endpoint on TCP loopback, a unix socket, or both. */
export async function startScriptedModel(options: ScriptedModelOptions): Promise<ScriptedModel> {
  const script = typeof options.script === 'string' ? loadScript(options.script) : parseScript(options.script);
  const requests: RecordedRequest[] = [];
  const handle = handler(script, requests, options.onRequest);
  const servers: Server[] = [];
  const result: ScriptedModel = { requests, close: async () => void (await Promise.all(servers.map(closeServer))) };
  try {
    if (options.socketPath !== undefined) {
      const server = createServer(handle);
      await listen(server, { path: options.socketPath });
      servers.push(server);
      result.socketPath = options.socketPath;
    }
    if (options.port !== undefined || options.socketPath === undefined) {
      const server = createServer(handle);
      await listen(server, { port: options.port ?? 0 });
      servers.push(server);
      const address = server.address();
      result.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    }
  } catch (error) {
    await result.close();
    throw error;
  }
  return result;
}
