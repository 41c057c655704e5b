import { containerPaths, jsonLines, num, text, withPrompt, type HarnessAdapter } from './types';

/**
 * Codex: `codex exec --json` prints JSONL events: `turn.completed` with
 * `usage { input_tokens, cached_input_tokens, output_tokens }`, `item.completed`
 * with `item.type === "agent_message"` and its `text`, `turn.failed` / `error`.
 * The container is the sandbox, so Codex's own is bypassed. Codex reports no cost.
 */
export const codex: HarnessAdapter = {
  output: 'stdout',
  command: (model) =>
    withPrompt(
      `codex exec --json --model "$1" --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check --cd ${containerPaths.workspace} "$(cat ${containerPaths.prompt})"`,
      model,
    ),
  parse(stdout) {
    const events = jsonLines(stdout);
    let inputTokens = 0;
    let outputTokens = 0;
    let message = '';
    let error: string | undefined;
    let completed = false;
    for (const event of events) {
      if (event.type === 'turn.completed') {
        completed = true;
        const usage = (event.usage ?? {}) as Record<string, unknown>;
        // cached_input_tokens are a subset of input_tokens, not an addition.
        inputTokens += num(usage.input_tokens);
        outputTokens += num(usage.output_tokens);
      } else if (event.type === 'item.completed') {
        const item = (event.item ?? {}) as Record<string, unknown>;
        if (item.type === 'agent_message' && typeof item.text === 'string') message = item.text;
      } else if (event.type === 'turn.failed' || event.type === 'error') {
        const detail = (event.error ?? {}) as Record<string, unknown>;
        error = text(detail.message, text(event.message, 'codex turn failed'));
      }
    }
    if (!completed && !error) return { ok: false, problem: 'codex printed no completed turn' };
    return { ok: true, result: { status: error ? 'error' : 'ok', summary: error ?? message, usage: { inputTokens, outputTokens, costUsd: 0 } } };
  },
};
