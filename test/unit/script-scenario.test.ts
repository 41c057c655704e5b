import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { loadScriptScenario } from '../../activities/sessions/script-scenarios';
import { adapters } from '../../core/harnesses';
import { parseScriptScenario, splitScriptModel } from '../../core/script-scenario';

describe('script models: behaviour and scenario', () => {
  const table = [
    { name: 'behaviour alone', input: 'fixer', expected: { behaviour: 'fixer' } },
    { name: 'behaviour and scenario', input: 'slow-fixer:slow-write-fixed', expected: { behaviour: 'slow-fixer', scenario: 'slow-write-fixed' } },
    { name: 'only the first separator splits', input: 'fixer:a:b', expected: { behaviour: 'fixer', scenario: 'a:b' } },
  ];
  for (const { name, input, expected } of table) it(name, () => assert.deepEqual(splitScriptModel(input), expected));

  it('the container is given the behaviour alone (the scenario reaches it through the task file)', () => {
    const fresh = { id: '00000000-0000-4000-8000-000000000000', resume: false };
    assert.deepEqual(adapters.script.command('fixer:write-fixed', fresh), ['fixer']);
    assert.deepEqual(adapters.script.command('reviewer', fresh), ['reviewer']);
  });
});

describe('scenario files', () => {
  const table = [
    {
      name: 'every field',
      text: '{"edits":[{"file":"a","find":"x","replace":"y"}],"slowMs":10,"reportUsage":{"inputTokens":1,"outputTokens":2,"costUsd":0},"command":"make test","pauseMs":5,"crashAttempts":1}',
      problem: undefined,
    },
    { name: 'empty', text: '{}', problem: undefined },
    {
      name: 'a misspelt field, with the valid ones',
      text: '{"slowMS":10}',
      problem: /^slowMS is not a known field \(valid fields: edits, slowMs, reportUsage, command, ask, pauseMs, crashAttempts\)$/,
    },
    {
      name: 'crashing on no attempt is not a crash scenario',
      text: '{"crashAttempts":0}',
      problem: /^crashAttempts expected integer to be greater or equal to 1/,
    },
    { name: 'an edit without replace', text: '{"edits":[{"file":"a"}]}', problem: /^edits\[0\]\.replace is required$/ },
    { name: 'a negative wait', text: '{"slowMs":-1}', problem: /^slowMs expected integer to be greater or equal to 0/ },
    { name: 'not JSON', text: '{', problem: /^is not valid JSON/ },
  ];
  for (const { name, text, problem } of table) {
    it(name, () => {
      const parsed = parseScriptScenario(text);
      if (!problem) assert.deepEqual(parsed, { ok: true, scenario: JSON.parse(text) });
      else assert.match(parsed.ok ? '(parsed)' : parsed.problem, problem);
    });
  }
});

describe('loadScriptScenario (the worker reads the file the model names)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tarmac-scenarios-unit-'));
  writeFileSync(join(dir, 'write-fixed.json'), '{"edits":[{"file":"FIXED","replace":"yes\\n"}]}');
  writeFileSync(join(dir, 'typo.json'), '{"edit":[]}');
  after(() => rmSync(dir, { recursive: true, force: true }));

  const table = [
    { name: 'no scenario named: the empty one, with or without a directory', dir: undefined, model: 'fixer', expected: { ok: true, scenario: {} } },
    { name: 'the named file', dir, model: 'fixer:write-fixed', expected: { ok: true, scenario: { edits: [{ file: 'FIXED', replace: 'yes\n' }] } } },
    { name: 'a missing file is named', dir, model: 'fixer:nowhere', expected: { ok: false, reason: `scenario file ${join(dir, 'nowhere.json')} is missing` } },
    {
      name: 'no directory configured: the setting is named',
      dir: undefined,
      model: 'fixer:write-fixed',
      expected: /^scenario "write-fixed" needs a scenarios directory.*TARMAC_SCRIPT_SCENARIOS is not set/,
    },
    {
      name: 'an invalid file names file and field',
      dir,
      model: 'fixer:typo',
      expected: new RegExp(`^scenario file ${join(dir, 'typo.json')}: edit is not a known field`),
    },
    { name: 'a name is never a path', dir, model: 'fixer:../typo', expected: /^scenario "\.\.\/typo" must be lowercase/ },
  ];
  for (const { name, dir: scenariosDir, model, expected } of table) {
    it(name, async () => {
      const loaded = await loadScriptScenario(scenariosDir, model);
      if (expected instanceof RegExp) assert.match(loaded.ok ? '(loaded)' : loaded.reason, expected);
      else assert.deepEqual(loaded, expected);
    });
  }
});
