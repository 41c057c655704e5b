import { containerPaths, jsonLines, tarmacRun, type HarnessAdapter } from './types';

/** The session launcher in the image (images/agent-aider/aider/tarmac-aider): aider in-process, its switches ours. */
const launcher = '/opt/tarmac/aider/tarmac-aider';

const scale = { '': 1, k: 1_000, m: 1_000_000 } as const;

/** aider's rounded counts: `950`, `2.1k`, `12k`, `1.2M`. */
function tokens(amount: string, suffix: string): number {
  return Math.round(Number(amount.replace(/,/g, '')) * scale[suffix.toLowerCase() as keyof typeof scale]);
}

/**
 * aider's report after each model answer, e.g.
 * `Tokens: 2.2k sent, 1.0k cache write, 65 received. Cost: $0.0076 message, $0.0076 session.`
 * (cache parts only when there are any; the cost sentence may sit on the next line).
 */
const report =
  /^Tokens: ([\d.,]+)([kKmM]?) sent,(?: ([\d.,]+)([kKmM]?) cache write,)?(?: ([\d.,]+)([kKmM]?) cache hit,)? ([\d.,]+)([kKmM]?) received\.(?:\s+Cost: \$([\d.]+) message, \$([\d.]+) session\.)?/gm;

/**
 * Aider, which has no MCP client: it edits the session's copy itself, with SEARCH/REPLACE blocks
 * of the model's answers, and commits them (images/agent-aider/README.md says what that means for
 * the tool gateway). It runs under `tarmac-run` (the model gateway on the container's loopback)
 * through the image's launcher, which fixes every switch, keeps branch content from configuring
 * aider, continues a resolver's rebase, and ends stdout with one JSON line:
 * `{"type": "tarmac-aider.end", "reply": "<aider's last answer>", "errors": [...], "rebase"?: ...}`.
 *
 * Usage is read from aider's own `Tokens: … sent, … received.` lines (rounded: `2.1k`); the
 * model gateway's exact metering wins anyway. The prompt file and the model are arguments, never
 * interpreted by a shell. A follow-up (`--resume`) restores the conversation from the chat history
 * the earlier attempt left in its conversation directory (aider's `--restore-chat-history`).
 */
export const aider: HarnessAdapter = {
  output: 'stdout',
  ownTools: true,
  resumable: true,
  command: (model, conversation) => [tarmacRun, launcher, containerPaths.prompt, model, ...(conversation.resume ? ['--resume'] : [])],
  modelEnv: (baseUrl) => [
    // Both protocols, as litellm reads them; the model decides which one aider speaks.
    `OPENAI_API_BASE=${baseUrl}/v1`,
    `ANTHROPIC_API_BASE=${baseUrl}`,
    // Placeholders: the model gateway replaces them with the worker's key.
    'OPENAI_API_KEY=tarmac-model-gateway',
    'ANTHROPIC_API_KEY=tarmac-model-gateway',
    // litellm's price map from its own installed copy, not downloaded at start.
    'LITELLM_LOCAL_MODEL_COST_MAP=True',
  ],
  parse(stdout) {
    const end = jsonLines(stdout)
      .filter((event) => event.type === 'tarmac-aider.end')
      .at(-1);
    let inputTokens = 0;
    let outputTokens = 0;
    let costUsd = 0;
    for (const match of stdout.matchAll(report)) {
      // aider's "sent" counts every input token, cached ones included.
      inputTokens += tokens(match[1]!, match[2]!);
      outputTokens += tokens(match[7]!, match[8]!);
      if (match[10]) costUsd = Number(match[10]);
    }
    if (!end) return { ok: false, problem: 'aider ended without its end line (tarmac-aider.end)' };
    const reply = typeof end.reply === 'string' ? end.reply : '';
    const errors = Array.isArray(end.errors) ? end.errors.filter((error): error is string => typeof error === 'string') : [];
    const rebase = typeof end.rebase === 'string' ? end.rebase : undefined;
    const failed = reply === '' || (rebase !== undefined && rebase.startsWith('failed'));
    const summary = failed ? [errors.at(-1) ?? 'aider gave no answer', rebase ?? ''].filter(Boolean).join('\n') : reply;
    return { ok: true, result: { status: failed ? 'error' : 'ok', summary, usage: { inputTokens, outputTokens, costUsd } } };
  },
};
