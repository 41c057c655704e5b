import { lookup } from 'node:dns/promises';
import { appendFile, mkdir } from 'node:fs/promises';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { dirname } from 'node:path';
import { addressDecision, egressDecision, splitAuthority } from '../../policies/egress';
import { absoluteHttpTarget, answerResponse, answerSocket, connectFirst, relayRequest, relayTunnel } from './egress-relay';
import { containerUser } from '../git/git';
import { serveHttpPrivately } from './private-socket';

/**
 * The egress gateway: an environment setup's only way out (its container has network `none`).
 * An HTTP proxy on a unix socket that the image's forwarder puts on the container's loopback, so
 * that `HTTP_PROXY`/`HTTPS_PROXY` point at it. It
 *
 * - tunnels `CONNECT host:port` (HTTPS) and forwards absolute-URI plain HTTP (`GET http://host/…`,
 *   apt-style mirrors), and answers 400 to anything else;
 * - lets through only names on the allow-list, on ports 443 and 80 (policies/egress.ts);
 * - resolves each name once, refuses it when any address is not public (DNS rebinding onto the
 *   worker's loopback or network), and connects to the address it checked, never to the name;
 * - records every connection, allowed or refused, with the bytes each way.
 *
 * It adds nothing of the worker's: no credentials, no headers, nothing read from its environment.
 */

const egressGatewayLimits = {
  /** Tunnels and forwarded requests open at once; one more is answered 503. */
  connections: 256,
  /** The request line and headers, in bytes; more is answered 431 by Node's parser. */
  headBytes: 16 * 1024,
  /** Connections recorded; past this the gateway answers 503, so the record stays complete. */
  records: 100_000,
};

export interface EgressConnection {
  /** `tunnel` for CONNECT, `http` for a forwarded absolute-URI request. */
  kind: 'tunnel' | 'http';
  /** The name asked for, normalised when it was a valid name (as sent, up to 255 characters, when not). */
  host: string;
  /** 0 when the request named no port. */
  port: number;
  /** Did the policy let it through? A connection that then failed is allowed with an `error`. */
  allowed: boolean;
  /** Why it was refused. */
  reason?: string;
  /** The address connected to, or the one that made it refused. */
  address?: string;
  /** What the client was answered: 200 for an open tunnel, the upstream's status for HTTP, or the refusal's. */
  status: number;
  /** Why an allowed connection failed (unresolvable, unreachable, timed out). */
  error?: string;
  /** Bytes from the setup to the host (a tunnel's raw bytes, an HTTP request's body). */
  bytesUp: number;
  /** Bytes from the host to the setup (a tunnel's raw bytes, an HTTP response's body). */
  bytesDown: number;
  startedAt: string;
  endedAt: string;
}

interface EgressGatewayOptions {
  /** Names the socket's directory (listenPrivately): the same `dir` finds the same socket after a restart. */
  dir: string;
  /** The socket's file name (default `egress.sock`). */
  socketName?: string;
  /** The setup's allow-list, as parsed and narrowed by policies/egress.ts. */
  allow: readonly string[];
  /** Where each connection is appended as a JSON line when it ends (default: kept in memory only). */
  recordPath?: string;
  /** Every address of a name (default: the system resolver, `dns.lookup` with `all`). */
  resolve?: (host: string) => Promise<string[]>;
  /** How long connecting to an address may take (default 10 s); the next address is tried after. */
  connectTimeoutMs?: number;
  /** A tunnel or forwarded request with no bytes either way for this long is closed (default 5 min). */
  idleTimeoutMs?: number;
  /** Overrides of `egressGatewayLimits`. */
  limits?: Partial<typeof egressGatewayLimits>;
}

export interface EgressGatewayHandle {
  socketPath: string;
  /** The directory holding the socket: mount it (not the socket file) so a re-created socket is seen. */
  socketDir: string;
  /** Every connection so far, in the order they ended. */
  record(): EgressConnection[];
  /** Stops listening, cuts open tunnels and requests, removes the socket, and waits for the record to be written. */
  close(): Promise<void>;
}

/** A connection's record before it ends. */
type Draft = Omit<EgressConnection, 'endedAt'>;

type Admission = { ok: true; host: string; addresses: string[] } | { ok: false; status: number; reason: string; allowed?: boolean; address?: string };

const defaultResolve = async (host: string): Promise<string[]> => (await lookup(host, { all: true, order: 'verbatim' })).map((entry) => entry.address);

