import assert from 'node:assert/strict';
import { conversationUuid } from '../../activities/sessions/sessions';
import { conversationId } from '../../core/harnesses/types';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { adapters, modelProviderOf } from '../../core/harnesses';
import type { AdapterName } from '../../core/recipe-schemas';

const sample = (name: string) => readFileSync(join(__dirname, 'fixtures', 'harness-output', name), 'utf8');

describe('harness adapters: output parsing from recorded samples', () => {
  const cases = [
    {
      name: 'claude-code success',
      adapter: 'claude-code' as const,
      stdout: sample('claude-code-success.json'),
      expected: { status: 'ok', usage: { inputTokens: 1240 + 5200 + 31000, outputTokens: 1830, costUsd: 0.0845 }, summary: /start-all/ },
    },
    {
      name: 'claude-code hit max turns',
      adapter: 'claude-code' as const,
      stdout: sample('claude-code-error.json'),
      expected: { status: 'error', usage: { inputTokens: 90000, outputTokens: 12000, costUsd: 1.52 }, summary: /max_turns/ },
    },
    {
      name: 'codex completed turn',
      adapter: 'codex' as const,
      stdout: sample('codex.jsonl'),
      expected: { status: 'ok', usage: { inputTokens: 26549, outputTokens: 1590, costUsd: 0 }, summary: /Renamed the target/ },
    },
    {
      name: 'codex 0.171 in a session: MCP tool calls through the gateway (a warning line before the events)',
      adapter: 'codex' as const,
      stdout: sample('codex-mcp.jsonl'),
      expected: { status: 'ok', usage: { inputTokens: 11200, outputTokens: 250, costUsd: 0 }, summary: /^Added NOTES\.md and committed it\.$/ },
    },
    {
      name: 'codex reconnected twice, then completed: not an error',
      adapter: 'codex' as const,
      stdout: sample('codex-reconnected.jsonl'),
      expected: { status: 'ok', usage: { inputTokens: 120, outputTokens: 12, costUsd: 0 }, summary: /^All done after a retry\.$/ },
    },
    {
      name: 'codex failed turn',
      adapter: 'codex' as const,
      stdout: sample('codex-failed.jsonl'),
      expected: { status: 'error', usage: { inputTokens: 0, outputTokens: 0, costUsd: 0 }, summary: /stream disconnected/ },
    },
  ];
  for (const { name, adapter, stdout, expected } of cases) {
    it(name, () => {
      const parsed = adapters[adapter].parse(stdout);
      assert.ok(parsed.ok, JSON.stringify(parsed));
      assert.equal(parsed.result.status, expected.status);
      assert.equal(parsed.result.usage.inputTokens, expected.usage.inputTokens);
      assert.equal(parsed.result.usage.outputTokens, expected.usage.outputTokens);
      assert.ok(Math.abs(parsed.result.usage.costUsd - expected.usage.costUsd) < 1e-9, `cost ${parsed.result.usage.costUsd}`);
      assert.match(parsed.result.summary, expected.summary);
    });
  }

  const undelivered = [
    { adapter: 'claude-code' as const, stdout: 'Error: invalid API key\n' },
    { adapter: 'opencode' as const, stdout: '' },
    { adapter: 'opencode' as const, stdout: '{"type":"step_start","part":{}}\n' },
    { adapter: 'codex' as const, stdout: '{"type":"thread.started"}\n{"type":"turn.started"}\n' },
  ];
  for (const { adapter, stdout } of undelivered) {
    it(`${adapter}: output without a result is not a delivery (${JSON.stringify(stdout).slice(0, 40)})`, () => {
      assert.equal(adapters[adapter].parse(stdout).ok, false);
    });
  }
});

