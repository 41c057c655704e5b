import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import net, { type Socket } from 'node:net';

/**
 * The egress gateway's transport (activities/gateways/egress-gateway.ts decides and records): connecting to
 * an address that was checked, moving bytes both ways and counting them, and the gateway's own
 * short answers. Nothing here looks at names or policy.
 */

/** What a relay counts as it goes, into the connection's record. */
interface RelayCounts {
  bytesUp: number;
  bytesDown: number;
  /** The status the client got (a forwarded request's is the upstream's). */
  status: number;
  error?: string;
}

/** Headers that belong to one hop (RFC 9110 7.6.1) or to the proxy, plus those the Connection header names. */
export function endToEndHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const hop = new Set(['connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host']);
  for (const name of String(headers.connection ?? '').split(',')) hop.add(name.trim().toLowerCase());
  const kept: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !hop.has(name) && !name.startsWith('proxy-')) kept[name] = value;
  return kept;
}

/** A plain-text answer on a raw socket (a CONNECT's), then the socket is closed. */
export function answerSocket(socket: Socket, status: number, text: string): void {
  const body = `${text}\n`;
  const head = `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? ''}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n`;
  if (!socket.destroyed) socket.end(head + body);
}

/** A plain-text answer to a request, when nothing was sent yet (else the response is cut). */
export function answerResponse(response: ServerResponse, status: number, text: string): void {
  if (response.headersSent || response.destroyed) return void response.destroy();
  const body = `${text}\n`;
  response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' }).end(body);
}

/** Connects to one checked address, within `timeoutMs`. */
function connectTo(address: string, port: number, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: address, port });
    const timer = setTimeout(() => socket.destroy(new Error(`no connection within ${timeoutMs} ms`)), timeoutMs);
    const failed = (error: Error) => {
      clearTimeout(timer);
      reject(error);
    };
    socket.once('error', failed);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.removeListener('error', failed);
      // A later error closes the socket, and its users act on the close; unheard, it would end the worker.
      socket.on('error', () => undefined);
      resolve(socket);
    });
  });
}

/** The first of the checked addresses that answers; the last failure when none does. */
export async function connectFirst(
  addresses: string[],
  port: number,
  timeoutMs: number,
): Promise<{ socket: Socket; address: string } | { error: string; address: string }> {
  let failure = { error: 'no address', address: '' };
  for (const address of addresses) {
    try {
      return { socket: await connectTo(address, port, timeoutMs), address };
    } catch (error) {
      failure = { error: `${address}:${port}: ${(error as Error).message}`, address };
    }
  }
  return failure;
}

/** An absolute http:// request target, or undefined (origin-form, https://, or not a URL). */
export function absoluteHttpTarget(text: string | undefined): URL | undefined {
  if (!text || !/^http:\/\//i.test(text)) return undefined;
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

/** An upstream connection the setup stopped waiting for. */
function closeUnused(upstream: Socket, counts: RelayCounts): Promise<void> {
  upstream.destroy();
  counts.error = 'the setup closed its connection before the upstream was reached';
  return Promise.resolve();
}

/**
 * A CONNECT tunnel once the upstream is connected: answers 200, then pipes both ways until either
 * side closes or no byte moves for `idleTimeoutMs`. Resolves when both sockets are closed.
 */
export function relayTunnel(input: { client: Socket; upstream: Socket; head: Buffer; idleTimeoutMs: number; counts: RelayCounts }): Promise<void> {
  const { client, upstream, head, idleTimeoutMs, counts } = input;
  counts.bytesUp += head.length;
  // The setup gave up while the name was resolved and connected: its close has been and gone.
  if (client.destroyed) return closeUnused(upstream, counts);
  return new Promise<void>((done) => {
    let closes = 0;
    const ended = () => {
      closes += 1;
      if (closes === 2) done();
    };
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    // The upstream's close unpipes and pauses the client, whose own end would then never be read:
    // what is written still goes out, then the client is closed.
    upstream.on('close', () => client.end(() => client.destroy()));
    client.on('close', ended);
    upstream.on('close', ended);
    // A socket's timer restarts on bytes read or written, so a tunnel busy either way stays open.
    for (const socket of [client, upstream]) socket.setTimeout(idleTimeoutMs, () => (client.destroy(), upstream.destroy()));
    client.on('data', (chunk: Buffer) => void (counts.bytesUp += chunk.length));
    upstream.on('data', (chunk: Buffer) => void (counts.bytesDown += chunk.length));
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) upstream.write(head);
    client.pipe(upstream);
    upstream.pipe(client);
  });
}

/**
 * A plain HTTP request sent on the connected upstream (to the checked address: never to the name
 * again), its response streamed back without hop-by-hop or proxy headers. Resolves when the
 * client's response is closed; the upstream connection is closed then.
 */
export function relayRequest(input: {
  request: IncomingMessage;
  response: ServerResponse;
  upstream: Socket;
  target: URL;
  idleTimeoutMs: number;
  counts: RelayCounts;
}): Promise<void> {
  const { request, response, upstream, target, idleTimeoutMs, counts } = input;
  if (response.destroyed || request.socket.destroyed) return closeUnused(upstream, counts);
  return new Promise<void>((done) => {
    const outgoing = http.request({
      createConnection: () => upstream,
      method: request.method,
      path: `${target.pathname}${target.search}`,
      headers: { ...endToEndHeaders(request.headers), host: target.host },
      setHost: false,
      timeout: idleTimeoutMs,
    });
    outgoing.on('timeout', () => outgoing.destroy(new Error(`no bytes for ${idleTimeoutMs} ms`)));
    outgoing.on('error', (error) => {
      counts.error ??= error.message;
      if (counts.status === 0) counts.status = 502;
      answerResponse(response, 502, `tarmac egress gateway: ${target.host}: ${error.message}`);
    });
    outgoing.on('response', (incoming) => {
      counts.status = incoming.statusCode ?? 502;
      if (response.destroyed) return void incoming.destroy();
      response.writeHead(counts.status, endToEndHeaders(incoming.headers));
      incoming.on('data', (chunk: Buffer) => void (counts.bytesDown += chunk.length));
      incoming.pipe(response);
    });
    request.on('data', (chunk: Buffer) => void (counts.bytesUp += chunk.length));
    request.pipe(outgoing);
    response.on('close', () => {
      upstream.destroy();
      done();
    });
  });
}
