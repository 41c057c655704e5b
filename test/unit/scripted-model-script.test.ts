import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadScript, parseScript, ScriptError } from '../../infra/scripted-model/script';
import { startScriptedModel } from '../../infra/scripted-model/server';

const usage = { inputTokens: 10, outputTokens: 2 };
const valid = { version: 1, conversations: [{ turns: [{ text: 'done', usage }] }] };
const withTurn = (turn: unknown) => ({ version: 1, conversations: [{ turns: [{ text: 'first', usage }, turn] }] });

describe('scripted model: script validation names the field', () => {
  const cases: { name: string; input: unknown; expected: RegExp }[] = [
    { name: 'version missing', input: { conversations: valid.conversations }, expected: /^script: version is required$/ },
    { name: 'version not 1', input: { ...valid, version: 2 }, expected: /^script: version expected 1/ },
    {
      name: 'no conversations',
      input: { version: 1, conversations: [] },
      expected: /^script: conversations expected array length to be greater or equal to 1/,
    },
    { name: 'usage missing', input: withTurn({ text: 'x' }), expected: /^script: conversations\[0\]\.turns\[1\]\.usage is required$/ },
    {
      name: 'negative tokens',
      input: withTurn({ text: 'x', usage: { inputTokens: -1, outputTokens: 0 } }),
      expected: /^script: conversations\[0\]\.turns\[1\]\.usage\.inputTokens expected integer to be greater or equal to 0 \(uncached input tokens\)$/,
    },
    {
      name: 'fractional tokens',
      input: withTurn({ text: 'x', usage: { inputTokens: 1, outputTokens: 0.5 } }),
      expected: /turns\[1\]\.usage\.outputTokens expected integer/,
    },
    {
      name: 'unknown turn field lists the valid ones',
      input: withTurn({ text: 'x', tool_calls: [], usage }),
      expected: /^script: conversations\[0\]\.turns\[1\]\.tool_calls is not a known field \(valid fields: text, toolCalls, usage\)$/,
    },
    {
      name: 'empty tool name',
      input: withTurn({ toolCalls: [{ name: '' }], usage }),
      expected: /^script: conversations\[0\]\.turns\[1\]\.toolCalls\[0\]\.name expected string length greater or equal to 1/,
    },
    {
      name: 'tool input not an object',
      input: withTurn({ toolCalls: [{ name: 'Bash', input: 'ls' }], usage }),
      expected: /^script: conversations\[0\]\.turns\[1\]\.toolCalls\[0\]\.input expected object/,
    },
    { name: 'turn says nothing', input: withTurn({ usage }), expected: /^script: conversations\[0\]\.turns\[1\] must have text, toolCalls or both$/ },
    {
      name: 'tool call with input and text',
      input: withTurn({ toolCalls: [{ name: 'apply_patch', input: {}, text: 'x' }], usage }),
      expected: /^script: conversations\[0\]\.turns\[1\]\.toolCalls\[0\] must have input or text, not both$/,
    },
    { name: 'side calls detect', input: { ...valid, sideCalls: { detect: 'sometimes' } }, expected: /^script: sideCalls\.detect .*one of "no-tools", "never"/ },
  ];
  for (const { name, input, expected } of cases) {
    it(name, () => {
      assert.throws(
        () => parseScript(input),
        (error: unknown) => error instanceof ScriptError && expected.test(error.message),
      );
    });
  }

  it('accepts a script with every field', () => {
    const script = {
      version: 1,
      conversations: [
        {
          name: 'resolver',
          match: 'tarmac-session: resolver',
          turns: [
            {
              text: 'a',
              toolCalls: [
                { name: 'Bash', input: { command: 'ls' } },
                { name: 'apply_patch', text: '*** Begin Patch' },
              ],
              usage: { inputTokens: 1, outputTokens: 2, cacheReadTokens: 3, cacheWriteTokens: 4 },
            },
          ],
        },
        { turns: [{ text: 'default', usage }] },
      ],
      sideCalls: { detect: 'never', text: 'Title', usage: { inputTokens: 0, outputTokens: 0 } },
    };
    assert.deepEqual(parseScript(script), script);
  });

  it('names the file when loading one, and refuses a server start on a bad script', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tarmac-script-'));
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '{ "version": 1, ');
    assert.throws(() => loadScript(broken), new RegExp(`^ScriptError: ${broken}: \\(root\\) is not readable JSON`));
    const wrong = join(dir, 'wrong.json');
    writeFileSync(wrong, JSON.stringify(withTurn({ text: 'x', usage: { inputTokens: 1 } })));
    await assert.rejects(startScriptedModel({ script: wrong }), {
      name: 'ScriptError',
      message: `${wrong}: conversations[0].turns[1].usage.outputTokens is required`,
    });
    await assert.rejects(startScriptedModel({ script: { version: 1 } as never }), { message: 'script: conversations is required' });
  });
});
