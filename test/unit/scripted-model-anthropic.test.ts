import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startScriptedModel, type ScriptedModel } from '../../infra/scripted-model/server';
import type { Script } from '../../infra/scripted-model/script';
import { foldAnthropicStream, postJson } from '../helpers/model-client';

const script: Script = {
  version: 1,
  conversations: [
    {
      name: 'fixer',
      match: 'session: fixer',
      turns: [
        {
          text: 'Let me look.',
          toolCalls: [
            { name: 'Bash', input: { command: 'make test' } },
            { name: 'mcp__tarmac__read_file', input: { path: 'src/a.ts' } },
          ],
          usage: { inputTokens: 1200, outputTokens: 80, cacheReadTokens: 300, cacheWriteTokens: 40 },
        },
        { toolCalls: [{ name: 'Edit', input: { file_path: 'src/a.ts', old_string: 'a', new_string: 'b' } }], usage: { inputTokens: 1500, outputTokens: 60 } },
        { text: 'Fixed: the test passes.', usage: { inputTokens: 1700, outputTokens: 25 } },
      ],
    },
    { name: 'reviewer', turns: [{ text: 'No findings.', usage: { inputTokens: 900, outputTokens: 12 } }] },
  ],
};

const tools = [
  { name: 'Bash', input_schema: { type: 'object' } },
  { name: 'Edit', input_schema: { type: 'object' } },
  { name: 'mcp__tarmac__read_file', input_schema: { type: 'object' } },
];
const opening = { role: 'user', content: [{ type: 'text', text: 'session: fixer\nmake the tests pass' }] };

/** The history after turn 1, as a CLI sends it back: the assistant turn, then the tool results. */
function afterFirstTurn(first: any) {
  const results = first.content.filter((b: any) => b.type === 'tool_use').map((b: any) => ({ type: 'tool_result', tool_use_id: b.id, content: 'ok' }));
  return [opening, { role: 'assistant', content: first.content }, { role: 'user', content: results }];
}

