/**
 * A small client for the scripted model endpoint's tests: posts JSON and reads the answer off the
 * wire, JSON or server-sent events. It also folds streams back into messages the way the providers'
 * SDKs do, so a test can check that a stream says the same as the non-streamed answer.
 */

export interface SseEvent {
  /** The `event:` field; absent for Chat Completions chunks. */
  event?: string;
  /** The parsed `data:` JSON, or the raw text when it is not JSON (`[DONE]`). */
  data: any;
}

export interface ModelReply {
  status: number;
  contentType: string;
  json?: any;
  events?: SseEvent[];
}

export function parseSse(text: string): SseEvent[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim().length > 0)
    .map((block) => {
      const event: SseEvent = { data: undefined };
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event.event = line.slice('event: '.length);
        if (line.startsWith('data: ')) {
          const raw = line.slice('data: '.length);
          try {
            event.data = JSON.parse(raw);
          } catch {
            event.data = raw;
          }
        }
      }
      return event;
    });
}

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<ModelReply> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const contentType = response.headers.get('content-type') ?? '';
  const text = await response.text();
  if (contentType.startsWith('text/event-stream')) return { status: response.status, contentType, events: parseSse(text) };
  return { status: response.status, contentType, json: text ? JSON.parse(text) : undefined };
}

/** Folds an Anthropic Messages stream into the message it describes. */
export function foldAnthropicStream(events: SseEvent[]) {
  const start = events.find((e) => e.event === 'message_start')?.data.message;
  const blocks: any[] = [];
  const json: string[] = [];
  let usage = { ...start?.usage };
  let stopReason: string | undefined;
  for (const { event, data } of events) {
    if (event !== data.type) throw new Error(`event name ${event} differs from data.type ${data.type}`);
    if (event === 'content_block_start') {
      blocks[data.index] = { ...data.content_block };
      json[data.index] = '';
    }
    if (event === 'content_block_delta' && data.delta.type === 'text_delta') blocks[data.index].text += data.delta.text;
    if (event === 'content_block_delta' && data.delta.type === 'input_json_delta') json[data.index] += data.delta.partial_json;
    if (event === 'content_block_stop' && blocks[data.index].type === 'tool_use') blocks[data.index].input = JSON.parse(json[data.index] || '{}');
    if (event === 'message_delta') {
      usage = { ...usage, ...data.usage };
      stopReason = data.delta.stop_reason;
    }
  }
  return { id: start?.id, model: start?.model, content: blocks, stop_reason: stopReason, usage };
}

/** Folds a Chat Completions stream into the message it describes. */
export function foldChatStream(events: SseEvent[]) {
  let content: string | null = null;
  const calls: any[] = [];
  let finishReason: string | undefined;
  let usage: any;
  for (const { data } of events) {
    if (data === '[DONE]') break;
    if (data.usage) usage = data.usage;
    const choice = data.choices[0];
    if (!choice) continue;
    if (typeof choice.delta.content === 'string') content = (content ?? '') + choice.delta.content;
    for (const call of choice.delta.tool_calls ?? []) {
      calls[call.index] ??= { id: call.id, type: call.type, function: { name: call.function.name, arguments: '' } };
      calls[call.index].function.arguments += call.function.arguments ?? '';
    }
    if (choice.finish_reason) finishReason = choice.finish_reason;
  }
  return { content, tool_calls: calls, finish_reason: finishReason, usage };
}

/** Folds a Responses stream: the output items as `response.output_item.done` gave them, and the final response. */
export function foldResponsesStream(events: SseEvent[]) {
  const deltas = new Map<string, string>();
  for (const { data } of events) {
    if (typeof data.delta === 'string' && data.item_id) deltas.set(data.item_id, (deltas.get(data.item_id) ?? '') + data.delta);
  }
  const items = events.filter((e) => e.event === 'response.output_item.done').map((e) => e.data.item);
  const completed = events.find((e) => e.event === 'response.completed')?.data.response;
  return { items, deltas, completed };
}
