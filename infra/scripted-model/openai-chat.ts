import type { ServerResponse } from 'node:http';
import { countModelTurns, type Answer, type RequestView, type Usage } from './conversation';
import type { Protocol } from './protocol';
import { bodyObject, isObject, openEventStream, pieces, requireArray, RequestError, sendJson, textOf } from './wire';

/** The OpenAI Chat Completions API, `POST /v1/chat/completions`. */

function read(body: Record<string, unknown>): RequestView {
  const messages = requireArray(body, 'messages');
  const opening: string[] = [];
  for (const message of messages) {
    if (!isObject(message) || message.role === 'assistant') break;
    if (message.role !== 'tool') opening.push(textOf(message.content));
  }
  const tools = Array.isArray(body.tools) ? body.tools : [];
  return {
    model: typeof body.model === 'string' ? body.model : '',
    stream: body.stream === true,
    openingText: opening.join('\n'),
    modelTurns: countModelTurns(messages, (message) => isObject(message) && message.role === 'assistant'),
    declaredTools: tools.flatMap((tool) => (isObject(tool) && isObject(tool.function) && typeof tool.function.name === 'string' ? [tool.function.name] : [])),
    streamUsage: isObject(body.stream_options) && body.stream_options.include_usage === true,
  };
}

function usageOf(usage: Usage) {
  const prompt = usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
  return {
    prompt_tokens: prompt,
    completion_tokens: usage.outputTokens,
    total_tokens: prompt + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cacheReadTokens },
    completion_tokens_details: { reasoning_tokens: 0 },
  };
}

function checkedCalls(answer: Answer) {
  return answer.toolCalls.map((call, index) => {
    if (call.text !== undefined)
      throw new RequestError(400, `scripted model: tool call "${call.name}" has free-form text input, which Chat Completions cannot carry (use input)`);
    return { index, id: `call_${call.id}`, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.input ?? {}) } };
  });
}

const finishReason = (answer: Answer) => (answer.toolCalls.length > 0 ? 'tool_calls' : 'stop');

function stream(response: ServerResponse, answer: Answer, view: RequestView, id: string): void {
  const includeUsage = view.streamUsage === true;
  const calls = checkedCalls(answer);
  const events = openEventStream(response);
  const created = Math.floor(Date.now() / 1000);
  // With stream_options.include_usage every chunk carries `usage: null` and a last chunk, without choices, the usage.
  const chunk = (delta: object, finish_reason: string | null = null) =>
    events.event(undefined, {
      id,
      object: 'chat.completion.chunk',
      created,
      model: view.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason }],
      ...(includeUsage ? { usage: null } : {}),
    });
  chunk({ role: 'assistant', content: answer.text === undefined ? null : '', refusal: null });
  for (const content of pieces(answer.text ?? '')) chunk({ content });
  for (const call of calls) {
    chunk({ tool_calls: [{ index: call.index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] });
    for (const part of pieces(call.function.arguments)) chunk({ tool_calls: [{ index: call.index, function: { arguments: part } }] });
  }
  chunk({}, finishReason(answer));
  if (includeUsage) events.event(undefined, { id, object: 'chat.completion.chunk', created, model: view.model, choices: [], usage: usageOf(answer.usage) });
  events.raw('data: [DONE]');
  events.end();
}

export const openAiChat: Protocol = {
  read: (body) => read(bodyObject(body)),
  reply(response, answer, view, responseId) {
    const id = `chatcmpl-${responseId}`;
    if (view.stream) return stream(response, answer, view, id);
    const calls = checkedCalls(answer).map(({ index: _index, ...call }) => call);
    const message = { role: 'assistant', content: answer.text ?? null, refusal: null, ...(calls.length > 0 ? { tool_calls: calls } : {}) };
    sendJson(response, 200, {
      id,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: view.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason(answer) }],
      usage: usageOf(answer.usage),
    });
  },
  error(response, status, message) {
    sendJson(response, status, { error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', param: null, code: null } });
  },
};
