import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Docker from 'dockerode';
import { loadPricing } from '../../core/node/recipes';
import { demuxDockerLog } from '../../activities/containers/containers';
import { startModelGateway, type ModelGatewayHandle } from '../../activities/gateways/model-gateway';
import { startModelUpstream, type ModelUpstream } from '../helpers/model-upstream';

/**
 * The model gateway reached the way a session reaches it: from inside a real container
 * with network `none` and the sandbox of a session (read-only root, no capabilities,
 * uid 1000), through the forwarder on the container's own loopback, to the unix socket
 * mounted at /tarmac/gateway, and on to a provider on the host's loopback.
 */

const image = 'tarmac/agent-script:bookworm';
const shared = resolve(__dirname, '../../images/shared');
const realKey = 'sk-real-worker-key-for-the-container-test-0123456789';

/** Runs inside the container (node 18, no dependencies): a plain and a streamed request through the forwarder, and a try at the network. */
const client = `
const http = require('node:http');
const port = Number(process.env.TARMAC_MODEL_PORT);
const send = (host, port, body) => new Promise((resolve, reject) => {
  const req = http.request({ host, port, path: '/v1/messages', method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'sk-fake-in-container', 'anthropic-version': '2023-06-01' } }, (res) => {
    let text = ''; let chunks = 0;
    res.on('data', (c) => { text += c; chunks += 1; });
    res.on('end', () => resolve({ status: res.statusCode, text, chunks }));
  });
  req.on('error', reject);
  req.end(JSON.stringify(body));
});
(async () => {
  const plain = await send('127.0.0.1', port, { model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'hi' }] });
  const streamed = await send('127.0.0.1', port, { model: 'claude-sonnet-4-5', stream: true, messages: [] });
  // The provider listens on the host's loopback: from in here, that address is the container's own.
  const direct = await send('127.0.0.1', Number(process.env.UPSTREAM_PORT), {}).then(() => 'reached', (error) => error.code);
  console.log(JSON.stringify({ plain, streamed, direct, env: Object.keys(process.env).filter((name) => /KEY|TOKEN/.test(name)) }));
})().catch((error) => { console.error(error.stack); process.exit(1); });
`;

describe('model gateway from inside a session container (network none)', { timeout: 120_000 }, () => {
  const docker = new Docker();
  let upstream: ModelUpstream;
  let gateway: ModelGatewayHandle;
  let containerId: string | undefined;
  before(async () => {
    await docker.getImage(image).inspect();
    upstream = await startModelUpstream();
    upstream.usage = { input: 120, output: 30, cacheRead: 400 };
    gateway = await startModelGateway({
      dir: join(mkdtempSync(join(tmpdir(), 'tarmac-model-gw-e2e-')), 'model-gateway'),
      provider: 'anthropic',
      upstream: upstream.url,
      apiKey: realKey,
      budget: { left: { tokens: 100_000, costUsd: 5 } },
      pricing: loadPricing(),
    });
  });
  after(async () => {
    if (containerId)
      await docker
        .getContainer(containerId)
        .remove({ force: true })
        .catch(() => undefined);
    await gateway?.close();
    await upstream?.close();
  });

  it('a request from inside the container through 127.0.0.1 reaches the provider with the worker key, and is metered', async () => {
    const container = await docker.createContainer({
      Image: image,
      Entrypoint: ['sh', '/opt/tarmac/shared/tarmac-run'],
      Cmd: ['node', '-e', client],
      User: '1000:1000',
      Env: ['HOME=/tmp', 'TARMAC_MODEL_PORT=8417', `UPSTREAM_PORT=${new URL(upstream.url).port}`],
      Labels: { 'tarmac.test': 'model-gateway-container' },
      HostConfig: {
        NetworkMode: 'none',
        ReadonlyRootfs: true,
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        Tmpfs: { '/tmp': 'rw,nosuid,size=16m' },
        Binds: [`${gateway.socketDir}:/tarmac/gateway:rw`, `${shared}:/opt/tarmac/shared:ro`],
        Memory: 256 * 1024 * 1024,
        PidsLimit: 64,
      },
    });
    containerId = container.id;
    await container.start();
    const exit = (await container.wait()) as { StatusCode: number };
    const { stdout, stderr } = demuxDockerLog(await container.logs({ stdout: true, stderr: true }));
    assert.equal(exit.StatusCode, 0, `stdout: ${stdout}\nstderr: ${stderr}`);
    const seen = JSON.parse(stdout.trim().split('\n').pop()!);

    assert.equal(seen.plain.status, 200);
    assert.match(seen.plain.text, /hello from upstream/);
    assert.equal(seen.streamed.status, 200);
    assert.match(seen.streamed.text, /event: message_start[\s\S]*event: message_stop/);
    assert.equal(seen.direct, 'ECONNREFUSED', 'the container has no other way out');
    assert.deepEqual(seen.env, [], 'no key in the container environment');

    const arrived = upstream.seen.filter((request) => request.url === '/v1/messages');
    assert.equal(arrived.length, 2);
    for (const request of arrived) {
      assert.equal(request.headers['x-api-key'], realKey);
      assert.ok(!JSON.stringify(request.headers).includes('sk-fake-in-container'));
    }
    const usage = gateway.usage();
    assert.equal(usage.inputTokens, 2 * 520);
    assert.equal(usage.outputTokens, 2 * 30);
    // claude-sonnet-4-5: 120 × $3 + 400 × $0.30 + 30 × $15 per million, twice.
    assert.equal(usage.costUsd, 0.00186);

    const inspected = JSON.stringify(await container.inspect());
    assert.ok(!inspected.includes(realKey), 'the key is not in docker inspect');
  });
});
