import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { PricingTable } from '../../core/model-pricing';
import { containerUser } from '../../activities/git/git';
import { startModelGateway, type ModelGatewayHandle, type ModelGatewayOptions } from '../../activities/gateways/model-gateway';
import { listenPrivately } from '../../activities/gateways/private-socket';
import { sendTo, startModelUpstream, type ModelUpstream } from '../helpers/model-upstream';

/**
 * The model gateway with real sockets and real HTTP: a client on its unix socket, a
 * small provider on loopback behind it (test/helpers/model-upstream.ts).
 */

const realKey = 'sk-real-worker-key-0123456789abcdef';
const clientKey = 'sk-client-fake-key-should-never-pass';
const pricing: PricingTable = {
  'claude-sonnet-4-5': { provider: 'anthropic', input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 },
  'gpt-5-mini': { provider: 'openai', input: 0.25, output: 2, cacheRead: 0.025 },
};

const transcriptOf = (dir: string) =>
  readFileSync(join(dir, 'transcript.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));

/** Every file the gateway wrote, as one text. */
const everythingWritten = (dir: string) =>
  readdirSync(dir)
    .map((name) => readFileSync(join(dir, name), 'utf8'))
    .join('\n');

describe('model gateway over a unix socket', { timeout: 60_000 }, () => {
  let upstream: ModelUpstream;
  const open: ModelGatewayHandle[] = [];
  before(async () => {
    upstream = await startModelUpstream();
  });
  after(async () => {
    for (const gateway of open) await gateway.close();
    await upstream?.close();
  });

  async function start(overrides: Partial<ModelGatewayOptions> = {}): Promise<{ gateway: ModelGatewayHandle; dir: string }> {
    const dir = overrides.dir ?? join(mkdtempSync(join(tmpdir(), 'tarmac-model-gw-')), 'model-gateway');
    const gateway = await startModelGateway({
      dir,
      provider: 'anthropic',
      upstream: upstream.url,
      apiKey: realKey,
      budget: { left: { tokens: 1_000_000, costUsd: 100 } },
      pricing,
      ...overrides,
    });
    open.push(gateway);
    return { gateway, dir };
  }

  it('replaces the client credentials with the worker key (Anthropic), keeps the version headers, and never writes the key', async () => {
    const { gateway, dir } = await start();
    const before = upstream.seen.length;
    const reply = await sendTo(gateway, '/v1/messages?beta=true', {
      body: { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
      headers: {
        'x-api-key': clientKey,
        authorization: `Bearer ${clientKey}`,
        'anthropic-version': '2023-06-01',
        'anthropic-beta': 'tools-2024',
        cookie: 'a=b',
      },
    });
    assert.equal(reply.status, 200);
    assert.equal(reply.json.content[0].text, 'hello from upstream');
    const seen = upstream.seen.slice(before);
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.url, '/v1/messages?beta=true');
    assert.equal(seen[0]!.headers['x-api-key'], realKey);
    assert.equal(seen[0]!.headers.authorization, undefined);
    assert.equal(seen[0]!.headers.cookie, undefined);
    assert.equal(seen[0]!.headers['anthropic-version'], '2023-06-01');
    assert.equal(seen[0]!.headers['anthropic-beta'], 'tools-2024');
    assert.ok(!JSON.stringify(seen[0]!.headers).includes(clientKey), 'the client key never reaches the upstream');
    await gateway.close();
    const written = everythingWritten(dir);
    assert.ok(!written.includes(realKey), 'the worker key is in nothing the gateway writes');
    assert.ok(!written.includes(clientKey), 'nor is the client key');
    assert.match(written, /"x-api-key":"\[removed\]"/);
  });

  it('sends the OpenAI key as a bearer token and drops the client x-api-key', async () => {
    const { gateway } = await start({ provider: 'openai' });
    const before = upstream.seen.length;
    const reply = await sendTo(gateway, '/v1/chat/completions', {
      body: { model: 'gpt-5-mini', messages: [] },
      headers: { authorization: `Bearer ${clientKey}`, 'x-api-key': clientKey },
    });
    assert.equal(reply.status, 200);
    const seen = upstream.seen.slice(before);
    assert.equal(seen[0]!.headers.authorization, `Bearer ${realKey}`);
    assert.equal(seen[0]!.headers['x-api-key'], undefined);
  });

  it('forwards without a key when the worker has none (a local scripted endpoint)', async () => {
    const { gateway } = await start({ apiKey: undefined });
    const before = upstream.seen.length;
    await sendTo(gateway, '/v1/messages', { body: { model: 'claude-sonnet-4-5', messages: [] }, headers: { 'x-api-key': clientKey } });
    const seen = upstream.seen.slice(before);
    assert.equal(seen[0]!.headers['x-api-key'], undefined);
    assert.equal(seen[0]!.headers.authorization, undefined);
  });

  it('passes a stream through event by event: the first event arrives while the upstream still holds the rest', async () => {
    const { gateway, dir } = await start();
    upstream.hold = true;
    let firstEventAt = 0;
    let sawFirst!: () => void;
    const first = new Promise<void>((resolve) => (sawFirst = resolve));
    const pending = sendTo(gateway, '/v1/messages', {
      body: { model: 'claude-sonnet-4-5', stream: true, messages: [] },
      onChunk: (text) => {
        if (!firstEventAt && text.includes('message_start')) {
          firstEventAt = Date.now();
          sawFirst();
        }
      },
    });
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<void>((resolve) => (timer = setTimeout(resolve, 5000)));
    await Promise.race([first, gaveUp]);
    clearTimeout(timer);
    if (!firstEventAt) {
      upstream.hold = false;
      upstream.release();
      assert.fail('no event reached the client while the upstream held the rest of the stream');
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    upstream.hold = false;
    const releasedAt = Date.now();
    upstream.release();
    const reply = await pending;
    assert.equal(reply.status, 200);
    assert.ok(firstEventAt < releasedAt, 'the first event came before the upstream finished');
    assert.ok(reply.chunks.length >= 2, 'the stream came in pieces');
    assert.match(reply.body, /message_stop/);
    await gateway.close();
    const [entry] = transcriptOf(dir);
    assert.deepEqual(entry.response.assembled.content[0], { type: 'text', text: 'hello from the stream' });
    assert.deepEqual(entry.response.assembled.content[1], { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: '{"path":"a.txt"}' });
    assert.equal(entry.response.assembled.stop_reason, 'tool_use');
  });

  describe('meters usage exactly', () => {
    const table = [
      {
        name: 'Anthropic Messages, not streamed, with cache counts',
        provider: 'anthropic' as const,
        path: '/v1/messages',
        body: { model: 'claude-sonnet-4-5', messages: [] },
        usage: { input: 100, output: 50, cacheWrite: 20, cacheRead: 1000 },
        expected: { inputTokens: 1120, outputTokens: 50, cacheCreationInputTokens: 20, cacheReadInputTokens: 1000, reasoningTokens: 0, costUsd: 0.001425 },
      },
      {
        name: 'Anthropic Messages, streamed (message_start + message_delta)',
        provider: 'anthropic' as const,
        path: '/v1/messages',
        body: { model: 'claude-sonnet-4-5', stream: true, messages: [] },
        usage: { input: 100, output: 50, cacheWrite: 20, cacheRead: 1000 },
        expected: { inputTokens: 1120, outputTokens: 50, cacheCreationInputTokens: 20, cacheReadInputTokens: 1000, reasoningTokens: 0, costUsd: 0.001425 },
      },
      {
        name: 'OpenAI Chat Completions, not streamed',
        provider: 'openai' as const,
        path: '/v1/chat/completions',
        body: { model: 'gpt-5-mini', messages: [] },
        usage: { input: 200, output: 80, cacheRead: 50, reasoning: 30 },
        expected: { inputTokens: 200, outputTokens: 80, cacheCreationInputTokens: 0, cacheReadInputTokens: 50, reasoningTokens: 30, costUsd: 0.00019875 },
      },
      {
        name: 'OpenAI Chat Completions, streamed without include_usage (the gateway asks for it)',
        provider: 'openai' as const,
        path: '/v1/chat/completions',
        body: { model: 'gpt-5-mini', stream: true, messages: [] },
        usage: { input: 200, output: 80, cacheRead: 50, reasoning: 30 },
        expected: { inputTokens: 200, outputTokens: 80, cacheCreationInputTokens: 0, cacheReadInputTokens: 50, reasoningTokens: 30, costUsd: 0.00019875 },
      },
      {
        name: 'OpenAI Responses, not streamed',
        provider: 'openai' as const,
        path: '/v1/responses',
        body: { model: 'gpt-5-mini', input: 'hi' },
        usage: { input: 200, output: 80, cacheRead: 50, reasoning: 30 },
        expected: { inputTokens: 200, outputTokens: 80, cacheCreationInputTokens: 0, cacheReadInputTokens: 50, reasoningTokens: 30, costUsd: 0.00019875 },
      },
      {
        name: 'OpenAI Responses, streamed (response.completed)',
        provider: 'openai' as const,
        path: '/v1/responses',
        body: { model: 'gpt-5-mini', input: 'hi', stream: true },
        usage: { input: 200, output: 80, cacheRead: 50, reasoning: 30 },
        expected: { inputTokens: 200, outputTokens: 80, cacheCreationInputTokens: 0, cacheReadInputTokens: 50, reasoningTokens: 30, costUsd: 0.00019875 },
      },
    ];
    for (const { name, provider, path, body, usage, expected } of table) {
      it(name, async () => {
        const { gateway, dir } = await start({ provider });
        upstream.usage = usage;
        const first = await sendTo(gateway, path, { body });
        const second = await sendTo(gateway, path, { body });
        assert.equal(first.status, 200);
        assert.equal(second.status, 200);
        const counted = gateway.usage();
        const twice = Object.fromEntries(Object.entries(expected).map(([key, value]) => [key, Math.round(value * 2 * 1e9) / 1e9]));
        const { inputTokens, outputTokens, cacheCreationInputTokens, cacheReadInputTokens, reasoningTokens, costUsd } = counted;
        assert.deepEqual({ inputTokens, outputTokens, cacheCreationInputTokens, cacheReadInputTokens, reasoningTokens, costUsd }, twice);
        assert.equal(counted.requests, 2);
        assert.equal(counted.metered, 2);
        assert.deepEqual(counted.unpricedModels, []);
        assert.equal(counted.byModel[body.model]!.requests, 2);
        await gateway.close();
        const entries = transcriptOf(dir);
        assert.equal(entries.length, 2);
        assert.equal(entries[0].usage.inputTokens, expected.inputTokens);
        assert.equal(entries[0].usage.costUsd, expected.costUsd);
        assert.ok(entries[0].request.body.json, 'the request body is in the transcript');
        assert.ok(entries[0].durationMs >= 0);
      });
    }
  });

  it('asks a streamed chat request for its usage, and says so in the transcript', async () => {
    const { gateway, dir } = await start({ provider: 'openai' });
    const before = upstream.seen.length;
    await sendTo(gateway, '/v1/chat/completions', { body: { model: 'gpt-5-mini', stream: true, stream_options: { something: 1 }, messages: [] } });
    assert.deepEqual(upstream.seen[before]!.json.stream_options, { something: 1, include_usage: true });
    await gateway.close();
    const [entry] = transcriptOf(dir);
    assert.equal(entry.request.changed, 'added stream_options.include_usage');
    assert.equal(entry.response.assembled.choices[0].content, 'hello from chat');
    assert.deepEqual(entry.response.assembled.choices[0].tool_calls, [{ id: 'call_1', name: 'read_file', arguments: '{"path":"a.txt"}' }]);
  });

  it('prices a dated snapshot at its base name; an answer under a name it has no price for is priced as the model asked for', async () => {
    const { gateway } = await start();
    upstream.usage = { input: 1000, output: 1000 };
    upstream.answerModel = 'claude-sonnet-4-5-20250929';
    await sendTo(gateway, '/v1/messages', { body: { model: 'claude-sonnet-4-5', messages: [] } });
    assert.equal(gateway.usage().costUsd, 0.018);
    upstream.answerModel = 'mystery-model-1';
    await sendTo(gateway, '/v1/messages', { body: { model: 'claude-sonnet-4-5', messages: [] } });
    upstream.answerModel = undefined;
    const counted = gateway.usage();
    assert.equal(counted.costUsd, 0.036, 'never $0: the price of the model the request named');
    assert.equal(counted.inputTokens, 2000);
    assert.deepEqual(counted.unpricedModels, []);
  });

  for (const { provider, path, model, shape } of [
    {
      provider: 'anthropic' as const,
      path: '/v1/messages',
      model: 'claude-unlisted-9',
      shape: { type: 'error', error: { type: 'not_found_error' } },
    },
    {
      provider: 'openai' as const,
      path: '/v1/responses',
      model: 'gpt-unlisted-9',
      shape: { error: { type: 'invalid_request_error', code: 'model_not_found', param: null } },
    },
  ]) {
    it(`refuses a model off the operator's list (${provider} error shape, 404): nothing forwarded, nothing charged, the model named`, async () => {
      const { gateway, dir } = await start({ provider });
      const before = upstream.seen.length;
      const reply = await sendTo(gateway, path, { body: { model, messages: [], input: 'hi' } });
      assert.equal(reply.status, 404);
      assert.equal(reply.headers['x-should-retry'], 'false');
      assert.match(
        reply.json.error.message,
        new RegExp(`^tarmac: model "${model}" is not on the operator's list of ${provider} models \\(recipes/pricing\\.json; ${provider} models listed: `),
      );
      for (const [key, value] of Object.entries(shape)) {
        if (typeof value === 'object') for (const [inner, expected] of Object.entries(value)) assert.equal(reply.json[key][inner], expected, `${key}.${inner}`);
        else assert.equal(reply.json[key], value, key);
      }
      assert.equal(upstream.seen.length, before, 'the request never reached the upstream');
      const usage = gateway.usage();
      assert.deepEqual([usage.requests, usage.costUsd, usage.inputTokens, usage.modelRefusals], [0, 0, 0, 1]);
      assert.equal(usage.lastModelRefusal?.model, model);
      await gateway.close();
      const [entry] = transcriptOf(dir);
      assert.equal(entry.refused.kind, 'model');
    });
  }

  for (const { provider, path, body, status, shape } of [
    {
      provider: 'anthropic' as const,
      path: '/v1/messages',
      body: { model: 'claude-sonnet-4-5', messages: [] },
      status: 400,
      shape: (json: any) => json.type === 'error' && json.error.type === 'invalid_request_error',
    },
    {
      provider: 'openai' as const,
      path: '/v1/responses',
      body: { model: 'gpt-5-mini', input: 'hi' },
      status: 400,
      shape: (json: any) => json.error.type === 'insufficient_quota' && json.error.code === 'insufficient_quota',
    },
  ]) {
    it(`refuses a request once the budget is spent, before it reaches the upstream (${provider} error shape)`, async () => {
      const { gateway, dir } = await start({ provider, budget: { left: { tokens: 100, costUsd: 100 } } });
      upstream.usage = { input: 120, output: 30 };
      const before = upstream.seen.length;
      const first = await sendTo(gateway, path, { body });
      assert.equal(first.status, 200, 'the budget had room: the request went (and overshot)');
      const refused = await sendTo(gateway, path, { body });
      assert.equal(refused.status, status);
      assert.ok(shape(refused.json), refused.body);
      assert.match(refused.body, /tarmac: run budget exhausted \(tokens: 150 used of the 100 this session may use\)/);
      assert.equal(refused.headers['x-should-retry'], 'false');
      assert.equal(upstream.seen.length, before + 1, 'the refused request never reached the upstream');
      const counted = gateway.usage();
      assert.equal(counted.budgetRefusals, 1);
      assert.match(counted.lastBudgetRefusal!.reason, /tokens: 150/);
      assert.equal(counted.requests, 1);
      await gateway.close();
      const entries = transcriptOf(dir);
      assert.equal(entries.length, 2);
      assert.equal(entries[1].refused.kind, 'budget');
      assert.ok(entries[1].request.body.json, 'the refused request is in the transcript');
    });
  }

  it('asks a budget callback before every request, with the counters so far', async () => {
    const asked: number[] = [];
    const { gateway } = await start({
      budget: { check: (spent) => (asked.push(spent.requests), spent.costUsd > 0.0001 ? 'cost: the run is paused' : undefined) },
    });
    upstream.usage = { input: 100, output: 100 };
    assert.equal((await sendTo(gateway, '/v1/messages', { body: { model: 'claude-sonnet-4-5', messages: [] } })).status, 200);
    const refused = await sendTo(gateway, '/v1/messages', { body: { model: 'claude-sonnet-4-5', messages: [] } });
    assert.equal(refused.status, 400);
    assert.match(refused.json.error.message, /run budget exhausted \(cost: the run is paused\)/);
    assert.deepEqual(asked, [0, 1]);
  });

  it('keeps its counters across a restart (a worker restart neither forgets the spend nor resets the budget)', async () => {
    const first = await start({ budget: { left: { tokens: 300, costUsd: 100 } } });
    upstream.usage = { input: 100, output: 100, cacheRead: 50 };
    await sendTo(first.gateway, '/v1/messages', { body: { model: 'claude-sonnet-4-5', messages: [] } });
    const spent = first.gateway.usage();
    assert.equal(spent.inputTokens, 150);
    await first.gateway.close();

    const second = await start({ dir: first.dir, budget: { left: { tokens: 300, costUsd: 100 } } });
    const { updatedAt: _a, ...restored } = second.gateway.usage();
    const { updatedAt: _b, ...before } = spent;
    assert.deepEqual(restored, before);
    await sendTo(second.gateway, '/v1/messages', { body: { model: 'claude-sonnet-4-5', messages: [] } });
    assert.equal(second.gateway.usage().inputTokens, 300);
    assert.equal(second.gateway.usage().requests, 2);
    const refused = await sendTo(second.gateway, '/v1/messages', { body: { model: 'claude-sonnet-4-5', messages: [] } });
    assert.equal(refused.status, 400, 'the budget counts what was spent before the restart');
  });

  it('puts model.sock next to the tool gateway socket when given its key (one directory to mount)', async () => {
    const toolDir = join(mkdtempSync(join(tmpdir(), 'tarmac-model-gw-')), 'gateway');
    const tool = await listenPrivately(toolDir, 'gateway.sock', containerUser(), (connection) => connection.end());
    try {
      const { gateway } = await start({ socketKey: toolDir });
      assert.equal(gateway.socketDir, tool.socketDir);
      assert.equal(gateway.socketPath, join(tool.socketDir, 'model.sock'));
      assert.deepEqual(readdirSync(tool.socketDir).sort(), ['gateway.sock', 'model.sock']);
      assert.equal((await sendTo(gateway, '/v1/models')).status, 200);
    } finally {
      await tool.close();
    }
  });

  it('refuses to start over counters it cannot read, naming the file', async () => {
    const { gateway, dir } = await start();
    await gateway.close();
    writeFileSync(join(dir, 'usage.json'), '{"inputTokens": "lots"}');
    await assert.rejects(
      startModelGateway({ dir, provider: 'anthropic', upstream: upstream.url, apiKey: realKey, budget: { left: { tokens: 1, costUsd: 1 } }, pricing }),
      /usage\.json: .*refusing to start from zero/,
    );
  });

  it('refuses what it does not forward (a batch would spend the key unmetered)', async () => {
    const { gateway } = await start();
    const before = upstream.seen.length;
    const refused = await sendTo(gateway, '/v1/messages/batches', { body: { requests: [] } });
    assert.equal(refused.status, 404);
    assert.equal(refused.json.error.type, 'not_found_error');
    assert.match(refused.json.error.message, /does not forward POST \/v1\/messages\/batches/);
    assert.equal(upstream.seen.length, before);
    assert.equal((await sendTo(gateway, '/v1/models')).status, 200, 'the model list is forwarded');
    assert.equal(gateway.usage().otherRefusals, 1);
  });

  it('refuses a request body over the limit', async () => {
    const { gateway } = await start({ limits: { requestBytes: 1000 } });
    const before = upstream.seen.length;
    const refused = await sendTo(gateway, '/v1/messages', { body: { model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'x'.repeat(5000) }] } });
    assert.equal(refused.status, 413);
    assert.equal(refused.json.error.type, 'request_too_large');
    assert.equal(upstream.seen.length, before);
  });

  it('answers an unreachable upstream with a 502 in the provider shape, without the key', async () => {
    const { gateway } = await start({ provider: 'openai', upstream: 'http://127.0.0.1:9' });
    const reply = await sendTo(gateway, '/v1/responses', { body: { model: 'gpt-5-mini', input: 'hi' } });
    assert.equal(reply.status, 502);
    assert.equal(reply.json.error.type, 'server_error');
    assert.match(reply.json.error.message, /tarmac: the model upstream http:\/\/127\.0\.0\.1:9 is unreachable/);
    assert.ok(!reply.body.includes(realKey));
    assert.equal(gateway.usage().failures, 1);
  });

  it('meters what a stream reported before the client went away, and records why it ended', async () => {
    const { gateway, dir } = await start();
    upstream.usage = { input: 70, output: 40 };
    upstream.hold = true;
    const { request } = await import('node:http');
    await new Promise<void>((resolve, reject) => {
      setTimeout(() => reject(new Error('no event of the stream reached the client')), 5000).unref();
      const req = request({ socketPath: gateway.socketPath, path: '/v1/messages', method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => undefined);
      req.end(JSON.stringify({ model: 'claude-sonnet-4-5', stream: true, messages: [] }));
    });
    const deadline = Date.now() + 5000;
    while (gateway.usage().failures === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    upstream.hold = false;
    upstream.release();
    const counted = gateway.usage();
    assert.equal(counted.failures, 1);
    assert.equal(counted.inputTokens, 70, 'the input of message_start counts');
    await gateway.close();
    const [entry] = transcriptOf(dir);
    assert.equal(entry.failure.by, 'client');
  });
});
