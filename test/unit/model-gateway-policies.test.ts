import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { costOf, modelAllowance, parsePricing, priceOf, type PricingTable } from '../../core/model-pricing';
import { loadPricing } from '../../core/node/recipes';
import { forwardedRequest, gatewayError, routeAllowed, upstreamHeaders } from '../../activities/gateways/model-protocol';
import { ModelTranscript, transcriptBody } from '../../activities/gateways/model-transcript';
import { anthropicTokens, openaiTokens, StreamMeter, usageOfBody } from '../../activities/gateways/model-usage';
import { SseReader, type SseEvent } from '../../activities/gateways/sse-reader';
import { modelBudgetRefusal } from '../../policies/model-budget';

/** The model gateway's pure parts: tables. */

describe('SseReader', () => {
  const stream = 'event: a\ndata: {"x":1}\n\n: a comment\r\ndata: line one\r\ndata: line two\r\n\r\ndata:no-space\rdata: é\r\r';
  const expected: SseEvent[] = [
    { event: 'a', data: '{"x":1}' },
    { event: 'message', data: 'line one\nline two' },
    { event: 'message', data: 'no-space\né' },
  ];
  it('reads the same events however the stream is cut (every split point, bytes of a UTF-8 character and CRLFs included)', () => {
    const bytes = Buffer.from(stream);
    for (let cut = 0; cut <= bytes.length; cut += 1) {
      const events: SseEvent[] = [];
      const reader = new SseReader((event) => events.push(event));
      reader.push(bytes.subarray(0, cut));
      reader.push(bytes.subarray(cut));
      reader.end();
      assert.deepEqual(events, expected, `cut at ${cut}`);
    }
  });
  it('hands each event over as soon as its blank line arrives', () => {
    const events: SseEvent[] = [];
    const reader = new SseReader((event) => events.push(event));
    reader.push(Buffer.from('data: 1\n\ndata: 2'));
    assert.equal(events.length, 1);
    reader.end();
    assert.equal(events.length, 2, 'a last event without its blank line still counts');
  });
  it('stops at an event over the size limit instead of holding it', () => {
    const events: SseEvent[] = [];
    const reader = new SseReader((event) => events.push(event), 100);
    reader.push(Buffer.from(`data: ok\n\ndata: ${'x'.repeat(200)}`));
    reader.push(Buffer.from('\n\ndata: after\n\n'));
    reader.end();
    assert.deepEqual(events, [{ event: 'message', data: 'ok' }]);
    assert.equal(reader.overflowed, true);
  });
});

