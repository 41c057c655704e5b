import { containerPaths, jsonLines, num, tarmacRun, text, type HarnessAdapter } from './types';

/** opencode's state in a session: its database (the sessions a follow-up continues), per attempt. */
const opencodeState = `${containerPaths.conversation}/opencode`;

/**
 * Switches of opencode 1.18 that keep a session to the image's configuration and off the network:
 * no project configuration (the branch's `opencode.json`, `.opencode/`, `AGENTS.md`), the global
 * configuration directory the image's read-only, empty one (opencode installs packages into a
 * writable one), no model catalog download, no update check, no plugins, no downloaded language
 * servers, no Claude Code files, no sharing. The configuration itself is the image's
 * `/etc/opencode/opencode.json`, which overrides every other source (images/agent-opencode/README.md).
 */
const opencodeSwitches = [
  'OPENCODE_DISABLE_PROJECT_CONFIG=1',
  'XDG_CONFIG_HOME=/opt/tarmac/opencode/config-home',
  'OPENCODE_DISABLE_MODELS_FETCH=1',
  'OPENCODE_DISABLE_AUTOUPDATE=1',
  'OPENCODE_PURE=1',
  'OPENCODE_DISABLE_DEFAULT_PLUGINS=1',
  'OPENCODE_DISABLE_LSP_DOWNLOAD=1',
  'OPENCODE_DISABLE_CLAUDE_CODE=1',
  'OPENCODE_DISABLE_EXTERNAL_SKILLS=1',
  'OPENCODE_DISABLE_SHARE=1',
];

/**
 * The session script; the model arrives as `$1` (never interpreted by the shell). The conversation
 * directory is the agent's to write (run_command runs in this container as the same user), so at
 * every start the script keeps only opencode's database there; everything else opencode keeps
 * (logs, caches, credentials) lives on the container's own /tmp and dies with it.
 */
function sessionScript(resume: boolean): string {
  return [
    'set -eu',
    `state=${opencodeState}`,
    'mkdir -p "$state"',
    `find "$state" -mindepth 1 -maxdepth 1 ! -name opencode.db ! -name opencode.db-wal ! -name opencode.db-shm -exec rm -rf -- {} +`,
    ...opencodeSwitches.map((assignment) => `export ${assignment}`),
    'export OPENCODE_DB="$state/opencode.db"',
    [
      'exec opencode run --format json',
      // The newest session of this working directory: the one the continued attempt left.
      ...(resume ? ['--continue'] : []),
      // A title of its own: opencode would otherwise ask the model for one (a request the session did not need).
      '--title tarmac-session',
      '--model "$1"',
      `< ${containerPaths.prompt}`,
    ].join(' '),
  ].join('\n');
}

/**
 * opencode: `opencode run --format json` with the prompt on stdin prints JSONL events, each
 * `{ type, timestamp, sessionID, … }`: `step_start`; `tool_use` (a finished tool call, its `part.state`
 * completed or error); `text` (a finished text part, `part.text`); `step_finish` with
 * `part.tokens { input, output, reasoning, cache { read, write } }` and `part.cost`; `error` with
 * `error { name, data { message } }` (then it exits 1).
 *
 * It runs under `tarmac-run`, which first puts the model gateway on the container's loopback. Its
 * tools are the tool gateway's only (the image's configuration denies every built-in tool, so
 * opencode does not offer them). A follow-up continues the newest session (`--continue`) of the
 * copy of the earlier attempt's database: the model sees the earlier turns. The usage it reports is
 * its own; the model gateway's metering is the one Tarmac uses.
 */
export const opencode: HarnessAdapter = {
  output: 'stdout',
  resumable: true,
  command: (model, conversation) => [tarmacRun, 'sh', '-c', sessionScript(conversation.resume), 'tarmac-harness', model],
  // The image's configuration reads the base URL from here for both providers (`/v1` included, as
  // both SDKs expect); its keys are a placeholder the model gateway replaces with the worker's key.
  modelEnv: (baseUrl) => [`TARMAC_MODEL_BASE_URL=${baseUrl}/v1`],
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
        error = text(data.message, text(detail.name, 'opencode reported an error'));
      }
    }
    if (!finished && !error) return { ok: false, problem: 'opencode stopped before finishing a step' };
    return { ok: true, result: { status: error ? 'error' : 'ok', summary: error ?? said, usage: { inputTokens, outputTokens, costUsd } } };
  },
};
