import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import tls from 'node:tls';
import { promisify } from 'node:util';
import { startEgressGateway, type EgressConnection, type EgressGatewayHandle } from '../../activities/gateways/egress-gateway';
import { freePort } from '../../infra/ports';
import { npmRegistry } from '../helpers/registries';

/**
 * The egress gateway with real parts: the real resolver, the machine's real npm registry (its
 * host read at run time from `npm config get registry`, never written here), real TLS through the
 * tunnel, real npm through the image's forwarder. This machine's TLS is intercepted by a proxy whose
 * CA is in the system bundle, which the clients are given.
 */

const caFile = '/etc/ssl/certs/ca-certificates.crt';
const forwarder = resolve(__dirname, '../../images/shared/tarmac-forward');
const run = promisify(execFile);

interface Answer {
  status: number;
  body: string;
}

/** A response's status and body, once it has ended. */
function answerOf(response: http.IncomingMessage): Promise<Answer> {
  return new Promise((done, fail) => {
    let body = '';
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => (body += chunk));
    response.on('end', () => done({ status: response.statusCode ?? 0, body }));
    response.on('error', fail);
  });
}

/** CONNECT through the gateway's socket: the status, and the socket to speak through when it is 200. */
function connectThrough(socketPath: string, authority: string): Promise<{ status: number; socket: Socket; head: Buffer }> {
  return new Promise((done, fail) => {
    const request = http.request({ socketPath, method: 'CONNECT', path: authority });
    request.on('connect', (response: http.IncomingMessage, socket: Socket, head: Buffer) => done({ status: response.statusCode ?? 0, socket, head }));
    request.on('error', fail);
    request.end();
  });
}

/** A CONNECT the gateway answers itself (a refusal): its status and one-line body. */
async function connectAnswer(socketPath: string, authority: string): Promise<Answer> {
  const { status, socket, head } = await connectThrough(socketPath, authority);
  const chunks = [head];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  await new Promise((done) => socket.on('close', done));
  return { status, body: Buffer.concat(chunks).toString() };
}

/** GET https://host/path through a CONNECT tunnel, TLS end to end with the registry. */
async function httpsThrough(socketPath: string, host: string, path: string): Promise<Answer> {
  const { status, socket } = await connectThrough(socketPath, `${host}:443`);
  assert.equal(status, 200, `the tunnel to ${host} opens`);
  const secure = tls.connect({ socket, servername: host, ca: readFileSync(caFile) });
  return await new Promise((done, fail) => {
    const request = https.request({ host, path, createConnection: () => secure, headers: { accept: 'application/json', connection: 'close' } }, (response) =>
      done(answerOf(response)),
    );
    request.on('error', fail);
    request.end();
  });
}

/** A plain proxy request (absolute URI) through the gateway's socket. */
function proxyRequest(socketPath: string, url: string): Promise<Answer> {
  return new Promise((done, fail) => {
    const request = http.request({ socketPath, path: url, headers: { host: new URL(url).host } }, (response) => done(answerOf(response)));
    request.on('error', fail);
    request.end();
  });
}

async function waitFor<T>(what: string, probe: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 50));
  }
}

const recorded = (gateway: EgressGatewayHandle, match: (entry: EgressConnection) => boolean) => gateway.record().find(match);

