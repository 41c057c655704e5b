/**
 * The aider adapter on what the real aider 0.86.2 printed in its image (tarmac/agent-aider) against
 * the scripted model endpoint: a resolver whose rebase the launcher continued, a fixer whose edit
 * aider committed, a reviewer in ask mode, and a model request the endpoint refused. Re-record them
 * when the pin moves (images/agent-aider/README.md).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseNumstat } from '../../activities/sessions/diff-telemetry';
import { adapters, modelProviderOf } from '../../core/harnesses';
import { readResultBlock } from '../../core/session-result';

const sample = (name: string) => readFileSync(join(__dirname, 'fixtures', 'harness-output', name), 'utf8');
const fresh = { id: '1b4e28ba-2fa1-41d2-883f-0016d3cca427', resume: false };

describe('aider adapter: output recorded from the real aider', () => {
  const cases = [
    {
      name: 'a resolver: whole-file answer, rebase continued by the launcher',
      stdout: sample('aider-resolver.txt'),
      expected: { status: 'ok', inputTokens: 2100, outputTokens: 95, summary: /Resolved shared\.txt: kept both sides\.$/ },
    },
    {
      name: 'a fixer: a SEARCH/REPLACE edit, committed by aider with a message it asked the model for',
      stdout: sample('aider-fixer.txt'),
      // aider reports the answer's tokens, not those of the commit message it asked for: the gateway meters both.
      expected: { status: 'ok', inputTokens: 1800, outputTokens: 70, summary: /value\.txt now says value=2\.$/ },
    },
    {
      name: 'the model request refused: no answer, an error',
      stdout: sample('aider-refused.txt'),
      expected: { status: 'error', inputTokens: 0, outputTokens: 0, summary: /scripted model/ },
    },
  ];
  for (const { name, stdout, expected } of cases) {
    it(name, () => {
      const parsed = adapters.aider.parse(stdout);
      assert.ok(parsed.ok, JSON.stringify(parsed));
      assert.equal(parsed.result.status, expected.status);
      assert.deepEqual([parsed.result.usage.inputTokens, parsed.result.usage.outputTokens], [expected.inputTokens, expected.outputTokens]);
      assert.match(parsed.result.summary, expected.summary);
    });
  }

  it('a reviewer in ask mode: its findings are read from the tarmac-result block of its answer', () => {
    const parsed = adapters.aider.parse(sample('aider-reviewer.txt'));
    assert.ok(parsed.ok, JSON.stringify(parsed));
    const block = readResultBlock(parsed.result.summary);
    assert.ok(block.ok && block.found, JSON.stringify(block));
    assert.deepEqual(block.fields.findings, [{ file: 'value.txt', line: 1, severity: 'major', message: 'value is 0, not 2' }]);
  });

  it('output without the launcher’s end line is not a delivery (aider died or was killed)', () => {
    const cut = sample('aider-fixer.txt')
      .split('\n')
      .filter((line) => !line.includes('"tarmac-aider.end"'))
      .join('\n');
    assert.equal(adapters.aider.parse(cut).ok, false);
    assert.equal(adapters.aider.parse('').ok, false);
  });
});

describe('aider adapter: the session command', () => {
  it('runs the image’s launcher under the model forwarder, with the prompt file and the model as arguments (no shell)', () => {
    const model = 'evil"; rm -rf / #';
    assert.deepEqual(adapters.aider.command(model, fresh), ['/opt/tarmac/shared/tarmac-run', '/opt/tarmac/aider/tarmac-aider', '/tarmac/prompt.md', model]);
  });
  it('reaches the model gateway through the forwarder with placeholder keys, on either protocol, and the cost map local', () => {
    assert.deepEqual(adapters.aider.modelEnv?.('http://127.0.0.1:8417'), [
      'OPENAI_API_BASE=http://127.0.0.1:8417/v1',
      'ANTHROPIC_API_BASE=http://127.0.0.1:8417',
      'OPENAI_API_KEY=tarmac-model-gateway',
      'ANTHROPIC_API_KEY=tarmac-model-gateway',
      'LITELLM_LOCAL_MODEL_COST_MAP=True',
    ]);
    assert.deepEqual(
      ['claude-sonnet-4-5', 'claude-haiku-4-5', 'gpt-5', 'gpt-5-mini'].map((model) => modelProviderOf('aider', model)),
      ['anthropic', 'anthropic', 'openai', 'openai'],
    );
  });
  it('a follow-up restores the conversation the earlier attempt left (--resume: aider --restore-chat-history)', () => {
    assert.equal(adapters.aider.resumable, true);
    assert.deepEqual(adapters.aider.command('gpt-5', { ...fresh, resume: true }).slice(2), ['/tarmac/prompt.md', 'gpt-5', '--resume']);
  });
  it('edits with its own tools (no MCP client): its telemetry is its diff', () => {
    assert.equal(adapters.aider.ownTools, true);
    assert.ok(!adapters.codex.ownTools && !adapters['claude-code'].ownTools);
  });
});

describe('diff telemetry: git diff --numstat -z', () => {
  const cases = [
    {
      name: 'text files',
      input: '1\t0\tnotes.txt\x001\t1\tshared.txt\x00',
      expected: [
        { path: 'notes.txt', added: 1, removed: 0 },
        { path: 'shared.txt', added: 1, removed: 1 },
      ],
    },
    { name: 'a binary file', input: '-\t-\timage.png\x00', expected: [{ path: 'image.png', added: null, removed: null }] },
    { name: 'a name with a tab and a newline', input: '2\t0\ta\tb\nc.txt\x00', expected: [{ path: 'a\tb\nc.txt', added: 2, removed: 0 }] },
    { name: 'nothing', input: '', expected: [] },
  ];
  for (const { name, input, expected } of cases) it(name, () => assert.deepEqual(parseNumstat(input), expected));
});
