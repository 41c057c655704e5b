import type { ModelProvider, TokenCounts } from '../../core/model-pricing';
import { SseReader, type SseEvent } from './sse-reader';

/**
 * Reading usage out of model responses, exactly as the provider reports it:
 *
 * - Anthropic Messages: `usage` of the message (non-streaming), or, streaming, the
 *   `message_start.message.usage` and the `message_delta.usage` (cumulative counts:
 *   the last one wins). `input_tokens` there excludes the cache; the cache counts are
 *   added to make `inputTokens`.
 * - OpenAI Chat Completions: `usage` of the completion, or of the final chunk of a
 *   stream (present when the request asked `stream_options.include_usage`; the gateway
 *   asks it). `prompt_tokens` includes `cached_tokens`.
 * - OpenAI Responses: `usage` of the response, or of `response.completed` (or
 *   `.incomplete` / `.failed`) in a stream.
 */

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : 0);
const hasCount = (usage: Json, ...keys: string[]) => keys.some((key) => typeof usage[key] === 'number');

/** Anthropic `usage` → counts; undefined when it is not a usage object. Pure. */
export function anthropicTokens(usage: unknown): TokenCounts | undefined {
  if (!isObject(usage) || !hasCount(usage, 'input_tokens', 'output_tokens')) return undefined;
  const creation = count(usage.cache_creation_input_tokens);
  const read = count(usage.cache_read_input_tokens);
  return {
    inputTokens: count(usage.input_tokens) + creation + read,
    outputTokens: count(usage.output_tokens),
    cacheCreationInputTokens: creation,
    cacheReadInputTokens: read,
    reasoningTokens: 0,
  };
}

/** OpenAI `usage` (Chat Completions or Responses shape) → counts; undefined when it is neither. Pure. */
export function openaiTokens(usage: unknown): TokenCounts | undefined {
  if (!isObject(usage)) return undefined;
  if (hasCount(usage, 'prompt_tokens', 'completion_tokens')) {
    const prompt = isObject(usage.prompt_tokens_details) ? usage.prompt_tokens_details : {};
    const completion = isObject(usage.completion_tokens_details) ? usage.completion_tokens_details : {};
    return {
      inputTokens: count(usage.prompt_tokens),
      outputTokens: count(usage.completion_tokens),
      cacheCreationInputTokens: 0,
      cacheReadInputTokens: count(prompt.cached_tokens),
      reasoningTokens: count(completion.reasoning_tokens),
    };
  }
  if (hasCount(usage, 'input_tokens', 'output_tokens')) {
    const input = isObject(usage.input_tokens_details) ? usage.input_tokens_details : {};
    const output = isObject(usage.output_tokens_details) ? usage.output_tokens_details : {};
    return {
      inputTokens: count(usage.input_tokens),
      outputTokens: count(usage.output_tokens),
      cacheCreationInputTokens: 0,
      cacheReadInputTokens: count(input.cached_tokens),
      reasoningTokens: count(output.reasoning_tokens),
    };
  }
  return undefined;
}

/** Usage and model of a complete (non-streaming) JSON response body. Pure. */
export function usageOfBody(provider: ModelProvider, body: unknown): { tokens?: TokenCounts; model?: string; usage?: unknown } {
  if (!isObject(body)) return {};
  const model = typeof body.model === 'string' ? body.model : undefined;
  const tokens = provider === 'anthropic' ? anthropicTokens(body.usage) : openaiTokens(body.usage);
  return tokens ? { tokens, model, usage: body.usage } : { model };
}

/** What a streamed response amounted to, for the meter and the transcript. */
interface StreamSummary {
  tokens?: TokenCounts;
  model?: string;
  /** The provider's usage object(s) as sent. */
  usage?: unknown;
  /** The response rebuilt from its events: text, tool calls, stop reason (capped). */
  assembled: Json;
  events: number;
  /** Events whose data was not JSON (besides OpenAI's `[DONE]`). */
  unreadable: number;
  /** An `error` event the provider sent mid-stream. */
  error?: unknown;
  overflowed: boolean;
  /** Characters of text not kept in `assembled` (beyond the cap). */
  droppedChars: number;
}

/**
 * Follows a streamed model response: every SSE event as it arrives; usage exactly as
 * the provider reports it; the response's text and tool calls rebuilt for the
 * transcript, up to `maxTextChars` (the rest is counted).
 */
export class StreamMeter {
  private readonly reader: SseReader;
  private readonly assembled: Json = {};
  private startUsage: Json = {};
  private deltaUsage: Json = {};
  private lastUsage: unknown;
  private model: string | undefined;
  private unreadable = 0;
  private error: unknown;
  private keptChars = 0;
  private droppedChars = 0;

  constructor(
    private readonly provider: ModelProvider,
    private readonly maxTextChars = 1024 * 1024,
  ) {
    this.reader = new SseReader((event) => this.onEvent(event));
  }

  push(chunk: Buffer): void {
    this.reader.push(chunk);
  }

  end(): StreamSummary {
    this.reader.end();
    return {
      ...this.usage(),
      assembled: this.assembled,
      events: this.reader.events,
      unreadable: this.unreadable,
      ...(this.error === undefined ? {} : { error: this.error }),
      overflowed: this.reader.overflowed,
      droppedChars: this.droppedChars,
    };
  }

  private usage(): Pick<StreamSummary, 'tokens' | 'model' | 'usage'> {
    const model = this.model;
    if (this.provider === 'anthropic') {
      // Counts in message_delta are cumulative: each field's largest value is its final one.
      const merged: Json = { ...this.startUsage };
      for (const [key, value] of Object.entries(this.deltaUsage)) {
        merged[key] = typeof value === 'number' && typeof merged[key] === 'number' ? Math.max(merged[key], value) : value;
      }
      const tokens = anthropicTokens(merged);
      return tokens ? { tokens, model, usage: { message_start: this.startUsage, message_delta: this.deltaUsage } } : { model };
    }
    const tokens = openaiTokens(this.lastUsage);
    return tokens ? { tokens, model, usage: this.lastUsage } : { model };
  }

