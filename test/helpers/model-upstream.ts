import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A small model provider for the model gateway's tests, on loopback: it speaks the
 * Anthropic Messages API and the OpenAI Chat Completions and Responses APIs, streaming
 * and not, with the usage the test asks for, and records every request it gets. A
 * stream can be held after its first event until the test releases it.
 */

export interface UpstreamUsage {
  input: number;
  output: number;
  cacheWrite?: number;
  cacheRead?: number;
  reasoning?: number;
}

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  json?: any;
}

export interface ModelUpstream {
  url: string;
  seen: SeenRequest[];
  /** The usage the next responses report. */
  usage: UpstreamUsage;
  /** The model the responses name (default: the request's). */
  answerModel?: string;
  /** While set, a stream stops after its first event until `release()`. */
  hold: boolean;
  release(): void;
  close(): Promise<void>;
}

const sse = (event: string | undefined, data: unknown) =>
  `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

export async function startModelUpstream(): Promise<ModelUpstream> {
  let releaseHold: () => void = () => undefined;
  let held = new Promise<void>((resolve) => (releaseHold = resolve));
  const state: ModelUpstream = {
    url: '',
    seen: [],
    usage: { input: 10, output: 5 },
    hold: false,
    release: () => {
      releaseHold();
      held = new Promise<void>((resolve) => (releaseHold = resolve));
    },
    close: async () => undefined,
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: any;
      try {
        json = body ? JSON.parse(body) : undefined;
      } catch {
        json = undefined;
      }
      state.seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, json });
      void answer(req.url ?? '', json, res);
    });
  });

  async function answer(url: string, json: any, res: import('node:http').ServerResponse): Promise<void> {
    const path = url.split('?')[0];
    const model = state.answerModel ?? json?.model ?? 'unknown';
    const usage = state.usage;
    const stream = json?.stream === true;
    const wait = async () => {
      if (state.hold) await held;
    };
    if (path === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: [{ id: 'claude-sonnet-4-5' }] }));
      return;
    }
    if (path === '/v1/messages') {
      const anthropicUsage = {
        input_tokens: usage.input,
        output_tokens: usage.output,
        cache_creation_input_tokens: usage.cacheWrite ?? 0,
        cache_read_input_tokens: usage.cacheRead ?? 0,
      };
      if (!stream) {
        res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_upstream' });
        res.end(
          JSON.stringify({
            id: 'msg_1',
            type: 'message',
            role: 'assistant',
            model,
            content: [{ type: 'text', text: 'hello from upstream' }],
            stop_reason: 'end_turn',
            usage: anthropicUsage,
          }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write(
        sse('message_start', {
          type: 'message_start',
          message: { id: 'msg_1', type: 'message', role: 'assistant', model, content: [], usage: { ...anthropicUsage, output_tokens: 1 } },
        }),
      );
      await wait();
      res.write(sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }));
      for (const piece of ['hello ', 'from ', 'the stream'])
        res.write(sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } }));
      res.write(sse('content_block_stop', { type: 'content_block_stop', index: 0 }));
      res.write(
        sse('content_block_start', { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: {} } }),
      );
      for (const piece of ['{"path":', '"a.txt"}'])
        res.write(sse('content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: piece } }));
      res.write(sse('content_block_stop', { type: 'content_block_stop', index: 1 }));
      res.write(
        sse('message_delta', { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: usage.output } }),
      );
      res.end(sse('message_stop', { type: 'message_stop' }));
      return;
    }
    if (path === '/v1/chat/completions') {
      const chatUsage = {
        prompt_tokens: usage.input,
        completion_tokens: usage.output,
        total_tokens: usage.input + usage.output,
        prompt_tokens_details: { cached_tokens: usage.cacheRead ?? 0 },
        completion_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 },
      };
      if (!stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'chatcmpl-1',
            object: 'chat.completion',
            model,
            choices: [{ index: 0, message: { role: 'assistant', content: 'hello from chat' }, finish_reason: 'stop' }],
            usage: chatUsage,
          }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (choices: unknown[], extra: object = {}) => sse(undefined, { id: 'chatcmpl-1', object: 'chat.completion.chunk', model, choices, ...extra });
      res.write(chunk([{ index: 0, delta: { role: 'assistant', content: 'hello ' } }]));
      await wait();
      res.write(chunk([{ index: 0, delta: { content: 'from chat' } }]));
      res.write(
        chunk([{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":' } }] } }]),
      );
      res.write(chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '"a.txt"}' } }] }, finish_reason: 'tool_calls' }]));
      // Like the real API: usage only when the request asked for it.
      if (json?.stream_options?.include_usage === true) res.write(chunk([], { usage: chatUsage }));
      res.end(sse(undefined, '[DONE]'));
      return;
    }
    if (path === '/v1/responses') {
      const responsesUsage = {
        input_tokens: usage.input,
        input_tokens_details: { cached_tokens: usage.cacheRead ?? 0 },
        output_tokens: usage.output,
        output_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 },
        total_tokens: usage.input + usage.output,
      };
      const output = [{ type: 'message', id: 'msg_1', role: 'assistant', content: [{ type: 'output_text', text: 'hello from responses' }] }];
      const response = { id: 'resp_1', object: 'response', model, status: 'completed', output, usage: responsesUsage };
      if (!stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(response));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sse('response.created', { type: 'response.created', response: { ...response, status: 'in_progress', output: [], usage: null } }));
      await wait();
      for (const piece of ['hello ', 'from responses'])
        res.write(sse('response.output_text.delta', { type: 'response.output_text.delta', item_id: 'msg_1', output_index: 0, content_index: 0, delta: piece }));
      res.end(sse('response.completed', { type: 'response.completed', response }));
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `no route ${path}` } }));
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      state.release();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}

export interface GatewayReply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  json?: any;
  /** Body chunks with the time each arrived. */
  chunks: { at: number; text: string }[];
}

/**
 * Sends one request over a unix socket (or TCP when `socketPath` is a URL) and reads
 * the reply; `onChunk` sees every chunk as it arrives.
 */
export function sendTo(
  target: { socketPath: string } | { url: string },
  path: string,
  options: { method?: string; body?: unknown; headers?: Record<string, string>; onChunk?: (text: string) => void } = {},
): Promise<GatewayReply> {
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  const where = 'socketPath' in target ? { socketPath: target.socketPath } : { host: new URL(target.url).hostname, port: Number(new URL(target.url).port) };
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { ...where, path, method: options.method ?? (body ? 'POST' : 'GET'), headers: { 'content-type': 'application/json', ...(options.headers ?? {}) } },
      (res) => {
        const chunks: { at: number; text: string }[] = [];
        res.setEncoding('utf8');
        res.on('data', (text: string) => {
          chunks.push({ at: Date.now(), text });
          options.onChunk?.(text);
        });
        res.on('end', () => {
          const text = chunks.map((chunk) => chunk.text).join('');
          let json: any;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text, json, chunks });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
