import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import { createBrotliDecompress, createGunzip, createInflate, type Gunzip } from 'node:zlib';
import type { ModelProvider, TokenCounts } from '../../core/model-pricing';
import { clientHeaders, gatewayError, upstreamHeaders, type ForwardedRequest } from './model-protocol';
import { StreamMeter, usageOfBody } from './model-usage';

/** What one forwarded exchange amounted to. */
export interface ExchangeResult {
  status?: number;
  /** Upstream response headers (as received; the transcript removes what must go). */
  responseHeaders?: IncomingHttpHeaders;
  sentHeaders: http.OutgoingHttpHeaders;
  /** Milliseconds from the request to the first byte of the response body. */
  firstByteMs?: number;
  tokens?: TokenCounts;
  model?: string;
  /** The provider's usage object(s), as sent. */
  usage?: unknown;
  /** A non-streaming response body (decoded), kept up to the metering cap. */
  body?: Buffer;
  /** A streamed response rebuilt from its events. */
  assembled?: Record<string, unknown>;
  events?: number;
  /** An error event inside a stream. */
  streamError?: unknown;
  /** Why the exchange did not complete: the upstream failed, or the client went away. */
  failure?: { by: 'upstream' | 'client'; message: string };
  /** Why the usage could not be read (the response passed through all the same). */
  meterProblem?: string;
}

interface ExchangeInput {
  provider: ModelProvider;
  /** The upstream URL this request goes to (base + the request's path and query). */
  target: URL;
  agent: http.Agent;
  apiKey: string | undefined;
  clientRequest: IncomingMessage;
  clientResponse: ServerResponse;
  request: ForwardedRequest;
  /** Largest non-streaming body read for its usage. */
  maxMeteredBytes: number;
  /** Largest text rebuilt from a stream for the transcript. */
  maxStreamTextChars: number;
}

function decoder(encoding: string | undefined): Gunzip | ReturnType<typeof createBrotliDecompress> | undefined | 'unknown' {
  switch ((encoding ?? 'identity').trim().toLowerCase()) {
    case 'identity':
    case '':
      return undefined;
    case 'gzip':
    case 'x-gzip':
      return createGunzip();
    case 'deflate':
      return createInflate();
    case 'br':
      return createBrotliDecompress();
    default:
      return 'unknown';
  }
}

/**
 * Forwards one request to the upstream and its response back to the client as it
 * arrives — chunk by chunk, never buffered, with backpressure — while a copy of the
 * bytes goes to the meter. Resolves when the exchange is over, however it ended.
 */
export function forwardExchange(input: ExchangeInput): Promise<ExchangeResult> {
  const { provider, target, clientResponse: res, request } = input;
  const started = Date.now();
  const sentHeaders = upstreamHeaders(provider, input.clientRequest.headers, input.apiKey, request.body.length);
  const transport = target.protocol === 'https:' ? https : http;
  return new Promise<ExchangeResult>((resolve) => {
    const result: ExchangeResult = { sentHeaders };
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    const upstream = transport.request(target, { method: input.clientRequest.method, headers: sentHeaders, agent: input.agent });

    // The client went away before the response was complete: stop the upstream too.
    res.on('close', () => {
      if (res.writableFinished) return;
      result.failure ??= { by: 'client', message: 'the client closed the connection before the response was complete' };
      upstream.destroy();
    });

    let responded = false;
    upstream.on('error', (error) => {
      result.failure ??= { by: 'upstream', message: `the model upstream ${target.origin} failed: ${error.message}` };
      // Once a response has begun, its own close ends the exchange (with what was metered).
      if (responded) return;
      if (!res.headersSent && !res.destroyed) {
        const answer = gatewayError(provider, 'upstream', `tarmac: the model upstream ${target.origin} is unreachable (${error.message})`);
        result.status = answer.status;
        res.writeHead(answer.status, answer.headers).end(answer.body);
      }
      settle();
    });

    upstream.on('response', (response) => {
      responded = true;
      result.status = response.statusCode;
      result.responseHeaders = response.headers;
      res.writeHead(response.statusCode ?? 502, clientHeaders(response.headers));
      res.flushHeaders();

      const streamed = String(response.headers['content-type'] ?? '').includes('text/event-stream');
      const meter = streamed ? new StreamMeter(provider, input.maxStreamTextChars) : undefined;
      const bodyChunks: Buffer[] = [];
      let bodyBytes = 0;
      const toMeter = (chunk: Buffer) => {
        if (meter) return meter.push(chunk);
        bodyBytes += chunk.length;
        if (bodyBytes <= input.maxMeteredBytes) bodyChunks.push(chunk);
      };
      const decoding = decoder(response.headers['content-encoding']);
      if (decoding === 'unknown')
        result.meterProblem = `the response is encoded as "${String(response.headers['content-encoding'])}": its usage cannot be read`;
      const decoded = decoding && decoding !== 'unknown' ? decoding : undefined;
      const meterDone = new Promise<void>((done) => {
        if (!decoded) return done();
        decoded.on('data', toMeter);
        decoded.on('end', done);
        decoded.on('error', (error) => {
          result.meterProblem = `the response could not be decoded for metering: ${error.message}`;
          done();
        });
      });

      response.on('data', (chunk: Buffer) => {
        result.firstByteMs ??= Date.now() - started;
        if (!res.write(chunk)) response.pause();
        if (decoded) decoded.write(chunk);
        else if (decoding !== 'unknown') toMeter(chunk);
      });
      res.on('drain', () => response.resume());

      const finish = async (complete: boolean) => {
        if (decoded) decoded.end();
        await meterDone;
        if (meter) {
          const summary = meter.end();
          Object.assign(result, { tokens: summary.tokens, model: summary.model, usage: summary.usage, assembled: summary.assembled, events: summary.events });
          if (summary.error !== undefined) result.streamError = summary.error;
          if (summary.overflowed) result.meterProblem = 'an event of the stream was over the size limit: the rest was not read';
        } else {
          result.body = Buffer.concat(bodyChunks);
          if (bodyBytes > input.maxMeteredBytes) result.meterProblem = `the response body is over ${input.maxMeteredBytes} bytes: its usage was not read`;
          else if (complete) {
            try {
              Object.assign(result, usageOfBody(provider, JSON.parse(result.body.toString('utf8'))));
            } catch {
              // Not JSON (an HTML error page, say): there is no usage to read.
            }
          }
        }
        settle();
      };
      response.on('end', () => {
        res.end();
        void finish(true);
      });
      response.on('error', (error) => {
        result.failure ??= { by: 'upstream', message: `the model response failed mid-way: ${error.message}` };
      });
      response.on('close', () => {
        if (response.complete) return;
        result.failure ??= { by: 'upstream', message: 'the model upstream closed the connection mid-response' };
        res.destroy();
        void finish(false);
      });
    });

    upstream.end(request.body);
  });
}