describe('usage of a response', () => {
  const table = [
    {
      name: 'Anthropic: cache counts are parts of the input',
      input: anthropicTokens({ input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 3, cache_read_input_tokens: 100 }),
      expected: { inputTokens: 113, outputTokens: 5, cacheCreationInputTokens: 3, cacheReadInputTokens: 100, reasoningTokens: 0 },
    },
    {
      name: 'Anthropic: no cache fields',
      input: anthropicTokens({ input_tokens: 10, output_tokens: 5 }),
      expected: { inputTokens: 10, outputTokens: 5, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, reasoningTokens: 0 },
    },
    { name: 'Anthropic: count_tokens answer is not usage', input: anthropicTokens(undefined), expected: undefined },
    {
      name: 'OpenAI chat: prompt includes the cached part',
      input: openaiTokens({
        prompt_tokens: 50,
        completion_tokens: 7,
        prompt_tokens_details: { cached_tokens: 20 },
        completion_tokens_details: { reasoning_tokens: 4 },
      }),
      expected: { inputTokens: 50, outputTokens: 7, cacheCreationInputTokens: 0, cacheReadInputTokens: 20, reasoningTokens: 4 },
    },
    {
      name: 'OpenAI responses shape',
      input: openaiTokens({ input_tokens: 50, output_tokens: 7, input_tokens_details: { cached_tokens: 20 }, output_tokens_details: { reasoning_tokens: 4 } }),
      expected: { inputTokens: 50, outputTokens: 7, cacheCreationInputTokens: 0, cacheReadInputTokens: 20, reasoningTokens: 4 },
    },
    { name: 'OpenAI: null usage (a stream chunk before the last)', input: openaiTokens(null), expected: undefined },
    {
      name: 'negative or fractional counts are not trusted',
      input: anthropicTokens({ input_tokens: -5, output_tokens: 2.7 }),
      expected: { inputTokens: 0, outputTokens: 2, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, reasoningTokens: 0 },
    },
  ];
  for (const { name, input, expected } of table) it(name, () => assert.deepEqual(input, expected));

  it('reads the model and usage of a whole body', () => {
    assert.deepEqual(usageOfBody('anthropic', { model: 'm', usage: { input_tokens: 1, output_tokens: 2 } }).tokens?.outputTokens, 2);
    assert.equal(usageOfBody('anthropic', { input_tokens: 12 }).tokens, undefined, 'a token count is not usage');
    assert.equal(usageOfBody('openai', { model: 'gpt-5', usage: { prompt_tokens: 3, completion_tokens: 4 } }).model, 'gpt-5');
  });

  it('takes the final cumulative counts of an Anthropic stream', () => {
    const meter = new StreamMeter('anthropic');
    const event = (name: string, data: object) => Buffer.from(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
    meter.push(
      event('message_start', {
        type: 'message_start',
        message: { model: 'claude-haiku-4-5', usage: { input_tokens: 30, output_tokens: 1, cache_read_input_tokens: 10 } },
      }),
    );
    meter.push(event('message_delta', { type: 'message_delta', delta: {}, usage: { output_tokens: 9 } }));
    meter.push(event('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 12, input_tokens: 30 } }));
    const summary = meter.end();
    assert.deepEqual(summary.tokens, { inputTokens: 40, outputTokens: 12, cacheCreationInputTokens: 0, cacheReadInputTokens: 10, reasoningTokens: 0 });
    assert.equal(summary.model, 'claude-haiku-4-5');
    assert.equal(summary.assembled.stop_reason, 'end_turn');
  });

  it('keeps the rebuilt text within its cap and counts the rest', () => {
    const meter = new StreamMeter('openai', 10);
    meter.push(
      Buffer.from(`data: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'abcdefghijklmnop' } }] })}\n\n`),
    );
    const summary = meter.end();
    assert.equal((summary.assembled.choices as any)[0].content, 'abcdefghij');
    assert.equal(summary.droppedChars, 6);
  });

  it('notes an error event in a stream', () => {
    const meter = new StreamMeter('anthropic');
    meter.push(Buffer.from('event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'));
    assert.deepEqual(meter.end().error, { type: 'overloaded_error', message: 'Overloaded' });
  });
});

describe('pricing', () => {
  const table: PricingTable = {
    'claude-sonnet-4-5': { provider: 'anthropic', input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 },
    'gpt-5': { provider: 'openai', input: 1.25, output: 10, cacheRead: 0.125 },
    'gpt-4o': { provider: 'openai', input: 2.5, output: 10 },
  };
  const lookups = [
    { name: 'exact', input: 'gpt-5', expected: 'gpt-5' },
    { name: 'dated Anthropic snapshot', input: 'claude-sonnet-4-5-20250929', expected: 'claude-sonnet-4-5' },
    { name: 'dated OpenAI snapshot', input: 'gpt-5-2025-08-07', expected: 'gpt-5' },
    { name: '-latest alias', input: 'claude-sonnet-4-5-latest', expected: 'claude-sonnet-4-5' },
    { name: 'a different model is never priced as its prefix', input: 'gpt-5-mini', expected: undefined },
    { name: 'unknown', input: 'llama-3', expected: undefined },
    { name: 'no model named', input: undefined, expected: undefined },
    { name: 'an inherited property is not a model', input: 'constructor', expected: undefined },
  ];
  for (const { name, input, expected } of lookups) it(`priceOf: ${name}`, () => assert.equal(priceOf(table, input)?.model, expected));

  const costs = [
    {
      name: 'Anthropic with cache write and read',
      price: table['claude-sonnet-4-5']!,
      tokens: { inputTokens: 1120, outputTokens: 50, cacheCreationInputTokens: 20, cacheReadInputTokens: 1000, reasoningTokens: 0 },
      expected: 0.001425,
    },
    {
      name: 'OpenAI with cached input',
      price: table['gpt-5']!,
      tokens: { inputTokens: 1_000_000, outputTokens: 1_000_000, cacheCreationInputTokens: 0, cacheReadInputTokens: 200_000, reasoningTokens: 500 },
      expected: 11.025,
    },
    {
      name: 'no cache price: cached input at the input price',
      price: table['gpt-4o']!,
      tokens: { inputTokens: 1000, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 1000, reasoningTokens: 0 },
      expected: 0.0025,
    },
  ];
  for (const { name, price, tokens, expected } of costs) it(`costOf: ${name}`, () => assert.equal(costOf(price, tokens), expected));

  const invalid = [
    { name: 'not JSON', text: '{', expected: /recipes\/pricing\.json: \(root\) is not valid JSON/ },
    {
      name: 'a negative price',
      text: JSON.stringify({ version: 1, models: { m: { provider: 'openai', input: -1, output: 1, taken: '2025-11-03' } } }),
      expected: /recipes\/pricing\.json: models\.m\.input /,
    },
    {
      name: 'an unknown provider',
      text: JSON.stringify({ version: 1, models: { m: { provider: 'google', input: 1, output: 1, taken: '2025-11' } } }),
      expected: /recipes\/pricing\.json: models\.m\.provider /,
    },
    {
      name: 'a misspelt field',
      text: JSON.stringify({ version: 1, models: { m: { provider: 'openai', input: 1, output: 1, cachedRead: 1 } } }),
      expected: /recipes\/pricing\.json: models\.m/,
    },
    {
      name: 'a price that does not say when it was taken',
      text: JSON.stringify({ version: 1, models: { m: { provider: 'openai', input: 1, output: 1 } } }),
      expected: /recipes\/pricing\.json: models\.m\.taken /,
    },
    {
      name: 'a date that is not a day or a month',
      text: JSON.stringify({ version: 1, models: { m: { provider: 'openai', input: 1, output: 1, taken: 'last week' } } }),
      expected: /recipes\/pricing\.json: models\.m\.taken /,
    },
    {
      name: 'a missing output price',
      text: JSON.stringify({ version: 1, models: { m: { provider: 'openai', input: 1 } } }),
      expected: /recipes\/pricing\.json: models\.m\.output /,
    },
  ];
  for (const { name, text, expected } of invalid)
    it(`parsePricing refuses ${name}, naming the file and the field`, () => assert.throws(() => parsePricing(text), expected));

  const allowances = [
    { name: 'a listed model', provider: 'anthropic' as const, model: 'claude-sonnet-4-5', expected: true },
    { name: 'a dated snapshot of a listed model', provider: 'anthropic' as const, model: 'claude-sonnet-4-5-20250929', expected: true },
    {
      name: 'a model nobody listed',
      provider: 'openai' as const,
      model: 'gpt-9-preview',
      expected: /model "gpt-9-preview" is not on the operator's list of openai models \(recipes\/pricing\.json; openai models listed: gpt-5, gpt-4o\)/,
    },
    {
      name: "another provider's model",
      provider: 'openai' as const,
      model: 'claude-sonnet-4-5',
      expected: /model "claude-sonnet-4-5" is listed for provider anthropic, not openai/,
    },
  ];
  for (const { name, provider, model, expected } of allowances)
    it(`modelAllowance: ${name}`, () => {
      const answer = modelAllowance(table, provider, model);
      if (expected instanceof RegExp) assert.match(answer.ok ? '' : answer.reason, expected);
      else assert.deepEqual(answer, { ok: true });
    });

  it('every shipped price says when it was taken', () => {
    for (const [model, price] of Object.entries(loadPricing())) assert.match(price.taken ?? '', /^\d{4}-\d{2}(-\d{2})?$/, model);
  });

  it('the shipped recipes/pricing.json loads and prices every model of the shipped Anthropic and OpenAI harnesses', () => {
    const shipped = loadPricing();
    const harnesses = JSON.parse(readFileSync(join(__dirname, '../../recipes/harnesses.json'), 'utf8')).harnesses;
    const models = [...harnesses['claude-code'].models, ...harnesses.codex.models, ...harnesses.opencode.models.map((model: string) => model.split('/').pop())];
    for (const model of models) assert.ok(priceOf(shipped, model), `${model} has a price`);
  });
});

describe('modelBudgetRefusal', () => {
  const left = { tokens: 1000, costUsd: 1 };
  const table = [
    { name: 'nothing spent', spent: { inputTokens: 0, outputTokens: 0, costUsd: 0 }, expected: undefined },
    { name: 'room left', spent: { inputTokens: 600, outputTokens: 399, costUsd: 0.5 }, expected: undefined },
    {
      name: 'tokens reached: the next request is refused',
      spent: { inputTokens: 600, outputTokens: 400, costUsd: 0.5 },
      expected: 'tokens: 1000 used of the 1000 this session may use',
    },
    { name: 'cost reached', spent: { inputTokens: 1, outputTokens: 1, costUsd: 1 }, expected: 'cost: $1.0000 spent of the $1 this session may spend' },
    {
      name: 'nothing left at the start: the first request is refused',
      spent: { inputTokens: 0, outputTokens: 0, costUsd: 0 },
      left: { tokens: 0, costUsd: 1 },
      expected: 'tokens: 0 used of the 0 this session may use',
    },
  ];
  for (const { name, spent, expected, ...rest } of table) it(name, () => assert.equal(modelBudgetRefusal(spent, rest.left ?? left), expected));
});

describe('provider protocol', () => {
  const routes = [
    { provider: 'anthropic' as const, method: 'POST', path: '/v1/messages', expected: true },
    { provider: 'anthropic' as const, method: 'POST', path: '/v1/messages/count_tokens', expected: true },
    { provider: 'anthropic' as const, method: 'POST', path: '/v1/messages/batches', expected: false },
    { provider: 'anthropic' as const, method: 'GET', path: '/v1/messages', expected: false },
    { provider: 'anthropic' as const, method: 'HEAD', path: '/api/hello', expected: true },
    { provider: 'anthropic' as const, method: 'POST', path: '/v1/chat/completions', expected: false },
    { provider: 'openai' as const, method: 'POST', path: '/v1/chat/completions', expected: true },
    { provider: 'openai' as const, method: 'POST', path: '/v1/responses', expected: true },
    { provider: 'openai' as const, method: 'GET', path: '/v1/models/gpt-5', expected: true },
    { provider: 'openai' as const, method: 'POST', path: '/v1/files', expected: false },
    { provider: 'openai' as const, method: 'POST', path: '/v1/batches', expected: false },
    { provider: 'openai' as const, method: 'POST', path: '/v1/fine_tuning/jobs', expected: false },
    { provider: 'openai' as const, method: 'POST', path: '/chat/completions', expected: false },
  ];
  for (const { provider, method, path, expected } of routes)
    it(`${provider} ${method} ${path} → ${expected ? 'forwarded' : 'refused'}`, () => assert.equal(routeAllowed(provider, method, path), expected));

  it('sends only the worker key upstream, whatever the client sent', () => {
    const client = {
      authorization: 'Bearer fake',
      'x-api-key': 'fake',
      'api-key': 'fake',
      'proxy-authorization': 'x',
      host: 'x',
      connection: 'keep-alive',
      'anthropic-beta': 'b',
      'accept-encoding': 'gzip',
    };
    assert.deepEqual(upstreamHeaders('anthropic', client, 'real', 12), {
      'anthropic-beta': 'b',
      'accept-encoding': 'identity',
      'content-length': 12,
      'anthropic-version': '2023-06-01',
      'x-api-key': 'real',
    });
    assert.deepEqual(upstreamHeaders('openai', client, 'real', 0), {
      'anthropic-beta': 'b',
      'accept-encoding': 'identity',
      'content-length': 0,
      authorization: 'Bearer real',
    });
    assert.deepEqual(upstreamHeaders('openai', client, undefined, 0), { 'anthropic-beta': 'b', 'accept-encoding': 'identity', 'content-length': 0 });
  });

  it('answers in each provider error shape', () => {
    const anthropic = gatewayError('anthropic', 'budget', 'tarmac: run budget exhausted (x)');
    assert.equal(anthropic.status, 400);
    assert.deepEqual(JSON.parse(anthropic.body), { type: 'error', error: { type: 'invalid_request_error', message: 'tarmac: run budget exhausted (x)' } });
    const openai = gatewayError('openai', 'budget', 'tarmac: run budget exhausted (x)');
    assert.equal(openai.status, 400, 'a 400: the CLIs retry a 429 for minutes');
    assert.deepEqual(JSON.parse(openai.body), {
      error: { message: 'tarmac: run budget exhausted (x)', type: 'insufficient_quota', param: null, code: 'insufficient_quota' },
    });
    assert.equal(openai.headers['x-should-retry'], 'false');
    assert.equal(gatewayError('openai', 'upstream', 'x').headers['x-should-retry'], undefined, 'an unreachable upstream may be retried');
  });

  const rewrites = [
    {
      name: 'streamed chat gets include_usage',
      provider: 'openai' as const,
      path: '/v1/chat/completions',
      body: { model: 'm', stream: true },
      expected: { model: 'm', stream: true, stream_options: { include_usage: true } },
    },
    {
      name: 'already asked: unchanged',
      provider: 'openai' as const,
      path: '/v1/chat/completions',
      body: { stream: true, stream_options: { include_usage: true } },
      expected: undefined,
    },
    { name: 'not streamed: unchanged', provider: 'openai' as const, path: '/v1/chat/completions', body: { model: 'm' }, expected: undefined },
    {
      name: 'responses: unchanged (usage is in response.completed)',
      provider: 'openai' as const,
      path: '/v1/responses',
      body: { stream: true },
      expected: undefined,
    },
    { name: 'anthropic: unchanged', provider: 'anthropic' as const, path: '/v1/messages', body: { stream: true }, expected: undefined },
  ];
  for (const { name, provider, path, body, expected } of rewrites) {
    it(`forwardedRequest: ${name}`, () => {
      const raw = Buffer.from(JSON.stringify(body));
      const out = forwardedRequest(provider, path, raw);
      if (expected === undefined) assert.equal(out.body, raw, 'the same bytes go');
      else assert.deepEqual(JSON.parse(out.body.toString()), expected);
    });
  }
  it('forwardedRequest: a body that is not JSON goes as it is', () => {
    const raw = Buffer.from('not json');
    assert.equal(forwardedRequest('openai', '/v1/chat/completions', raw).body, raw);
  });
});

describe('transcript', () => {
  it('keeps a small JSON body as JSON, cuts a large one in the middle and says how much', () => {
    assert.deepEqual(transcriptBody(Buffer.from('{"a":1}')), { bytes: 7, json: { a: 1 } });
    const cut = transcriptBody(`${'h'.repeat(100)}${'m'.repeat(1000)}${'t'.repeat(100)}`, 400)!;
    assert.equal(cut.truncated, true);
    assert.match(cut.text as string, /^h{100}\n\[… 800 characters dropped …\]\nm+t{100}$/);
  });
  it('scrubs the secrets from every line and drops bodies past its cap', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'tarmac-transcript-')), 'transcript.jsonl');
    const transcript = await ModelTranscript.open(path, ['sk-secret-value-123', undefined, 'short'], 300);
    await transcript.append({ id: 1, request: { echoed: 'the key sk-secret-value-123 came back' }, response: { text: 'short stays' } });
    await transcript.append({ id: 2, request: { body: 'x'.repeat(500) }, response: {} });
    const lines = readFileSync(path, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    assert.equal(lines[0].request.echoed, 'the key [key removed] came back');
    assert.equal(lines[0].response.text, 'short stays', 'strings too short to be keys are left alone');
    assert.equal(lines[1].request, undefined);
    assert.match(lines[1].bodiesDropped, /cap of 300 bytes/);
  });
});