describe('scripted model: Anthropic Messages API', () => {
  let model: ScriptedModel;
  let url: string;
  before(async () => {
    model = await startScriptedModel({ script });
    url = `${model.url}/v1/messages`;
  });
  after(async () => await model.close());

  it('answers turn 1 with text and two tool calls, and reports the scripted usage (non-streaming)', async () => {
    const reply = await postJson(url, { model: 'claude-sonnet-4-5', max_tokens: 1000, system: 'You are a coding agent.', tools, messages: [opening] });
    assert.equal(reply.status, 200);
    assert.equal(reply.json.type, 'message');
    assert.equal(reply.json.model, 'claude-sonnet-4-5', 'any model name is answered, and echoed');
    assert.equal(reply.json.stop_reason, 'tool_use');
    assert.deepEqual(reply.json.content, [
      { type: 'text', text: 'Let me look.' },
      { type: 'tool_use', id: 'toolu_scripted_0_0_0', name: 'Bash', input: { command: 'make test' } },
      { type: 'tool_use', id: 'toolu_scripted_0_0_1', name: 'mcp__tarmac__read_file', input: { path: 'src/a.ts' } },
    ]);
    assert.deepEqual(reply.json.usage, {
      input_tokens: 1200,
      cache_creation_input_tokens: 40,
      cache_read_input_tokens: 300,
      output_tokens: 80,
      service_tier: 'standard',
    });
  });

  it('streams the same answer as Anthropic does: message_start, ping, blocks with deltas, message_delta with usage, message_stop', async () => {
    const body = { model: 'claude-opus-4-1', max_tokens: 1000, stream: true, tools, messages: [opening] };
    const reply = await postJson(`${url}?beta=true`, body);
    assert.equal(reply.status, 200);
    assert.match(reply.contentType, /^text\/event-stream/);
    const names = reply.events!.map((e) => e.event);
    const collapsed = names.filter((name, i) => name !== 'content_block_delta' || names[i - 1] !== 'content_block_delta');
    assert.deepEqual(collapsed, [
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    assert.ok(names.filter((n) => n === 'content_block_delta').length > 3, 'text and tool input arrive in several deltas');
    const start = reply.events![0]!.data.message;
    assert.deepEqual([start.content, start.stop_reason, start.usage.input_tokens, start.usage.cache_read_input_tokens], [[], null, 1200, 300]);
    const toolStart = reply.events!.find((e) => e.event === 'content_block_start' && e.data.content_block.type === 'tool_use')!.data;
    assert.deepEqual(
      toolStart.content_block,
      { type: 'tool_use', id: 'toolu_scripted_0_0_0', name: 'Bash', input: {} },
      'the input arrives as input_json_delta',
    );
    const folded = foldAnthropicStream(reply.events!);
    const whole = await postJson(url, { ...body, stream: false });
    assert.deepEqual(folded.content, whole.json.content);
    assert.equal(folded.stop_reason, 'tool_use');
    assert.deepEqual(folded.usage, whole.json.usage);
  });

  it('answers the next turn from the history, and the same turn again on a retry', async () => {
    const first = (await postJson(url, { model: 'm', max_tokens: 10, tools, messages: [opening] })).json;
    const messages = afterFirstTurn(first);
    const second = await postJson(url, { model: 'm', max_tokens: 10, tools, messages });
    assert.deepEqual(second.json.content, [
      { type: 'tool_use', id: 'toolu_scripted_0_1_0', name: 'Edit', input: { file_path: 'src/a.ts', old_string: 'a', new_string: 'b' } },
    ]);
    const retried = await postJson(url, { model: 'm', max_tokens: 10, tools, messages });
    assert.deepEqual(retried.json.content, second.json.content);
    const third = await postJson(url, {
      model: 'm',
      max_tokens: 10,
      tools,
      stream: true,
      messages: [
        ...messages,
        { role: 'assistant', content: second.json.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_scripted_0_1_0', content: 'edited' }] },
      ],
    });
    const folded = foldAnthropicStream(third.events!);
    assert.deepEqual([folded.content, folded.stop_reason, folded.usage.output_tokens], [[{ type: 'text', text: 'Fixed: the test passes.' }], 'end_turn', 25]);
    const seen = model.requests.filter((r) => r.conversation === 'fixer').map((r) => r.turn);
    assert.deepEqual(seen.slice(-4), [0, 1, 1, 2], 'the endpoint recorded which turn each request got');
    const last = model.requests.at(-1)!;
    assert.equal((last.body as any).messages.length, 5, 'the endpoint saw the earlier turns');
  });

  it('refuses, naming conversation and turn, when the script has no turn left (400: the CLI stops instead of retrying)', async () => {
    const done = [
      opening,
      { role: 'assistant', content: [{ type: 'text', text: 'x' }] },
      { role: 'user', content: 'more' },
      { role: 'assistant', content: 'y' },
      { role: 'user', content: 'more' },
      { role: 'assistant', content: 'z' },
      { role: 'user', content: 'again' },
    ];
    const reply = await postJson(url, { model: 'm', max_tokens: 10, tools, messages: done });
    assert.equal(reply.status, 400);
    assert.deepEqual(reply.json, {
      type: 'error',
      error: { type: 'invalid_request_error', message: 'scripted model: conversation fixer has 3 turn(s); the request asks for turn 4' },
    });
    assert.equal(model.requests.at(-1)!.outcome, 'refused');
  });

  it('refuses a scripted tool call the request does not declare', async () => {
    const reply = await postJson(url, { model: 'm', max_tokens: 10, tools: [tools[0]], messages: [opening] });
    assert.equal(reply.status, 400);
    assert.match(
      reply.json.error.message,
      /conversation fixer turn 1 calls tool "mcp__tarmac__read_file", which the request does not declare \(declared: Bash\)/,
    );
  });

  it('chooses the conversation by its match string, else the default one', async () => {
    const reply = await postJson(url, {
      model: 'm',
      max_tokens: 10,
      tools,
      system: [{ type: 'text', text: 'Review the diff.' }],
      messages: [{ role: 'user', content: 'review please' }],
    });
    assert.deepEqual(reply.json.content, [{ type: 'text', text: 'No findings.' }]);
    assert.equal(model.requests.at(-1)!.conversation, 'reviewer');
  });

  it('answers a side call (no tools: a title, a summary) with the fixed side text and zero usage, on any model', async () => {
    const reply = await postJson(url, { model: 'claude-haiku-4-5', max_tokens: 50, messages: [{ role: 'user', content: 'session: fixer — write a title' }] });
    assert.deepEqual([reply.json.content, reply.json.usage.input_tokens, reply.json.usage.output_tokens], [[{ type: 'text', text: 'Scripted session' }], 0, 0]);
    assert.deepEqual([model.requests.at(-1)!.outcome, model.requests.at(-1)!.model], ['side', 'claude-haiku-4-5']);
  });

  it('counts tokens', async () => {
    const reply = await postJson(`${url}/count_tokens?beta=true`, { model: 'm', messages: [opening], tools });
    assert.equal(reply.status, 200);
    assert.ok(Number.isInteger(reply.json.input_tokens) && reply.json.input_tokens > 0);
    assert.equal(model.requests.at(-1)!.api, 'count-tokens');
  });

  it("answers a malformed request with a 400 in Anthropic's error shape", async () => {
    const reply = await postJson(url, { model: 'm', max_tokens: 10 });
    assert.deepEqual(
      [reply.status, reply.json.error.type, reply.json.error.message],
      [400, 'invalid_request_error', 'scripted model: messages must be an array'],
    );
  });
});
