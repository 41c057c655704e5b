import type { IncomingMessage, ServerResponse } from 'node:http';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';

/** A request the scripted model cannot answer: the status and message go back in the protocol's error shape. */
export class RequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'RequestError';
  }
}

const maxBodyBytes = 64 * 1024 * 1024;

function decoded(body: Buffer, encoding: string | undefined): Buffer {
  switch ((encoding ?? 'identity').toLowerCase()) {
    case 'identity':
      return body;
    case 'gzip':
      return gunzipSync(body);
    case 'deflate':
      return inflateSync(body);
    case 'br':
      return brotliDecompressSync(body);
    default:
      throw new RequestError(415, `scripted model: request content-encoding "${encoding}" is not supported (identity, gzip, deflate, br)`);
  }
}

/** Reads a request body as JSON (an empty body reads as `undefined`). */
export async function readJson(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > maxBodyBytes) throw new RequestError(413, `scripted model: request body over ${maxBodyBytes} bytes`);
    chunks.push(chunk as Buffer);
  }
  if (size === 0) return undefined;
  const text = decoded(Buffer.concat(chunks), request.headers['content-encoding']).toString('utf8');
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new RequestError(400, `scripted model: request body is not JSON: ${(error as Error).message}`);
  }
}

export function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

/** Server-sent events as the providers send them: `event:` (when named) and one `data:` line per event. */
export function openEventStream(response: ServerResponse): { event(name: string | undefined, data: unknown): void; raw(line: string): void; end(): void } {
  response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
  return {
    event(name, data) {
      response.write(`${name === undefined ? '' : `event: ${name}\n`}data: ${JSON.stringify(data)}\n\n`);
    },
    raw(line) {
      response.write(`${line}\n\n`);
    },
    end() {
      response.end();
    },
  };
}

/** Splits a string into at most `parts` pieces, so clients see real incremental deltas. */
export function pieces(text: string, parts = 3): string[] {
  if (text.length === 0) return [];
  const size = Math.ceil(text.length / parts);
  const out: string[] = [];
  for (let start = 0; start < text.length; start += size) out.push(text.slice(start, start + size));
  return out;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Text of string content or of `{ type: 'text' | 'input_text', text }` parts. */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((part): part is { text: string } => isObject(part) && typeof part.text === 'string' && (part.type === 'text' || part.type === 'input_text'))
    .map((part) => part.text)
    .join('\n');
}

/** A field of the request body, checked: the error names it the way the provider's docs do. */
export function requireArray(body: Record<string, unknown>, field: string): unknown[] {
  const value = body[field];
  if (!Array.isArray(value)) throw new RequestError(400, `scripted model: ${field} must be an array`);
  return value;
}

export function bodyObject(body: unknown): Record<string, unknown> {
  if (!isObject(body)) throw new RequestError(400, 'scripted model: the request body must be a JSON object');
  return body;
}

/** A rough token count (4 characters a token) for count_tokens: nothing meters it. */
export function estimateTokens(value: unknown): number {
  return Math.max(1, Math.ceil(JSON.stringify(value ?? '').length / 4));
}