  /** Appends text to a field of an object of `assembled`, within the cap. */
  private append(target: Json, key: string, text: unknown): void {
    if (typeof text !== 'string' || text.length === 0) return;
    const room = Math.max(0, this.maxTextChars - this.keptChars);
    const kept = text.slice(0, room);
    this.keptChars += kept.length;
    this.droppedChars += text.length - kept.length;
    if (kept.length > 0) target[key] = `${typeof target[key] === 'string' ? target[key] : ''}${kept}`;
  }

  private slot(list: string, index: unknown, initial: () => Json): Json {
    const items = (this.assembled[list] ??= []) as Json[];
    const at = count(index);
    if (at > 1000) return {};
    while (items.length <= at) items.push({});
    if (Object.keys(items[at]!).length === 0) items[at] = initial();
    return items[at]!;
  }

  private onEvent({ event, data }: SseEvent): void {
    if (data === '[DONE]') return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      this.unreadable += 1;
      return;
    }
    if (!isObject(parsed)) return;
    const type = typeof parsed.type === 'string' ? parsed.type : event;
    if (type === 'error' || (isObject(parsed.error) && this.provider === 'openai' && !('choices' in parsed))) {
      this.error = parsed.error ?? parsed;
      return;
    }
    if (this.provider === 'anthropic') this.onAnthropic(type, parsed);
    else if ('choices' in parsed || parsed.object === 'chat.completion.chunk') this.onChatChunk(parsed);
    else this.onResponsesEvent(type, parsed);
  }

  private onAnthropic(type: string, event: Json): void {
    switch (type) {
      case 'message_start': {
        const message = isObject(event.message) ? event.message : {};
        if (typeof message.model === 'string') this.model = message.model;
        if (isObject(message.usage)) this.startUsage = { ...message.usage };
        Object.assign(this.assembled, { id: message.id, model: message.model, role: message.role });
        return;
      }
      case 'content_block_start': {
        const block = isObject(event.content_block) ? event.content_block : {};
        const { text: _text, thinking: _thinking, input: _input, ...rest } = block;
        this.slot('content', event.index, () => ({ ...rest }));
        return;
      }
      case 'content_block_delta': {
        const delta = isObject(event.delta) ? event.delta : {};
        const block = this.slot('content', event.index, () => ({ type: 'unknown' }));
        if (delta.type === 'text_delta') this.append(block, 'text', delta.text);
        else if (delta.type === 'input_json_delta') this.append(block, 'input', delta.partial_json);
        else if (delta.type === 'thinking_delta') this.append(block, 'thinking', delta.thinking);
        return;
      }
      case 'message_delta': {
        const delta = isObject(event.delta) ? event.delta : {};
        if (delta.stop_reason !== undefined) this.assembled.stop_reason = delta.stop_reason;
        if (isObject(event.usage)) {
          for (const [key, value] of Object.entries(event.usage)) {
            const before = this.deltaUsage[key];
            this.deltaUsage[key] = typeof value === 'number' && typeof before === 'number' ? Math.max(before, value) : value;
          }
        }
        return;
      }
      default:
        return;
    }
  }

  private onChatChunk(chunk: Json): void {
    if (typeof chunk.model === 'string') this.model = chunk.model;
    if (chunk.usage !== undefined && chunk.usage !== null) this.lastUsage = chunk.usage;
    if (!Array.isArray(chunk.choices)) return;
    for (const choice of chunk.choices as unknown[]) {
      if (!isObject(choice)) continue;
      const target = this.slot('choices', choice.index, () => ({ index: count(choice.index) }));
      const delta = isObject(choice.delta) ? choice.delta : {};
      this.append(target, 'content', delta.content);
      this.append(target, 'reasoning', delta.reasoning_content ?? delta.reasoning);
      if (choice.finish_reason) target.finish_reason = choice.finish_reason;
      if (!Array.isArray(delta.tool_calls)) continue;
      const calls = (target.tool_calls ??= []) as Json[];
      for (const call of delta.tool_calls as unknown[]) {
        if (!isObject(call)) continue;
        const at = count(call.index);
        if (at > 1000) continue;
        while (calls.length <= at) calls.push({});
        const fn = isObject(call.function) ? call.function : {};
        if (typeof call.id === 'string') calls[at]!.id = call.id;
        if (typeof fn.name === 'string') calls[at]!.name = fn.name;
        this.append(calls[at]!, 'arguments', fn.arguments);
      }
    }
  }

  private onResponsesEvent(type: string, event: Json): void {
    const response = isObject(event.response) ? event.response : undefined;
    if (response && typeof response.model === 'string') this.model = response.model;
    if (type === 'response.output_text.delta') this.append(this.assembled, 'output_text', event.delta);
    else if (type === 'response.function_call_arguments.delta') this.append(this.assembled, 'function_call_arguments', event.delta);
    else if (response && (type === 'response.completed' || type === 'response.incomplete' || type === 'response.failed')) {
      if (response.usage !== undefined && response.usage !== null) this.lastUsage = response.usage;
      this.assembled.status = response.status;
      // The final event carries the whole output; kept within the same cap as the deltas.
      const output = JSON.stringify(response.output ?? null);
      if (this.keptChars + output.length <= this.maxTextChars) {
        this.keptChars += output.length;
        this.assembled.output = response.output;
      } else this.droppedChars += output.length;
    }
  }
}
