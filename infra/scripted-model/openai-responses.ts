import type { ServerResponse } from 'node:http';
import { countModelTurns, type Answer, type AnswerToolCall, type RequestView, type Usage } from './conversation';
import type { Protocol } from './protocol';
import { bodyObject, isObject, openEventStream, pieces, RequestError, sendJson, textOf } from './wire';

/** The OpenAI Responses API, `POST /v1/responses` (codex's `wire_api = "responses"`). */

function items(body: Record<string, unknown>): unknown[] {
  if (typeof body.input === 'string') return [{ type: 'message', role: 'user', content: body.input }];
  if (!Array.isArray(body.input)) throw new RequestError(400, 'scripted model: input must be a string or an array');
  return body.input;
}

// An item without `type` is an "easy input message" ({ role, content }).
const typeOf = (item: Record<string, unknown>) => (typeof item.type === 'string' ? item.type : 'message');

/** Model output in the history: assistant messages, reasoning and every `*_call` item. */
function isModelItem(item: unknown): boolean {
  if (!isObject(item)) return false;
  const type = typeOf(item);
  return type === 'message' ? item.role === 'assistant' : type === 'reasoning' || type.endsWith('_call');
}

/** The declared tool names; a namespace's tools as `<namespace>__<tool>`, with the map back to the parts. */
function declaredTools(tools: unknown[]): { names: string[]; namespaced: Map<string, { namespace: string; name: string }> } {
  const names: string[] = [];
  const namespaced = new Map<string, { namespace: string; name: string }>();
  for (const tool of tools) {
    if (!isObject(tool)) continue;
    if (tool.type === 'namespace' && typeof tool.name === 'string' && Array.isArray(tool.tools)) {
      for (const inner of tool.tools) {
        if (!isObject(inner) || typeof inner.name !== 'string') continue;
        const full = `${tool.name}__${inner.name}`;
        names.push(full);
        namespaced.set(full, { namespace: tool.name, name: inner.name });
      }
    } else if (typeof tool.name === 'string') names.push(tool.name);
  }
  return { names, namespaced };
}

function read(body: Record<string, unknown>): RequestView {
  if (body.previous_response_id !== undefined && body.previous_response_id !== null) {
    throw new RequestError(400, 'scripted model: previous_response_id is not supported; send the whole history (store: false)');
  }
  const history = items(body);
  // Codex's "responses lite" requests (its code-mode models) declare tools in an `additional_tools` input item.
  const extra = history.flatMap((item): unknown[] =>
    isObject(item) && item.type === 'additional_tools' && Array.isArray(item.tools) ? (item.tools as unknown[]) : [],
  );
  const tools = declaredTools([...(Array.isArray(body.tools) ? (body.tools as unknown[]) : []), ...extra]);
  const opening = [textOf(body.instructions)];
  for (const item of history) {
    if (isModelItem(item)) break;
    if (isObject(item) && typeOf(item) === 'message') opening.push(textOf(item.content));
  }
  return {
    model: typeof body.model === 'string' ? body.model : '',
    stream: body.stream === true,
    openingText: opening.join('\n'),
    modelTurns: countModelTurns(history, isModelItem),
    declaredTools: tools.names,
    namespacedTools: tools.namespaced,
  };
}

function usageOf(usage: Usage) {
  const input = usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
  return {
    input_tokens: input,
    // codex 0.171 also reads `cache_write_tokens` here; sent only when the script has some.
    input_tokens_details: { cached_tokens: usage.cacheReadTokens, ...(usage.cacheWriteTokens > 0 ? { cache_write_tokens: usage.cacheWriteTokens } : {}) },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + usage.outputTokens,
  };
}

const textPart = (text: string) => ({ type: 'output_text', text, annotations: [], logprobs: [] });

function callItem(call: AnswerToolCall, view: RequestView, status: string, done: boolean) {
  const name = view.namespacedTools?.get(call.name) ?? { name: call.name };
  if (call.text !== undefined)
    return { id: `ctc_${call.id}`, type: 'custom_tool_call', status, call_id: `call_${call.id}`, ...name, input: done ? call.text : '' };
  return { id: `fc_${call.id}`, type: 'function_call', status, call_id: `call_${call.id}`, ...name, arguments: done ? JSON.stringify(call.input ?? {}) : '' };
}

function outputOf(answer: Answer, view: RequestView, messageId: string) {
  return [
    ...(answer.text === undefined ? [] : [{ id: messageId, type: 'message', status: 'completed', role: 'assistant', content: [textPart(answer.text)] }]),
    ...answer.toolCalls.map((call) => callItem(call, view, 'completed', true)),
  ];
}

function responseObject(id: string, view: RequestView, status: string, output: unknown[], usage: ReturnType<typeof usageOf> | null) {
  return {
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status,
    error: null,
    incomplete_details: null,
    model: view.model,
    output,
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
    usage,
  };
}

function stream(response: ServerResponse, answer: Answer, view: RequestView, id: string, messageId: string): void {
  const events = openEventStream(response);
  let sequence = 0;
  const send = (type: string, data: object) => events.event(type, { type, sequence_number: sequence++, ...data });
  send('response.created', { response: responseObject(id, view, 'in_progress', [], null) });
  send('response.in_progress', { response: responseObject(id, view, 'in_progress', [], null) });
  let output_index = 0;
  if (answer.text !== undefined) {
    const item_id = messageId;
    send('response.output_item.added', { output_index, item: { id: item_id, type: 'message', status: 'in_progress', role: 'assistant', content: [] } });
    send('response.content_part.added', { item_id, output_index, content_index: 0, part: textPart('') });
    for (const delta of pieces(answer.text)) send('response.output_text.delta', { item_id, output_index, content_index: 0, delta, logprobs: [] });
    send('response.output_text.done', { item_id, output_index, content_index: 0, text: answer.text, logprobs: [] });
    send('response.content_part.done', { item_id, output_index, content_index: 0, part: textPart(answer.text) });
    send('response.output_item.done', { output_index, item: outputOf({ ...answer, toolCalls: [] }, view, item_id)[0] });
    output_index += 1;
  }
  for (const call of answer.toolCalls) {
    const item = callItem(call, view, 'in_progress', false);
    send('response.output_item.added', { output_index, item });
    const kind = call.text === undefined ? 'function_call_arguments' : 'custom_tool_call_input';
    const full = call.text ?? JSON.stringify(call.input ?? {});
    for (const delta of pieces(full)) send(`response.${kind}.delta`, { item_id: item.id, output_index, delta });
    send(`response.${kind}.done`, { item_id: item.id, output_index, ...(call.text === undefined ? { arguments: full } : { input: full }) });
    send('response.output_item.done', { output_index, item: callItem(call, view, 'completed', true) });
    output_index += 1;
  }
  send('response.completed', { response: responseObject(id, view, 'completed', outputOf(answer, view, messageId), usageOf(answer.usage)) });
  events.end();
}

export const openAiResponses: Protocol = {
  read: (body) => read(bodyObject(body)),
  reply(response, answer, view, responseId) {
    const id = `resp_${responseId}`;
    const messageId = `msg_${responseId}`;
    if (view.stream) return stream(response, answer, view, id, messageId);
    sendJson(response, 200, responseObject(id, view, 'completed', outputOf(answer, view, messageId), usageOf(answer.usage)));
  },
  error(response, status, message) {
    sendJson(response, status, { error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', param: null, code: null } });
  },
};
