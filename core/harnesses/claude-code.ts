import { containerPaths, jsonLines, num, text, withPrompt, type HarnessAdapter } from './types';

/**
 * Claude Code: `claude -p <prompt> --output-format json` prints one result object:
 * `{ type: "result", subtype, is_error, result, total_cost_usd, usage: { input_tokens,
 * output_tokens, cache_creation_input_tokens, cache_read_input_tokens } }`.
 */
export const claudeCode: HarnessAdapter = {
  output: 'stdout',
  command: (model) =>
    withPrompt(
      `claude -p "$(cat ${containerPaths.prompt})" --model "$1" --output-format json --dangerously-skip-permissions --add-dir ${containerPaths.workspace}`,
      model,
    ),
  parse(stdout) {
    const result = jsonLines(stdout).reverse().find((event) => event.type === 'result');
    if (!result) return { ok: false, problem: 'claude-code printed no result object' };
    const usage = (result.usage ?? {}) as Record<string, unknown>;
    const failed = result.is_error === true || (typeof result.subtype === 'string' && result.subtype !== 'success');
    return {
      ok: true,
      result: {
        status: failed ? 'error' : 'ok',
        summary: text(result.result, text(result.subtype, '')),
        usage: {
          inputTokens: num(usage.input_tokens) + num(usage.cache_creation_input_tokens) + num(usage.cache_read_input_tokens),
          outputTokens: num(usage.output_tokens),
          costUsd: num(result.total_cost_usd),
        },
      },
    };
  },
};