describe('egress gateway (real resolver, real registry)', { timeout: 180_000 }, () => {
  let registry: URL;
  let host: string;
  let dir: string;
  let recordPath: string;
  let gateway: EgressGatewayHandle;
  const children: ChildProcess[] = [];
  const extra: EgressGatewayHandle[] = [];

  before(async () => {
    registry = new URL(npmRegistry().url);
    host = registry.hostname;
    dir = mkdtempSync(join(tmpdir(), 'tarmac-egress-e2e-'));
    recordPath = join(dir, 'data', 'egress.jsonl');
    // localhost is on the list so that the test shows the address check refusing it.
    gateway = await startEgressGateway({ dir: join(dir, 'gateway'), allow: [host, 'localhost'], recordPath });
  });
  after(async () => {
    for (const child of children) child.kill('SIGTERM');
    for (const handle of extra) await handle.close();
    await gateway.close();
  });

  it('tunnels HTTPS to an allowed registry host and records it with its bytes', async () => {
    const answer = await httpsThrough(gateway.socketPath, host, new URL('left-pad', registry).pathname);
    assert.equal(answer.status, 200);
    assert.equal((JSON.parse(answer.body) as { name: string }).name, 'left-pad');
    const entry = await waitFor("the tunnel's record", () => recorded(gateway, (item) => item.host === host && item.kind === 'tunnel' && item.allowed));
    assert.equal(entry.port, 443);
    assert.equal(entry.status, 200);
    assert.ok(entry.bytesUp > 0 && entry.bytesDown > answer.body.length, `bytes counted both ways (${entry.bytesUp} up, ${entry.bytesDown} down)`);
    assert.ok(entry.address && !entry.address.startsWith('127.'), 'connected to the address it checked');
    assert.ok(Date.parse(entry.endedAt) >= Date.parse(entry.startedAt));
  });

  it('refuses a host off the allow-list with 403 naming it, and records the refusal', async () => {
    const answer = await connectAnswer(gateway.socketPath, 'example.com:443');
    assert.equal(answer.status, 403);
    assert.equal(answer.body, 'tarmac egress gateway: refused: example.com is not on the allow-list\n');
    const entry = recorded(gateway, (item) => item.host === 'example.com');
    assert.deepEqual(entry && { allowed: entry.allowed, reason: entry.reason, status: entry.status, bytesUp: entry.bytesUp }, {
      allowed: false,
      reason: 'example.com is not on the allow-list',
      status: 403,
      bytesUp: 0,
    });
  });

  it('refuses IP literals, a name that resolves to loopback, and other ports', async () => {
    const cases: { target: string; reason: RegExp }[] = [
      { target: '127.0.0.1:443', reason: /127\.0\.0\.1 is an IP address/ },
      { target: '2130706433:443', reason: /2130706433 is an IP address/ },
      { target: '[::1]:443', reason: /\[::1\] is an IP address/ },
      { target: 'localhost:443', reason: /localhost resolves to (127\.0\.0\.1|::1), a loopback address/ },
      { target: `${host}:22`, reason: new RegExp(`${host.replace(/\./g, '\\.')}: port 22 is not allowed`) },
    ];
    for (const { target, reason } of cases) {
      const answer = await connectAnswer(gateway.socketPath, target);
      assert.equal(answer.status, 403, target);
      assert.match(answer.body, reason, target);
    }
    const refused = gateway.record().filter((entry) => !entry.allowed);
    for (const name of ['127.0.0.1', '2130706433', '[::1]', 'localhost'])
      assert.ok(
        refused.some((entry) => entry.host === name && entry.status === 403),
        `${name} recorded as refused`,
      );
    assert.ok(
      refused.some((entry) => entry.host === host && entry.port === 22),
      'port 22 recorded as refused',
    );
    assert.match(refused.find((entry) => entry.host === 'localhost')?.address ?? '', /^(127\.0\.0\.1|::1)$/, 'the loopback address is recorded');
  });

  it('refuses plain HTTP to a server on loopback, by address or by an allowed name, and never reaches it', async () => {
    let hits = 0;
    const local = http.createServer((_request, response) => {
      hits += 1;
      response.end('reached');
    });
    const port = await freePort();
    await new Promise<void>((done) => local.listen(port, '127.0.0.1', done));
    try {
      const byAddress = await proxyRequest(gateway.socketPath, `http://127.0.0.1:${port}/secret`);
      assert.equal(byAddress.status, 403);
      assert.match(byAddress.body, /^tarmac egress gateway: refused: 127\.0\.0\.1 is an IP address/);
      const byName = await proxyRequest(gateway.socketPath, 'http://localhost/secret');
      assert.equal(byName.status, 403);
      assert.match(byName.body, /localhost resolves to (127\.0\.0\.1|::1), a loopback address/);
      assert.equal(hits, 0, 'the local server was never reached');
    } finally {
      await new Promise((done) => local.close(done));
    }
  });

  it('forwards an absolute-URI plain HTTP request to an allowed host as the host answers it directly', async () => {
    const path = new URL('left-pad', registry).pathname;
    const direct = await new Promise<number>((done, fail) =>
      http.get({ host, port: 80, path }, (response) => (response.resume(), done(response.statusCode ?? 0))).on('error', fail),
    );
    const through = await proxyRequest(gateway.socketPath, `http://${host}${path}`);
    assert.equal(through.status, direct);
    const entry = await waitFor("the request's record", () => recorded(gateway, (item) => item.kind === 'http' && item.host === host));
    assert.deepEqual({ allowed: entry.allowed, port: entry.port, status: entry.status }, { allowed: true, port: 80, status: direct });
    assert.equal(entry.bytesDown, Buffer.byteLength(through.body));
  });

  it('answers 400 to a request that is not a proxy request', async () => {
    const answer = await new Promise<Answer>((done, fail) => {
      http.get({ socketPath: gateway.socketPath, path: '/left-pad', headers: { host } }, (response) => done(answerOf(response))).on('error', fail);
    });
    assert.equal(answer.status, 400);
    assert.match(answer.body, /is not a proxy request/);
  });

  it("serves npm through the image's forwarder with HTTPS_PROXY, and records the registry", async () => {
    const port = await freePort();
    const ready = join(dir, 'forward.ready');
    const child = spawn(process.execPath, [forwarder, '--ready-file', ready], {
      env: { TARMAC_MODEL_SOCKET: gateway.socketPath, TARMAC_MODEL_PORT: String(port) },
      stdio: 'ignore',
    });
    children.push(child);
    await waitFor('the forwarder', () => (existsSync(ready) ? true : undefined));
    const before = gateway.record().filter((entry) => entry.host === host && entry.kind === 'tunnel' && entry.allowed).length;
    const home = mkdtempSync(join(dir, 'home-'));
    const proxy = `http://127.0.0.1:${port}`;
    const { stdout } = await run('npm', ['view', 'left-pad', 'version', '--registry', registry.href, '--prefer-online'], {
      env: {
        PATH: process.env.PATH,
        HOME: home,
        HTTPS_PROXY: proxy,
        HTTP_PROXY: proxy,
        NO_PROXY: '',
        npm_config_cafile: caFile,
        npm_config_cache: join(home, 'cache'),
        npm_config_update_notifier: 'false',
      },
      timeout: 120_000,
    });
    assert.match(stdout.trim(), /^[0-9]+\.[0-9]+\.[0-9]+$/);
    await waitFor("npm's tunnel in the record", () =>
      gateway.record().filter((entry) => entry.host === host && entry.kind === 'tunnel' && entry.allowed && entry.bytesDown > 0).length > before
        ? true
        : undefined,
    );
  });

  it('appends every connection to the JSONL record as it ends', async () => {
    await waitFor('the record file', () => (existsSync(recordPath) ? true : undefined));
    const fromFile = () =>
      readFileSync(recordPath, 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as EgressConnection);
    await waitFor('the file to hold every entry', () => (fromFile().length === gateway.record().length ? true : undefined));
    assert.deepEqual(fromFile(), gateway.record());
  });

  it('refuses a name when any of its addresses is not public (DNS rebinding)', async () => {
    const rebound = await startEgressGateway({ dir: join(dir, 'rebound'), allow: ['mirror.example.com'], resolve: async () => ['203.0.113.80', '10.0.0.7'] });
    extra.push(rebound);
    const answer = await connectAnswer(rebound.socketPath, 'mirror.example.com:443');
    assert.equal(answer.status, 403);
    assert.match(answer.body, /mirror\.example\.com resolves to 10\.0\.0\.7, a private address/);
    assert.equal(rebound.record()[0]?.address, '10.0.0.7');
  });

  it('caps open connections, closes idle tunnels, and cuts what is open when closed', async () => {
    const capped = await startEgressGateway({ dir: join(dir, 'capped'), allow: [host], limits: { connections: 1 }, idleTimeoutMs: 600 });
    const first = await connectThrough(capped.socketPath, `${host}:443`);
    assert.equal(first.status, 200);
    const second = await connectAnswer(capped.socketPath, `${host}:443`);
    assert.equal(second.status, 503);
    assert.match(second.body, /1 connections open, its limit/);
    const openedAt = Date.now();
    await new Promise((done) => first.socket.on('close', done));
    const idleFor = Date.now() - openedAt;
    assert.ok(idleFor >= 400 && idleFor < 5_000, `the idle tunnel was closed by the gateway after ${idleFor} ms`);
    const third = await connectThrough(capped.socketPath, `${host}:443`);
    assert.equal(third.status, 200, 'the slot is free again');
    const socketPath = capped.socketPath;
    const cut = new Promise((done) => third.socket.on('close', done));
    await capped.close();
    await cut;
    assert.equal(existsSync(socketPath), false, 'the socket is removed');
    assert.deepEqual(
      capped.record().map((entry) => [entry.status, entry.allowed]),
      [
        [503, false],
        [200, true],
        [200, true],
      ],
    );
  });

  it('answers 431 to a request head over the cap', async () => {
    const small = await startEgressGateway({ dir: join(dir, 'small'), allow: [host], limits: { headBytes: 2048 } });
    extra.push(small);
    const status = await new Promise<number>((done, fail) => {
      http
        .get(
          { socketPath: small.socketPath, path: `http://${host}/`, headers: { host, 'x-filler': 'a'.repeat(4096) } },
          (response) => (response.resume(), done(response.statusCode ?? 0)),
        )
        .on('error', fail);
    });
    assert.equal(status, 431);
  });
});
