import { containerPaths, jsonLines, num, tarmacRun, text, type HarnessAdapter } from './types';

/** Codex's home in a session: its recorded sessions (what a follow-up resumes), per attempt. */
const codexHome = `${containerPaths.conversation}/codex`;

/** What the image carries for Codex (images/agent-codex/codex/): config.toml, models.json, instructions.md. */
const codexImageDir = '/opt/tarmac/codex';

/**
 * The session script; the model arrives as `$1`, the base URL as `$TARMAC_MODEL_BASE_URL` (see
 * `modelEnv`), so neither is ever interpreted by the shell. The conversation directory is the
 * agent's to write (run_command runs in this container as the same user), so at every start the
 * script keeps only Codex's recorded sessions from it and lays the image's config.toml afresh:
 * nothing an earlier attempt left there configures this one.
 */
function sessionScript(resume: boolean): string {
  return [
    'set -eu',
    `export CODEX_HOME=${codexHome}`,
    'mkdir -p "$CODEX_HOME/sessions"',
    'find "$CODEX_HOME" -mindepth 1 -maxdepth 1 ! -name sessions -exec rm -rf -- {} +',
    `cp ${codexImageDir}/config.toml "$CODEX_HOME/config.toml"`,
    [
      'exec codex exec',
      // The newest recorded session of this working directory: the one the continued attempt left.
      ...(resume ? ['resume --last'] : []),
      // Unknown config keys are an error, not silently ignored: a Codex that renamed a switch of
      // config.toml fails instead of quietly giving its own tools back.
      '--json --skip-git-repo-check --strict-config',
      '-c "model_providers.tarmac.base_url=\\"$TARMAC_MODEL_BASE_URL\\""',
      '--model "$1"',
      `- < ${containerPaths.prompt}`,
    ].join(' '),
  ].join('\n');
}

/**
 * Codex: `codex exec --json` with the prompt on stdin prints JSONL events: `thread.started`,
 * `turn.started`, `item.completed` (an `agent_message` with its `text`, an `mcp_tool_call`, an
 * `error` item for a warning), `turn.completed` with `usage { input_tokens, cached_input_tokens,
 * output_tokens }`, `turn.failed`, and top-level `error` events (also while it retries a request).
 *
 * It runs under `tarmac-run`, which first puts the model gateway on the container's loopback.
 * Its tool surface is the tool gateway's MCP tools only, as far as Codex 0.171 allows (the image's
 * config.toml and models.json; images/agent-codex/README.md says what is enforced and what is
 * not). A follow-up resumes the conversation (`codex exec resume --last`) from the copy of the
 * earlier attempt's sessions: the model sees the earlier turns. Codex reports no cost, and on a
 * resumed thread its usage counts the whole thread; the model gateway's metering wins anyway.
 */
export const codex: HarnessAdapter = {
  output: 'stdout',
  resumable: true,
  command: (model, conversation) => [tarmacRun, 'sh', '-c', sessionScript(conversation.resume), 'tarmac-harness', model],
  modelEnv: (baseUrl) => [
    `TARMAC_MODEL_BASE_URL=${baseUrl}/v1`,
    // A placeholder (config.toml's env_key): the model gateway replaces it with the worker's key.
    'TARMAC_MODEL_GATEWAY_KEY=tarmac-model-gateway',
  ],
  parse(stdout) {
    let inputTokens = 0;
    let outputTokens = 0;
    let message = '';
    let completed = false;
    // The turn's fate: a `turn.failed`, or an `error` no later completed turn made up for (Codex
    // prints `error` events while it reconnects; a turn that then completes is not an error).
    let failure: string | undefined;
    for (const event of jsonLines(stdout)) {
      if (event.type === 'turn.completed') {
        completed = true;
        failure = undefined;
        const usage = (event.usage ?? {}) as Record<string, unknown>;
        // cached_input_tokens are a subset of input_tokens, not an addition.
        inputTokens += num(usage.input_tokens);
        outputTokens += num(usage.output_tokens);
      } else if (event.type === 'item.completed') {
        const item = (event.item ?? {}) as Record<string, unknown>;
        if (item.type === 'agent_message' && typeof item.text === 'string') message = item.text;
      } else if (event.type === 'turn.failed') {
        const detail = (event.error ?? {}) as Record<string, unknown>;
        failure = text(detail.message, 'codex turn failed');
      } else if (event.type === 'error') {
        failure = text(event.message, 'codex reported an error');
      }
    }
    if (!completed && failure === undefined) return { ok: false, problem: 'codex printed no completed turn' };
    return {
      ok: true,
      result: { status: failure === undefined ? 'ok' : 'error', summary: failure ?? message, usage: { inputTokens, outputTokens, costUsd: 0 } },
    };
  },
};
