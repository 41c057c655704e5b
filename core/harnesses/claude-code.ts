import { containerPaths, jsonLines, num, text, withPrompt, type HarnessAdapter } from './types';

/** Where the agent images carry the model forwarder and its launcher (images/shared/). */
export const tarmacRun = '/opt/tarmac/shared/tarmac-run';

/** Claude Code's tools a session may use without asking (in `-p` mode anything else is denied). */
export const claudeCodeAllowedTools = 'Bash,Read,Edit,Write,Glob,Grep';

/**
 * Claude Code: `claude -p --output-format json` with the prompt on stdin prints one result
 * object: `{ type: "result", subtype, is_error, result, total_cost_usd, usage: { input_tokens,
 * output_tokens, cache_creation_input_tokens, cache_read_input_tokens } }`.
 *
 * It runs under `tarmac-run`, which first puts the model gateway on the container's loopback;
 * `modelEnv` points the CLI there. The prompt comes from the file on stdin (never one argv
 * string: large prompts hit E2BIG), the model is `$1` (never interpreted by the shell).
 */
export const claudeCode: HarnessAdapter = {
  output: 'stdout',
  command: (model) => [
    tarmacRun,
    ...withPrompt(`claude -p --model "$1" --output-format json --allowedTools ${claudeCodeAllowedTools} < ${containerPaths.prompt}`, model),
  ],
  modelEnv: (baseUrl) => [
    `ANTHROPIC_BASE_URL=${baseUrl}`,
    // A placeholder: the model gateway replaces it with the worker's key (or sends none).
    'ANTHROPIC_API_KEY=tarmac-model-gateway',
    'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1',
    // MCP tools declared up front rather than behind ToolSearch.
    'ENABLE_TOOL_SEARCH=false',
  ],
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
