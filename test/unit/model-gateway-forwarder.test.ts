import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadPricing } from '../../core/node/recipes';
import { startModelGateway, type ModelGatewayHandle } from '../../activities/gateways/model-gateway';
import { startModelUpstream, type ModelUpstream } from '../helpers/model-upstream';

/**
 * The in-container forwarder and its `tarmac-run` wrapper, run on the host against a
 * real gateway (the container test, test/e2e/model-gateway-container.test.ts, runs them
 * where they live).
 */

const shared = resolve(__dirname, '../../images/shared');

function run(command: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const started = Date.now();
  return new Promise((done) => {
    const child = spawn(command[0]!, command.slice(1), { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env } });
    let stdout = '';
    let stderr = '';
    let exitedAt = 0;
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const guard = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('exit', () => (exitedAt = Date.now()));
    child.on('close', (code) => {
      clearTimeout(guard);
      done({ code, stdout, stderr, ms: exitedAt - started });
    });
  });
}

/** A free loopback port (bound, read, released). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

/** A client the wrapper runs: one streamed and one plain request to the forwarder, printed as JSON. */
const client = `
const http = require('node:http');
const port = Number(process.env.TARMAC_MODEL_PORT);
const send = (body) => new Promise((resolve, reject) => {
  const req = http.request({ host: '127.0.0.1', port, path: '/v1/messages', method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'sk-fake-in-container' } }, (res) => {
    let text = ''; let chunks = 0;
    res.on('data', (c) => { text += c; chunks += 1; });
    res.on('end', () => resolve({ status: res.statusCode, text, chunks }));
  });
  req.on('error', reject);
  req.end(JSON.stringify(body));
});
(async () => {
  const plain = await send({ model: 'claude-haiku-4-5', messages: [] });
  const streamed = await send({ model: 'claude-haiku-4-5', stream: true, messages: [] });
  console.log(JSON.stringify({ plain, streamed }));
})().catch((error) => { console.error(error.message); process.exit(1); });
`;

describe('tarmac-run and tarmac-forward (on the host)', { timeout: 60_000 }, () => {
  let upstream: ModelUpstream;
  let gateway: ModelGatewayHandle;
  before(async () => {
    upstream = await startModelUpstream();
    upstream.usage = { input: 11, output: 7 };
    gateway = await startModelGateway({
      dir: join(mkdtempSync(join(tmpdir(), 'tarmac-forward-')), 'model-gateway'),
      provider: 'anthropic',
      upstream: upstream.url,
      apiKey: 'sk-real-key-for-forwarder-test',
      budget: { left: { tokens: 10_000, costUsd: 1 } },
      pricing: loadPricing(),
    });
  });
  after(async () => {
    await gateway?.close();
    await upstream?.close();
  });

  it('starts the forwarder, waits for it, then runs the command, whose requests reach the gateway', async () => {
    const port = await freePort();
    const result = await run(['sh', join(shared, 'tarmac-run'), process.execPath, '-e', client], {
      TARMAC_MODEL_PORT: String(port),
      TARMAC_MODEL_SOCKET: gateway.socketPath,
    });
    assert.equal(result.code, 0, result.stderr);
    const { plain, streamed } = JSON.parse(result.stdout);
    assert.equal(plain.status, 200);
    assert.match(plain.text, /hello from upstream/);
    assert.equal(streamed.status, 200);
    assert.match(streamed.text, /event: message_stop/);
    assert.equal(gateway.usage().inputTokens, 22);
    assert.equal(gateway.usage().outputTokens, 14);
  });

  it('passes on the exit code of the command it runs', async () => {
    const result = await run(['sh', join(shared, 'tarmac-run'), 'sh', '-c', 'exit 3'], {
      TARMAC_MODEL_PORT: String(await freePort()),
      TARMAC_MODEL_SOCKET: gateway.socketPath,
    });
    assert.equal(result.code, 3);
  });

  it('starts in well under a second', async () => {
    const result = await run(['sh', join(shared, 'tarmac-run'), 'true'], {
      TARMAC_MODEL_PORT: String(await freePort()),
      TARMAC_MODEL_SOCKET: gateway.socketPath,
    });
    assert.equal(result.code, 0, result.stderr);
    assert.ok(result.ms < 1000, `took ${result.ms} ms`);
  });

  it('fails loudly when the forwarder cannot listen, and never runs the command', async () => {
    const taken = createServer();
    await new Promise<void>((done) => taken.listen(0, '127.0.0.1', done));
    try {
      const port = (taken.address() as AddressInfo).port;
      const result = await run(['sh', join(shared, 'tarmac-run'), 'sh', '-c', 'echo ran'], {
        TARMAC_MODEL_PORT: String(port),
        TARMAC_MODEL_SOCKET: gateway.socketPath,
      });
      assert.equal(result.code, 70);
      assert.match(result.stderr, /cannot listen on 127\.0\.0\.1:\d+/);
      assert.doesNotMatch(result.stdout, /ran/);
    } finally {
      taken.close();
    }
  });

  it('says which socket it cannot reach when the gateway is not there', async () => {
    const port = await freePort();
    const probe = `require('node:http').get({ host: '127.0.0.1', port: ${port}, path: '/v1/models' }).on('error', (e) => { console.log('client saw', e.code); });`;
    const result = await run(['sh', join(shared, 'tarmac-run'), process.execPath, '-e', probe], {
      TARMAC_MODEL_PORT: String(port),
      TARMAC_MODEL_SOCKET: '/nonexistent/model.sock',
    });
    assert.match(result.stdout, /client saw ECONNRESET/);
    assert.match(result.stderr, /cannot reach the model gateway at \/nonexistent\/model\.sock/);
  });
});