export async function startEgressGateway(options: EgressGatewayOptions): Promise<EgressGatewayHandle> {
  const limits = { ...egressGatewayLimits, ...(options.limits ?? {}) };
  const resolveHost = options.resolve ?? defaultResolve;
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  const idleTimeoutMs = options.idleTimeoutMs ?? 5 * 60_000;
  const allow = [...options.allow];
  const { recordPath } = options;
  if (recordPath) await mkdir(dirname(recordPath), { recursive: true });

  const ledger = new EgressLedger(limits, recordPath);
  let closed = false;
  const sockets = new Set<Socket>();
  const inFlight = new Set<Promise<void>>();
  const finish = (entry: Draft) => ledger.finish(entry);

  /** Admits and connects, or answers and records why not; the open connection to a checked address otherwise. */
  async function openUpstream(
    base: Pick<EgressConnection, 'kind' | 'host' | 'port' | 'startedAt'>,
    refuse: (status: number, text: string) => void,
  ): Promise<{ upstream: Socket; entry: Draft; release: () => void } | undefined> {
    const slot = ledger.takeSlot();
    if ('refused' in slot) {
      refuse(slot.refused.status, refusalText(slot.refused));
      return void finish(refusal(base, slot.refused));
    }
    const admission = await admit(base.host, base.port === 0 ? undefined : base.port, allow, resolveHost);
    if (!admission.ok) {
      slot.release();
      refuse(admission.status, refusalText(admission));
      return void finish(refusal(base, admission));
    }
    const { port } = base;
    const connected = await connectFirst(admission.addresses, port, connectTimeoutMs);
    const entry: Draft = { ...base, host: admission.host, allowed: true, address: connected.address, status: 0, bytesUp: 0, bytesDown: 0 };
    if ('error' in connected || closed) {
      if ('socket' in connected) connected.socket.destroy();
      const error = 'error' in connected ? connected.error : 'the gateway closed first';
      slot.release();
      refuse(502, `tarmac egress gateway: cannot reach ${admission.host}:${port}: ${error}`);
      return void finish({ ...entry, status: 502, error });
    }
    sockets.add(connected.socket);
    return { upstream: connected.socket, entry, release: slot.release };
  }

  async function tunnel(request: IncomingMessage, client: Socket, head: Buffer): Promise<void> {
    const target = splitAuthority(request.url ?? '');
    client.on('error', () => undefined);
    const base = { kind: 'tunnel' as const, host: target.host.slice(0, 255), port: target.port ?? 0, startedAt: new Date().toISOString() };
    const opened = await openUpstream(base, (status, text) => answerSocket(client, status, text));
    if (!opened) return;
    const { upstream, entry, release } = opened;
    entry.status = 200;
    await relayTunnel({ client, upstream, head, idleTimeoutMs, counts: entry });
    release();
    sockets.delete(upstream);
    finish(entry);
  }

  async function forward(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const startedAt = new Date().toISOString();
    const target = absoluteHttpTarget(request.url);
    if (!target) {
      request.resume();
      const hint = /^https:\/\//i.test(request.url ?? '') ? 'use CONNECT for https' : 'send CONNECT host:443 or an absolute http:// URI';
      answerResponse(response, 400, `tarmac egress gateway: ${request.method} ${(request.url ?? '').slice(0, 200)} is not a proxy request (${hint})`);
      // Not a connection anywhere: recorded (while there is room) so that the record shows what the setup tried.
      if (!ledger.takeRecord()) return;
      return finish({
        kind: 'http',
        host: String(request.headers.host ?? '').slice(0, 255),
        port: 0,
        allowed: false,
        reason: 'not a proxy request',
        status: 400,
        bytesUp: 0,
        bytesDown: 0,
        startedAt,
      });
    }
    const base = { kind: 'http' as const, host: target.hostname.slice(0, 255), port: target.port === '' ? 80 : Number(target.port), startedAt };
    const opened = await openUpstream(base, (status, text) => {
      request.resume();
      answerResponse(response, status, text);
    });
    if (!opened) return;
    const { upstream, entry, release } = opened;
    await relayRequest({ request, response, upstream, target, idleTimeoutMs, counts: entry });
    release();
    sockets.delete(upstream);
    finish(entry);
  }

  const track = (work: Promise<void>) => {
    inFlight.add(work);
    void work.finally(() => inFlight.delete(work));
  };
  const server = http.createServer({ maxHeaderSize: limits.headBytes }, (request, response) => {
    track(forward(request, response).catch(() => void response.destroy()));
  });
  server.on('connect', (request: IncomingMessage, client: Socket, head: Buffer) => {
    track(tunnel(request, client, head).catch(() => void client.destroy()));
  });
  // A head that trickles in is not a way to hold a connection.
  server.headersTimeout = 30_000;

  const socket = await serveHttpPrivately(options.dir, options.socketName ?? 'egress.sock', containerUser(), server, sockets);

  return {
    socketPath: socket.socketPath,
    socketDir: socket.socketDir,
    record: () => ledger.entries(),
    close: async () => {
      closed = true;
      const stopping = socket.close();
      for (const connection of sockets) connection.destroy();
      await stopping;
      await Promise.allSettled([...inFlight]);
      await ledger.written();
    },
  };
}

