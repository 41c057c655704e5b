import { containerPaths, jsonLines, num, text, withPrompt, type HarnessAdapter } from './types';

/**
 * opencode: `opencode run --format json` prints JSONL events. Each `step_finish`
 * carries `part.tokens { input, output, reasoning, cache { read, write } }` and
 * `part.cost`; `text` events carry the assistant's words; `error` events fail it. The prompt is
 * piped on stdin (`opencode run` reads a piped message), never one argv string (E2BIG). Its image
 * is not built here (no offline package), so it is unavailable unless an operator builds one.
 */
export const opencode: HarnessAdapter = {
  output: 'stdout',
  command: (model) => withPrompt(`opencode run --model "$1" --format json < ${containerPaths.prompt}`, model),
  parse(stdout) {
    const events = jsonLines(stdout);
    if (events.length === 0) return { ok: false, problem: 'opencode printed no JSON events' };
    let inputTokens = 0;
    let outputTokens = 0;
    let costUsd = 0;
    let said = '';
    let error: string | undefined;
    let finished = false;
    for (const event of events) {
      const part = (event.part ?? {}) as Record<string, unknown>;
      if (event.type === 'step_finish') {
        finished = true;
        const tokens = (part.tokens ?? {}) as Record<string, unknown>;
        const cache = (tokens.cache ?? {}) as Record<string, unknown>;
        inputTokens += num(tokens.input) + num(cache.read) + num(cache.write);
        outputTokens += num(tokens.output) + num(tokens.reasoning);
        costUsd += num(part.cost);
      } else if (event.type === 'text' && typeof part.text === 'string') {
        said = part.text;
      } else if (event.type === 'error') {
        const detail = (event.error ?? {}) as Record<string, unknown>;
        const data = (detail.data ?? {}) as Record<string, unknown>;
        error = text(data.message, text(detail.message, text(detail.name, 'error')));
      }
    }
    if (!finished && !error) return { ok: false, problem: 'opencode stopped before finishing a step' };
    return { ok: true, result: { status: error ? 'error' : 'ok', summary: error ?? said, usage: { inputTokens, outputTokens, costUsd } } };
  },
};
