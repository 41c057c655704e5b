/**
 * The opencode adapter (core/harnesses/opencode.ts) on what opencode 1.18.33 really printed, and the
 * image's configuration (images/agent-opencode/opencode/) against the recipes. The samples were
 * recorded from real runs against the scripted model endpoint: `opencode-resolver.jsonl` and
 * `opencode-follow-up.jsonl` in its image, through the model and tool gateways
 * (test/e2e/opencode-session.test.ts); `opencode-anthropic.jsonl` (Anthropic Messages) and
 * `opencode-refused.jsonl` (the endpoint answered 400) from the same binary on the host.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { opencode } from '../../core/harnesses/opencode';
import { loadRecipes } from '../../core/node/recipes';

const sample = (name: string) => readFileSync(join(__dirname, 'fixtures', 'harness-output', name), 'utf8');
const imageDir = join(__dirname, '../../images/agent-opencode/opencode');
const config = JSON.parse(readFileSync(join(imageDir, 'opencode.json'), 'utf8')) as {
  provider: Record<string, { npm: string; options: Record<string, string>; models: Record<string, unknown> }>;
  enabled_providers: string[];
  mcp: Record<string, { type: string; command: string[]; enabled: boolean; timeout: number }>;
  permission: Record<string, string>;
  agent: Record<string, { prompt?: string }>;
  autoupdate: boolean;
  share: string;
  snapshot: boolean;
};

describe('opencode adapter: parsing recorded output', () => {
  const cases = [
    {
      name: 'a resolver through the gateways (OpenAI Responses): four steps, tool calls, the last text is the summary',
      file: 'opencode-resolver.jsonl',
      // opencode's input excludes the cached part; the adapter adds it back (the gateway's convention).
      expected: { status: 'ok', inputTokens: 1500 + 300 + 1700 + 1800 + 900 + 1900 + 1000, outputTokens: 90 + 60 + 40 + 30, summary: /^Resolved shared\.txt/ },
    },
    {
      name: 'a continued session: only this run’s steps count',
      file: 'opencode-follow-up.jsonl',
      expected: { status: 'ok', inputTokens: 1000 + 800 + 1100, outputTokens: 50 + 15, summary: /^Follow-up done\.$/ },
    },
    {
      name: 'Anthropic Messages',
      file: 'opencode-anthropic.jsonl',
      expected: { status: 'ok', inputTokens: 1000 + 200 + 1100 + 1200, outputTokens: 50 + 60 + 20, summary: /^Done: README\.md rewritten\.$/ },
    },
    {
      name: 'the endpoint refused the request: an error, its message the summary',
      file: 'opencode-refused.jsonl',
      expected: { status: 'error', inputTokens: 0, outputTokens: 0, summary: /^scripted model: no conversation of the script matches/ },
    },
  ];
  for (const { name, file, expected } of cases) {
    it(name, () => {
      const parsed = opencode.parse(sample(file));
      assert.ok(parsed.ok, JSON.stringify(parsed));
      assert.equal(parsed.result.status, expected.status);
      assert.deepEqual([parsed.result.usage.inputTokens, parsed.result.usage.outputTokens], [expected.inputTokens, expected.outputTokens]);
      assert.match(parsed.result.summary, expected.summary);
    });
  }

  it('the cost is opencode’s own report, summed over the steps (the gateway’s metering is the one Tarmac uses)', () => {
    const parsed = opencode.parse(sample('opencode-resolver.jsonl'));
    assert.ok(parsed.ok);
    assert.ok(Math.abs(parsed.result.usage.costUsd - (0.0005625 + 0.000545 + 0.0005525 + 0.00056)) < 1e-12, String(parsed.result.usage.costUsd));
  });

  for (const stdout of ['', 'Error: something\n', sample('opencode-resolver.jsonl').split('\n')[0]!]) {
    it(`output without a finished step or an error is not a delivery (${JSON.stringify(stdout).slice(0, 40)})`, () => {
      assert.equal(opencode.parse(stdout).ok, false);
    });
  }
});

describe('opencode adapter: the session command', () => {
  const fresh = { id: '1b4e28ba-2fa1-41d2-883f-0016d3cca427', resume: false };
  const script = (resume: boolean) => opencode.command('m', { ...fresh, resume })[3]!;

  it('runs under the model forwarder, the model as $1, never through the shell; the prompt on stdin', () => {
    const model = 'evil"; rm -rf / #';
    const argv = opencode.command(model, fresh);
    assert.deepEqual([argv[0], argv[1], argv[2]], ['/opt/tarmac/shared/tarmac-run', 'sh', '-c']);
    assert.equal(argv[argv.length - 1], model);
    assert.ok(!argv[3]!.includes(model));
    assert.match(argv[3]!, /\nexec opencode run --format json --title tarmac-session --model "\$1" < \/tarmac\/prompt\.md$/);
    assert.ok(!argv[3]!.includes('$(cat'), 'the prompt is never one argv string');
  });

  it('keeps only opencode’s database in the conversation directory at every start, and points opencode at it', () => {
    const lines = script(false).split('\n');
    assert.deepEqual(lines.slice(0, 4), [
      'set -eu',
      'state=/tarmac/conversation/opencode',
      'mkdir -p "$state"',
      'find "$state" -mindepth 1 -maxdepth 1 ! -name opencode.db ! -name opencode.db-wal ! -name opencode.db-shm -exec rm -rf -- {} +',
    ]);
    assert.ok(lines.includes('export OPENCODE_DB="$state/opencode.db"'));
  });

  it('reads no project configuration, no writable global one, and fetches nothing at start', () => {
    const lines = script(false).split('\n');
    for (const assignment of [
      'OPENCODE_DISABLE_PROJECT_CONFIG=1',
      'XDG_CONFIG_HOME=/opt/tarmac/opencode/config-home',
      'OPENCODE_DISABLE_MODELS_FETCH=1',
      'OPENCODE_DISABLE_AUTOUPDATE=1',
      'OPENCODE_PURE=1',
      'OPENCODE_DISABLE_LSP_DOWNLOAD=1',
    ])
      assert.ok(lines.includes(`export ${assignment}`), assignment);
  });

  it('a follow-up continues the newest session of the copied database (--continue); otherwise the same', () => {
    assert.equal(opencode.resumable, true);
    assert.ok(!script(false).includes('--continue'));
    assert.equal(script(true).replace(' --continue', ''), script(false));
    assert.match(script(true), /\nexec opencode run --format json --continue /);
  });

  it('reaches the model only through the forwarder, whose base URL both providers read from the environment', () => {
    assert.deepEqual(opencode.modelEnv?.('http://127.0.0.1:8417'), ['TARMAC_MODEL_BASE_URL=http://127.0.0.1:8417/v1']);
  });
});

describe('the opencode image’s configuration', () => {
  it('defines every model recipes/harnesses.json lists for opencode, under its provider, with the gateway’s base URL and a placeholder key', () => {
    for (const spec of loadRecipes().harnesses.opencode!.models) {
      const [provider, model] = spec.split('/') as [string, string];
      const entry = config.provider[provider];
      assert.ok(entry, `opencode.json has no provider "${provider}" (for ${spec})`);
      assert.ok(model in entry.models, `opencode.json has no model "${model}" under "${provider}" (for ${spec})`);
    }
    assert.deepEqual(Object.keys(config.provider).sort(), [...config.enabled_providers].sort(), 'no other provider is enabled');
    for (const [name, provider] of Object.entries(config.provider)) {
      assert.equal(provider.npm, `@ai-sdk/${name}`, 'a provider package opencode bundles (none is installed at run time)');
      assert.deepEqual(provider.options, { baseURL: '{env:TARMAC_MODEL_BASE_URL}', apiKey: 'tarmac-model-gateway' });
    }
  });

  it('the tool gateway is the only MCP server, with a tool timeout longer than run_command’s', () => {
    assert.deepEqual(Object.keys(config.mcp), ['tarmac']);
    assert.deepEqual(config.mcp.tarmac!.command, ['node', '/opt/tarmac/shared/tarmac-mcp']);
    assert.ok(config.mcp.tarmac!.timeout > 600_000);
  });

  it('every built-in tool is denied (so opencode does not offer it), the gateway’s tools allowed', () => {
    // opencode applies the last matching rule, in order: deny everything, then allow tarmac_*.
    assert.deepEqual(Object.entries(config.permission).slice(0, 2), [
      ['*', 'deny'],
      ['tarmac_*', 'allow'],
    ]);
    assert.deepEqual(Object.keys(config.permission).slice(2), ['doom_loop'], 'the only other rule: a repeated call is the gateway’s to judge');
  });

  it('no update, sharing or snapshots; its own instructions', () => {
    assert.deepEqual([config.autoupdate, config.share, config.snapshot], [false, 'disabled', false]);
    assert.equal(config.agent.build?.prompt, '{file:/opt/tarmac/opencode/instructions.md}');
    assert.match(readFileSync(join(imageDir, 'instructions.md'), 'utf8'), /tarmac_run_command/);
  });
});