describe('harness adapters: command construction', () => {
  const fresh = { id: '1b4e28ba-2fa1-41d2-883f-0016d3cca427', resume: false };
  const cases = [
    {
      adapter: 'claude-code' as const,
      launcher: '/opt/tarmac/shared/tarmac-run',
      expects: [
        /^claude -p /,
        /--model "\$1"/,
        /--output-format json/,
        /--tools "" --strict-mcp-config --mcp-config \/opt\/tarmac\/shared\/mcp\.json --allowedTools mcp__tarmac --setting-sources user/,
        /< \/tarmac\/prompt\.md$/,
      ],
    },
    {
      adapter: 'opencode' as const,
      launcher: '/opt/tarmac/shared/tarmac-run',
      expects: [/^set -eu\n/, /\nexec opencode run --format json /, /--model "\$1"/, /< \/tarmac\/prompt\.md$/],
    },
    {
      adapter: 'codex' as const,
      launcher: '/opt/tarmac/shared/tarmac-run',
      expects: [/^set -eu\n/, /\nexec codex exec --json --skip-git-repo-check --strict-config /, /--model "\$1"/, /- < \/tarmac\/prompt\.md$/],
    },
  ];
  for (const { adapter, expects, ...rest } of cases) {
    it(`${adapter} passes the model as an argument, never through the shell`, () => {
      const model = 'evil"; rm -rf / #';
      const launched = adapters[adapter].command(model, fresh);
      const launcher = 'launcher' in rest ? rest.launcher : undefined;
      if (launcher) assert.equal(launched[0], launcher, 'the command runs under the model forwarder');
      const argv = launcher ? launched.slice(1) : launched;
      assert.equal(argv[0], 'sh');
      assert.equal(argv[1], '-c');
      const script = argv[2]!.replace(/^exec /, '');
      for (const pattern of expects) assert.match(script, pattern);
      assert.ok(!script.includes(model), 'the model text is not spliced into the script');
      assert.equal(argv[argv.length - 1], model, 'the model is the positional argument $1');
    });
  }
  it('claude-code reads its prompt from stdin and reaches the model only through the forwarder, with a placeholder key', () => {
    const script = adapters['claude-code'].command('claude-sonnet-4-5', fresh)[3]!;
    assert.ok(!script.includes('$(cat'), 'the prompt is never one argv string');
    assert.deepEqual(adapters['claude-code'].modelEnv?.('http://127.0.0.1:8417'), [
      'CLAUDE_CONFIG_DIR=/tarmac/conversation/claude',
      'ANTHROPIC_BASE_URL=http://127.0.0.1:8417',
      'ANTHROPIC_API_KEY=tarmac-model-gateway',
      'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1',
      'ENABLE_TOOL_SEARCH=false',
    ]);
  });
  it('each CLI harness reaches the model gateway of its protocol; the script harness none', () => {
    assert.deepEqual(
      [
        ['script', 'fixer'],
        ['claude-code', 'claude-sonnet-4-5'],
        ['codex', 'gpt-5'],
        ['opencode', 'anthropic/claude-sonnet-4-5'],
        ['opencode', 'openai/gpt-5'],
        ['aider', 'claude-sonnet-4-5'],
        ['aider', 'gpt-5'],
      ].map(([adapter, model]) => modelProviderOf(adapter as AdapterName, model!)),
      [undefined, 'anthropic', 'openai', 'anthropic', 'openai', 'anthropic', 'openai'],
    );
  });
  it('claude-code starts the conversation by its id, and a follow-up resumes it', () => {
    assert.match(adapters['claude-code'].command('m', fresh)[3]!, / --session-id 1b4e28ba-2fa1-41d2-883f-0016d3cca427 /);
    assert.match(adapters['claude-code'].command('m', { ...fresh, resume: true })[3]!, / --resume 1b4e28ba-2fa1-41d2-883f-0016d3cca427 /);
    assert.throws(() => adapters['claude-code'].command('m', { id: 'x; rm -rf /', resume: true }), /is not a UUID/);
  });
  it('a conversation id is a UUID, the same for the same attempt and different for another', () => {
    const id = conversationUuid('run-1', 'fixer-1', 1);
    assert.equal(conversationId({ id, resume: false }), id);
    assert.equal(conversationUuid('run-1', 'fixer-1', 1), id);
    assert.notEqual(conversationUuid('run-1', 'fixer-1', 2), id);
  });
  it('codex reads its prompt from stdin and reaches the model only through the forwarder, with a placeholder key', () => {
    const script = adapters.codex.command('gpt-5-codex', fresh)[3]!;
    assert.ok(!script.includes('$(cat'), 'the prompt is never one argv string');
    assert.ok(!script.includes('--dangerously-bypass'), "Codex's own sandbox stays on (read-only, from the image's config.toml)");
    assert.match(script, / -c "model_providers\.tarmac\.base_url=\\"\$TARMAC_MODEL_BASE_URL\\"" /);
    assert.deepEqual(adapters.codex.modelEnv?.('http://127.0.0.1:8417'), [
      'TARMAC_MODEL_BASE_URL=http://127.0.0.1:8417/v1',
      'TARMAC_MODEL_GATEWAY_KEY=tarmac-model-gateway',
    ]);
  });
  it('codex sets up its home in the conversation directory at every start: only the recorded sessions carry over, the config is the image’s', () => {
    const lines = adapters.codex.command('m', fresh)[3]!.split('\n');
    assert.deepEqual(lines.slice(0, 5), [
      'set -eu',
      'export CODEX_HOME=/tarmac/conversation/codex',
      'mkdir -p "$CODEX_HOME/sessions"',
      'find "$CODEX_HOME" -mindepth 1 -maxdepth 1 ! -name sessions -exec rm -rf -- {} +',
      'cp /opt/tarmac/codex/config.toml "$CODEX_HOME/config.toml"',
    ]);
  });
  it('codex starts a thread, and a follow-up resumes the newest one of its copied conversation (codex exec resume --last)', () => {
    assert.equal(adapters.codex.resumable, true);
    const start = adapters.codex.command('m', fresh)[3]!;
    const resumed = adapters.codex.command('m', { ...fresh, resume: true })[3]!;
    assert.match(start, /\nexec codex exec --json /);
    assert.ok(!start.includes('resume'));
    assert.match(resumed, /\nexec codex exec resume --last --json --skip-git-repo-check --strict-config .* --model "\$1" - < \/tarmac\/prompt\.md$/);
    assert.equal(resumed.replace('resume --last ', ''), start, 'the same session otherwise');
  });
  it('no CLI gets its prompt as one argv string (E2BIG): it reads /tarmac/prompt.md', () => {
    for (const adapter of ['claude-code', 'codex', 'opencode', 'aider'] as const) {
      const script = adapters[adapter].command('m', fresh).join(' ');
      assert.ok(!script.includes('$(cat'), `${adapter} does not splice the prompt into argv`);
      assert.ok(script.includes('/tarmac/prompt.md'), `${adapter} reads the prompt file`);
    }
  });
  it('script passes the behaviour as the only argument', () => {
    assert.deepEqual(adapters.script.command('fixer', fresh), ['fixer']);
  });
});
