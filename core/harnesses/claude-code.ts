import { containerPaths, conversationId, jsonLines, num, tarmacRun, text, withPrompt, type HarnessAdapter } from './types';

/**
 * Claude Code's tool surface in a session: no built-in tool at all (`--tools ""`), only the tool
 * gateway's MCP server (`--strict-mcp-config`, images/shared/mcp.json), every tool of it allowed.
 * So every read, edit and command goes through the gateway: grounding, the circuit breaker and the
 * telemetry apply. `--setting-sources user` keeps the workspace's `.claude/` settings (branch
 * content) from adding tools, hooks or permissions; the user settings live in the session's own
 * conversation directory.
 */
const claudeCodeToolFlags = `--tools "" --strict-mcp-config --mcp-config /opt/tarmac/shared/mcp.json --allowedTools mcp__tarmac --setting-sources user`;

/**
 * Claude Code: `claude -p --output-format json` with the prompt on stdin prints one result
 * object: `{ type: "result", subtype, is_error, result, total_cost_usd, usage: { input_tokens,
 * output_tokens, cache_creation_input_tokens, cache_read_input_tokens } }`.
 *
 * It runs under `tarmac-run`, which first puts the model gateway on the container's loopback;
 * `modelEnv` points the CLI there. The prompt comes from the file on stdin (never one argv
 * string: large prompts hit E2BIG), the model is `$1` (never interpreted by the shell). A session
 * starts the conversation named by its id; a follow-up resumes it (`--resume`): the model sees the
 * earlier turns.
 */
export const claudeCode: HarnessAdapter = {
  output: 'stdout',
  resumable: true,
  command: (model, conversation) => [
    tarmacRun,
    ...withPrompt(
      `claude -p --model "$1" --output-format json ${conversation.resume ? '--resume' : '--session-id'} ${conversationId(conversation)} ${claudeCodeToolFlags} < ${containerPaths.prompt}`,
      model,
    ),
  ],
  modelEnv: (baseUrl) => [
    // Its sessions (the conversation a follow-up resumes) and settings, kept per session by the worker.
    `CLAUDE_CONFIG_DIR=${containerPaths.conversation}/claude`,
    `ANTHROPIC_BASE_URL=${baseUrl}`,
    // A placeholder: the model gateway replaces it with the worker's key (or sends none).
    'ANTHROPIC_API_KEY=tarmac-model-gateway',
    'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1',
    // MCP tools declared up front rather than behind ToolSearch.
    'ENABLE_TOOL_SEARCH=false',
  ],
  parse(stdout) {
    const result = jsonLines(stdout)
      .reverse()
      .find((event) => event.type === 'result');
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
