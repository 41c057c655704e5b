import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Script } from '../../infra/scripted-model/script';
import { startScriptedModel, type ScriptedModel } from '../../infra/scripted-model/server';
import { foldChatStream, foldResponsesStream, postJson } from '../helpers/model-client';

const script: Script = {
  version: 1,
  conversations: [
    {
      name: 'codex',
      turns: [
        {
          text: 'Running the tests.',
          toolCalls: [{ name: 'exec_command', input: { cmd: 'make test' } }],
          usage: { inputTokens: 1000, outputTokens: 50, cacheReadTokens: 400, cacheWriteTokens: 20 },
        },
        {
          toolCalls: [{ name: 'apply_patch', text: '*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch\n' }],
          usage: { inputTokens: 1100, outputTokens: 60 },
        },
        { text: 'Done.', usage: { inputTokens: 1200, outputTokens: 5 } },
      ],
    },
    {
      name: 'mcp',
      match: 'session: mcp',
      turns: [{ toolCalls: [{ name: 'mcp__tarmac__read_file', input: { path: 'a.txt' } }], usage: { inputTokens: 1, outputTokens: 1 } }],
    },
  ],
};
const responsesTools = [
  { type: 'function', name: 'exec_command', parameters: { type: 'object' } },
  { type: 'custom', name: 'apply_patch', format: { type: 'grammar' } },
];
const chatTools = [{ type: 'function', function: { name: 'exec_command', parameters: { type: 'object' } } }];
const userInput = [
  { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'You are Codex.' }] },
  { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'fix it' }] },
];

