import type { ServerResponse } from 'node:http';
import { countModelTurns, type Answer, type RequestView, type Usage } from './conversation';
import type { Protocol } from './protocol';
import { bodyObject, isObject, openEventStream, pieces, requireArray, sendJson, textOf } from './wire';

/** The Anthropic Messages API, `POST /v1/messages` (Claude Code adds `?beta=true`). */

function openingText(system: unknown, messages: unknown[]): string {
  const texts = [textOf(system)];
  for (const message of messages) {
    if (!isObject(message) || message.role === 'assistant') break;
    texts.push(textOf(message.content));
  }
  return texts.join('\n');
}

function read(body: Record<string, unknown>): RequestView {
  const messages = requireArray(body, 'messages');
  const tools = Array.isArray(body.tools) ? body.tools : [];
  return {
    model: typeof body.model === 'string' ? body.model : '',
    stream: body.stream === true,
    openingText: openingText(body.system, messages),
    modelTurns: countModelTurns(messages, (message) => isObject(message) && message.role === 'assistant'),
    declaredTools: tools.flatMap((tool) => (isObject(tool) && typeof tool.name === 'string' ? [tool.name] : [])),
  };
}

function usageOf(usage: Usage) {
  return {
    input_tokens: usage.inputTokens,
    cache_creation_input_tokens: usage.cacheWriteTokens,
    cache_read_input_tokens: usage.cacheReadTokens,
    output_tokens: usage.outputTokens,
    service_tier: 'standard',
  };
}

function contentOf(answer: Answer) {
  return [
    ...(answer.text === undefined ? [] : [{ type: 'text' as const, text: answer.text }]),
    ...answer.toolCalls.map((call) => ({ type: 'tool_use' as const, id: `toolu_${call.id}`, name: call.name, input: call.input ?? {} })),
  ];
}

const stopReason = (answer: Answer) => (answer.toolCalls.length > 0 ? 'tool_use' : 'end_turn');

function stream(response: ServerResponse, answer: Answer, view: RequestView, id: string): void {
  const events = openEventStream(response);
  const send = (type: string, data: object = {}) => events.event(type, { type, ...data });
  // message_start carries the input side of the usage; message_delta the final (cumulative) counts.
  const startUsage = { ...usageOf(answer.usage), output_tokens: Math.min(1, answer.usage.outputTokens) };
  send('message_start', {
    message: { id, type: 'message', role: 'assistant', model: view.model, content: [], stop_reason: null, stop_sequence: null, usage: startUsage },
  });
  send('ping');
  contentOf(answer).forEach((block, index) => {
    if (block.type === 'text') {
      send('content_block_start', { index, content_block: { type: 'text', text: '' } });
      for (const text of pieces(block.text)) send('content_block_delta', { index, delta: { type: 'text_delta', text } });
    } else {
      send('content_block_start', { index, content_block: { ...block, input: {} } });
      for (const partial_json of pieces(JSON.stringify(block.input))) send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json } });
    }
    send('content_block_stop', { index });
  });
  send('message_delta', { delta: { stop_reason: stopReason(answer), stop_sequence: null }, usage: usageOf(answer.usage) });
  send('message_stop');
  events.end();
}

export const anthropicMessages: Protocol = {
  read: (body) => read(bodyObject(body)),
  reply(response, answer, view, responseId) {
    const id = `msg_${responseId}`;
    if (view.stream) return stream(response, answer, view, id);
    sendJson(response, 200, {
      id,
      type: 'message',
      role: 'assistant',
      model: view.model,
      content: contentOf(answer),
      stop_reason: stopReason(answer),
      stop_sequence: null,
      usage: usageOf(answer.usage),
    });
  },
  error(response, status, message) {
    const type = status === 404 ? 'not_found_error' : status === 413 ? 'request_too_large' : status >= 500 ? 'api_error' : 'invalid_request_error';
    sendJson(response, status, { type: 'error', error: { type, message } });
  },
};