/**
 * The gateway's record and its bounds: connections recorded (at most `records`) and open (at most
 * `connections`), each entry appended to the record file as it ends.
 */
class EgressLedger {
  readonly #entries: EgressConnection[] = [];
  #taken = 0;
  #open = 0;
  #writing: Promise<void> = Promise.resolve();
  #writeError: Error | undefined;

  constructor(
    private readonly limits: typeof egressGatewayLimits,
    private readonly recordPath: string | undefined,
  ) {}

  finish(entry: Draft): void {
    const done: EgressConnection = { ...entry, endedAt: new Date().toISOString() };
    this.#entries.push(done);
    const { recordPath } = this;
    if (!recordPath) return;
    const line = `${JSON.stringify(done)}\n`;
    // Appends are chained so lines never interleave; the first failure is reported by close().
    this.#writing = this.#writing.then(() => appendFile(recordPath, line)).catch((error: Error) => void (this.#writeError ??= error));
  }

  /** Room for one more record (not a connection); false when the record is full. */
  takeRecord(): boolean {
    if (this.#taken >= this.limits.records) return false;
    this.#taken += 1;
    return true;
  }

  /**
   * Takes a connection slot, synchronously (before any await, so concurrent requests cannot all pass
   * the check); the answer is a refusal when none is free, else the function that gives it back once.
   */
  takeSlot(): { refused: Extract<Admission, { ok: false }> } | { release: () => void } {
    const { limits } = this;
    if (this.#taken >= limits.records)
      return { refused: { ok: false, status: 503, reason: `the egress gateway has recorded ${limits.records} connections, its limit` } };
    this.#taken += 1;
    if (this.#open >= limits.connections)
      return { refused: { ok: false, status: 503, reason: `the egress gateway has ${limits.connections} connections open, its limit` } };
    this.#open += 1;
    let released = false;
    return {
      release: () => {
        if (!released) this.#open -= 1;
        released = true;
      },
    };
  }

  entries(): EgressConnection[] {
    return structuredClone(this.#entries);
  }

  /** Waits for the record's lines to be written; the first failure is thrown. */
  async written(): Promise<void> {
    await this.#writing;
    if (this.#writeError) throw new Error(`the egress record ${this.recordPath} could not be written: ${this.#writeError.message}`);
  }
}

/** The checks before any byte goes out: the policy on the name, then every address it resolves to. */
async function admit(host: string, port: number | undefined, allow: string[], resolveHost: (host: string) => Promise<string[]>): Promise<Admission> {
  const decision = egressDecision({ host, port, allow });
  if (!decision.allow) return { ok: false, status: 403, reason: decision.reason };
  let addresses: string[];
  try {
    addresses = await resolveHost(decision.host);
  } catch (error) {
    return {
      ok: false,
      status: 502,
      allowed: true,
      reason: `${decision.host} could not be resolved (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    };
  }
  if (addresses.length === 0) return { ok: false, status: 502, allowed: true, reason: `${decision.host} resolved to no address` };
  for (const address of addresses) {
    const checked = addressDecision(address, decision.host);
    if (!checked.allow) return { ok: false, status: 403, reason: checked.reason, address };
  }
  return { ok: true, host: decision.host, addresses };
}

/** The record of a refusal, or of a failure before any connection (allowed, with the failure as `error`). */
function refusal(base: Pick<EgressConnection, 'kind' | 'host' | 'port' | 'startedAt'>, admission: Extract<Admission, { ok: false }>): Draft {
  return {
    ...base,
    allowed: admission.allowed === true,
    ...(admission.allowed ? { error: admission.reason } : { reason: admission.reason }),
    ...(admission.address ? { address: admission.address } : {}),
    status: admission.status,
    bytesUp: 0,
    bytesDown: 0,
  };
}

const refusalText = (admission: Extract<Admission, { ok: false }>) =>
  `tarmac egress gateway: ${admission.status === 403 ? 'refused: ' : ''}${admission.reason}`;