describe('scripted model: OpenAI Responses API', () => {
  let model: ScriptedModel;
  let url: string;
  before(async () => {
    model = await startScriptedModel({ script });
    url = `${model.url}/v1/responses`;
  });
  after(async () => await model.close());

  it('answers with a message and a function call; usage in OpenAI terms (input includes cached)', async () => {
    const reply = await postJson(url, { model: 'gpt-5.5', input: userInput, tools: responsesTools, store: false });
    assert.equal(reply.status, 200);
    assert.deepEqual([reply.json.object, reply.json.status, reply.json.model], ['response', 'completed', 'gpt-5.5']);
    assert.deepEqual(
      reply.json.output.map((item: any) => [item.type, item.content?.[0].text ?? item.name, item.arguments, item.call_id]),
      [
        ['message', 'Running the tests.', undefined, undefined],
        ['function_call', 'exec_command', '{"cmd":"make test"}', 'call_scripted_0_0_0'],
      ],
    );
    assert.deepEqual(reply.json.usage, {
      input_tokens: 1420,
      input_tokens_details: { cached_tokens: 400, cache_write_tokens: 20 },
      output_tokens: 50,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 1470,
    });
  });

  it('streams response.created … output_text.delta … function_call_arguments.delta … response.completed, numbered in order', async () => {
    const reply = await postJson(url, { model: 'gpt-5.5', input: userInput, tools: responsesTools, stream: true });
    const events = reply.events!;
    assert.deepEqual(
      events.map((e) => e.data.sequence_number),
      events.map((_, i) => i),
    );
    assert.ok(events.every((e) => e.event === e.data.type));
    const names = events.map((e) => e.event).filter((name, i, all) => !name!.endsWith('.delta') || all[i - 1] !== name);
    assert.deepEqual(names, [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const folded = foldResponsesStream(events);
    const whole = await postJson(url, { model: 'gpt-5.5', input: userInput, tools: responsesTools });
    // Message item ids are per response; everything else is the same.
    const withoutMessageIds = (items: any[]) => items.map((item) => (item.type === 'message' ? { ...item, id: 'msg' } : item));
    assert.deepEqual(withoutMessageIds(folded.items), withoutMessageIds(whole.json.output), 'the items streamed are the non-streamed output');
    assert.deepEqual(folded.completed.output, folded.items);
    assert.deepEqual(folded.completed.usage, whole.json.usage);
    assert.equal(folded.deltas.get('fc_scripted_0_0_0'), '{"cmd":"make test"}');
    assert.equal(folded.deltas.get(folded.items[0].id), 'Running the tests.');
  });

  it('counts turns in the input items and streams a custom tool call (codex apply_patch)', async () => {
    const history = [
      ...userInput,
      { type: 'reasoning', summary: [] },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Running the tests.' }] },
      { type: 'function_call', name: 'exec_command', arguments: '{}', call_id: 'call_scripted_0_0_0' },
      { type: 'function_call_output', call_id: 'call_scripted_0_0_0', output: 'FAIL a' },
    ];
    const reply = await postJson(url, { model: 'gpt-5.5', input: history, tools: responsesTools, stream: true });
    const folded = foldResponsesStream(reply.events!);
    assert.deepEqual(folded.items, [
      {
        id: 'ctc_scripted_0_1_0',
        type: 'custom_tool_call',
        status: 'completed',
        call_id: 'call_scripted_0_1_0',
        name: 'apply_patch',
        input: script.conversations[0]!.turns[1]!.toolCalls![0]!.text,
      },
    ]);
    assert.equal(folded.deltas.get('ctc_scripted_0_1_0'), script.conversations[0]!.turns[1]!.toolCalls![0]!.text);
    assert.ok(reply.events!.some((e) => e.event === 'response.custom_tool_call_input.done'));
    assert.deepEqual([model.requests.at(-1)!.conversation, model.requests.at(-1)!.turn], ['codex', 1]);
  });

  it('calls a tool codex declares in a namespace (its MCP servers) by <namespace>__<tool>, carrying namespace and name apart', async () => {
    const tools = [
      ...responsesTools,
      { type: 'namespace', name: 'mcp__tarmac', description: 'Tarmac tools', tools: [{ type: 'function', name: 'read_file', parameters: { type: 'object' } }] },
    ];
    const reply = await postJson(url, { model: 'scripted-codex', input: 'session: mcp — read a.txt', tools, stream: true });
    const { items } = foldResponsesStream(reply.events!);
    assert.deepEqual(items, [
      {
        id: 'fc_scripted_1_0_0',
        type: 'function_call',
        status: 'completed',
        call_id: 'call_scripted_1_0_0',
        namespace: 'mcp__tarmac',
        name: 'read_file',
        arguments: '{"path":"a.txt"}',
      },
    ]);
    // Codex's "responses lite" requests carry the tools in an `additional_tools` input item instead.
    const lite = await postJson(url, {
      model: 'gpt-lite',
      input: [
        { type: 'additional_tools', role: 'developer', tools: tools.slice(2) },
        { type: 'message', role: 'user', content: 'session: mcp' },
      ],
    });
    assert.deepEqual(
      lite.json.output.map((item: any) => [item.namespace, item.name]),
      [['mcp__tarmac', 'read_file']],
    );
    const undeclared = await postJson(url, { model: 'scripted-codex', input: 'session: mcp', tools: responsesTools });
    assert.match(
      undeclared.json.error.message,
      /calls tool "mcp__tarmac__read_file", which the request does not declare \(declared: exec_command, apply_patch\)/,
    );
  });

  it("refuses previous_response_id (the history must be sent whole) in OpenAI's error shape", async () => {
    const reply = await postJson(url, { model: 'gpt-5.5', input: 'go on', previous_response_id: 'resp_1', tools: responsesTools });
    assert.equal(reply.status, 400);
    assert.deepEqual(reply.json.error.type, 'invalid_request_error');
    assert.match(reply.json.error.message, /previous_response_id is not supported/);
  });
});

describe('scripted model: OpenAI Chat Completions API', () => {
  let model: ScriptedModel;
  let url: string;
  before(async () => {
    model = await startScriptedModel({
      script: { version: 1, conversations: [{ turns: [script.conversations[0]!.turns[0]!, script.conversations[0]!.turns[2]!] }] },
    });
    url = `${model.url}/v1/chat/completions`;
  });
  after(async () => await model.close());
  const messages = [
    { role: 'system', content: 'You are an agent.' },
    { role: 'user', content: 'fix it' },
  ];

  it('answers with tool_calls and usage (non-streaming)', async () => {
    const reply = await postJson(url, { model: 'openai/gpt-5-mini', messages, tools: chatTools });
    assert.equal(reply.json.object, 'chat.completion');
    assert.deepEqual(reply.json.choices[0], {
      index: 0,
      message: {
        role: 'assistant',
        content: 'Running the tests.',
        refusal: null,
        tool_calls: [{ id: 'call_scripted_0_0_0', type: 'function', function: { name: 'exec_command', arguments: '{"cmd":"make test"}' } }],
      },
      logprobs: null,
      finish_reason: 'tool_calls',
    });
    assert.deepEqual(reply.json.usage, {
      prompt_tokens: 1420,
      completion_tokens: 50,
      total_tokens: 1470,
      prompt_tokens_details: { cached_tokens: 400 },
      completion_tokens_details: { reasoning_tokens: 0 },
    });
  });

  it('streams chunks with tool_calls deltas, a finish chunk, a final usage chunk when asked, then [DONE]', async () => {
    const body = { model: 'openai/gpt-5-mini', messages, tools: chatTools, stream: true, stream_options: { include_usage: true } };
    const reply = await postJson(url, body);
    const events = reply.events!;
    assert.equal(events.at(-1)!.data, '[DONE]');
    assert.ok(
      events.every((e) => e.event === undefined),
      'chat chunks are unnamed data lines',
    );
    const usageChunk = events.at(-2)!.data;
    assert.deepEqual([usageChunk.choices, usageChunk.usage.prompt_tokens, usageChunk.usage.completion_tokens], [[], 1420, 50]);
    assert.ok(events.slice(0, -2).every((e) => e.data.object === 'chat.completion.chunk' && e.data.usage === null));
    assert.ok(events.filter((e) => e.data.choices?.[0]?.delta.tool_calls).length > 2, 'the arguments arrive in several deltas');
    const folded = foldChatStream(events);
    const whole = (await postJson(url, { ...body, stream: false })).json;
    assert.deepEqual(
      { content: folded.content, tool_calls: folded.tool_calls, finish_reason: folded.finish_reason, usage: folded.usage },
      { content: whole.choices[0].message.content, tool_calls: whole.choices[0].message.tool_calls, finish_reason: 'tool_calls', usage: whole.usage },
    );
    const plain = await postJson(url, { ...body, stream_options: undefined });
    assert.ok(
      plain.events!.every((e) => e.data === '[DONE]' || (e.data.choices.length === 1 && !('usage' in e.data))),
      'no usage chunk unless asked, as OpenAI does',
    );
  });

  it('answers the final turn after a tool result', async () => {
    const history = [
      ...messages,
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_scripted_0_0_0', type: 'function', function: { name: 'exec_command', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_scripted_0_0_0', content: 'ok' },
    ];
    const reply = await postJson(url, { model: 'm', messages: history, tools: chatTools, stream: true, stream_options: { include_usage: true } });
    const folded = foldChatStream(reply.events!);
    assert.deepEqual([folded.content, folded.tool_calls, folded.finish_reason, folded.usage.completion_tokens], ['Done.', [], 'stop', 5]);
  });
});
