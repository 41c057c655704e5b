import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ModelProvider } from '../../core/model-pricing';
import { loadPricing } from '../../core/node/recipes';
import { startModelGateway } from '../../activities/gateways/model-gateway';
import { startScriptedModel, type ScriptedModel } from '../../infra/scripted-model/server';
import { sendTo } from '../helpers/model-upstream';

/**
 * The model gateway in front of the project's scripted model endpoint (another
 * implementation of the three APIs than the gateway's own test upstream): what the
 * gateway meters equals what the script says the model used, for every API, streamed
 * and not.
 */

const realKey = 'sk-real-key-in-front-of-the-scripted-model-42';
const usage = { inputTokens: 1200, outputTokens: 80, cacheReadTokens: 300, cacheWriteTokens: 40 };
const script = {
  version: 1 as const,
  conversations: [{ name: 'gateway', turns: [{ text: 'Reading first.', toolCalls: [{ name: 'read_file', input: { path: 'a.txt' } }], usage }] }],
};

const requests: { name: string; provider: ModelProvider; path: string; body: Record<string, unknown>; expected: Record<string, number> }[] = [];
for (const stream of [false, true]) {
  const how = stream ? 'streamed' : 'not streamed';
  requests.push(
    {
      name: `Anthropic Messages, ${how}`,
      provider: 'anthropic',
      path: '/v1/messages?beta=true',
      body: {
        model: 'claude-sonnet-4-5',
        max_tokens: 100,
        stream,
        messages: [{ role: 'user', content: 'go' }],
        tools: [{ name: 'read_file', input_schema: { type: 'object' } }],
      },
      // Anthropic reports the cache counts apart; all of it is input. $3 / $3.75 / $0.30 / $15 per million.
      expected: { inputTokens: 1540, outputTokens: 80, cacheReadInputTokens: 300, cacheCreationInputTokens: 40, costUsd: 0.00504 },
    },
    {
      name: `OpenAI Chat Completions, ${how}`,
      provider: 'openai',
      path: '/v1/chat/completions',
      body: {
        model: 'gpt-5-mini',
        stream,
        messages: [{ role: 'user', content: 'go' }],
        tools: [{ type: 'function', function: { name: 'read_file', parameters: { type: 'object' } } }],
      },
      // OpenAI's input includes both cache counts; only reads are cheaper. $0.25 / $0.025 / $2 per million.
      expected: { inputTokens: 1540, outputTokens: 80, cacheReadInputTokens: 300, cacheCreationInputTokens: 0, costUsd: 0.0004775 },
    },
    {
      name: `OpenAI Responses, ${how}`,
      provider: 'openai',
      path: '/v1/responses',
      body: {
        model: 'gpt-5-mini',
        stream,
        input: [{ role: 'user', content: 'go' }],
        tools: [{ type: 'function', name: 'read_file', parameters: { type: 'object' } }],
      },
      expected: { inputTokens: 1540, outputTokens: 80, cacheReadInputTokens: 300, cacheCreationInputTokens: 0, costUsd: 0.0004775 },
    },
  );
}

describe('model gateway in front of the scripted model endpoint', { timeout: 60_000 }, () => {
  let model: ScriptedModel;
  before(async () => {
    model = await startScriptedModel({ script, port: 0 });
  });
  after(async () => {
    await model?.close();
  });

  for (const { name, provider, path, body, expected } of requests) {
    it(`${name}: metered exactly as scripted, with the worker key`, async () => {
      const gateway = await startModelGateway({
        dir: join(mkdtempSync(join(tmpdir(), 'tarmac-model-gw-scripted-')), 'model-gateway'),
        provider,
        upstream: model.url!,
        apiKey: realKey,
        budget: { left: { tokens: 1_000_000, costUsd: 10 } },
        pricing: loadPricing(),
      });
      try {
        const seenBefore = model.requests.length;
        const reply = await sendTo(gateway, path, { body, headers: { 'x-api-key': 'sk-fake', authorization: 'Bearer sk-fake' } });
        assert.equal(reply.status, 200, reply.body);
        assert.match(reply.body, /read_file/, 'the scripted tool call came through');
        const recorded = model.requests[seenBefore]!;
        assert.equal(recorded.outcome, 'turn', recorded.message);
        assert.deepEqual(recorded.usage, usage);
        assert.equal(
          provider === 'anthropic' ? recorded.headers['x-api-key'] : recorded.headers.authorization,
          provider === 'anthropic' ? realKey : `Bearer ${realKey}`,
        );
        assert.ok(!JSON.stringify(recorded.headers).includes('sk-fake'));
        const counted = gateway.usage();
        const { inputTokens, outputTokens, cacheReadInputTokens, cacheCreationInputTokens, costUsd } = counted;
        assert.deepEqual({ inputTokens, outputTokens, cacheReadInputTokens, cacheCreationInputTokens, costUsd }, expected);
        assert.equal(counted.metered, 1);
      } finally {
        await gateway.close();
      }
    });
  }
});
