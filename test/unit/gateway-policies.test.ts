import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyToolEvent, breakerRefusal, emptyBreaker, type ToolEvent } from '../../policies/circuit-breaker';
import { commandGroundingRefusal, editGroundingRefusal } from '../../policies/grounding';
import { classifyIntent, roleFor } from '../../policies/intent';

const fail = (command: string): ToolEvent => ({ kind: 'command-result', command, exitCode: 1 });
const pass = (command: string): ToolEvent => ({ kind: 'command-result', command, exitCode: 0 });

describe('circuit breaker', () => {
  const table: { name: string; events: ToolEvent[]; next: string; refused: boolean }[] = [
    { name: 'first run is allowed', events: [], next: 'make start-all', refused: false },
    { name: 'after one failure: allowed', events: [fail('make start-all')], next: 'make start-all', refused: false },
    { name: 'after two failures in a row: refused', events: [fail('make start-all'), fail('make start-all')], next: 'make start-all', refused: true },
    { name: 'whitespace does not make it another command', events: [fail('make  start-all'), fail('make start-all ')], next: 'make start-all', refused: true },
    {
      name: 'an edit in between resets',
      events: [fail('make start-all'), { kind: 'edit', file: 'Makefile' }, fail('make start-all')],
      next: 'make start-all',
      refused: false,
    },
    {
      name: 'reading a new file in between resets',
      events: [fail('make start-all'), { kind: 'read', file: 'Makefile' }, fail('make start-all')],
      next: 'make start-all',
      refused: false,
    },
    {
      name: 're-reading a file already read does not reset',
      events: [{ kind: 'read', file: 'Makefile' }, fail('make start-all'), { kind: 'read', file: 'Makefile' }, fail('make start-all')],
      next: 'make start-all',
      refused: true,
    },
    { name: 'another command is not affected', events: [fail('make start-all'), fail('make start-all')], next: 'make test', refused: false },
    { name: 'a success clears the count', events: [fail('make test'), pass('make test'), fail('make test')], next: 'make test', refused: false },
  ];
  for (const { name, events, next, refused } of table) {
    it(name, () => {
      const state = events.reduce(applyToolEvent, emptyBreaker());
      assert.equal(breakerRefusal(state, next) !== undefined, refused);
    });
  }
  it('counts every failure for the outcome', () => {
    const state = [fail('a'), { kind: 'edit', file: 'x' } as ToolEvent, fail('a'), fail('b')].reduce(applyToolEvent, emptyBreaker());
    assert.deepEqual(state.totalFailures, { a: 2, b: 1 });
  });
});

describe('grounding gates', () => {
  const rules = {
    groundedCommands: ['npm run dev', 'npm start', 'make start-all', 'make build'],
    groundingFiles: ['Makefile', 'package.json', 'scripts/start-all.sh'],
  };
  const table = [
    { name: 'boot command before reading anything: refused', read: [], command: 'npm run dev', refused: true },
    { name: 'boot command after reading package.json: allowed', read: ['package.json'], command: 'npm run dev', refused: false },
    { name: 'prefix with arguments is gated too', read: [], command: 'make start-all VERBOSE=1', refused: true },
    { name: 'a command that only shares a prefix of letters is not gated', read: [], command: 'make buildall', refused: false },
    { name: 'ungated command: allowed', read: [], command: 'ls', refused: false },
  ];
  for (const { name, read, command, refused } of table) {
    it(name, () => {
      const refusal = commandGroundingRefusal(rules, read, command);
      assert.equal(refusal !== undefined, refused);
      if (refusal) assert.match(refusal, /Makefile or package\.json or scripts\/start-all\.sh/);
    });
  }
  it('editing an existing file not read first is refused; reading it first or creating a file is fine', () => {
    assert.match(editGroundingRefusal([], 'src/app.js', true) ?? '', /read src\/app\.js before editing/);
    assert.equal(editGroundingRefusal(['src/app.js'], 'src/app.js', true), undefined);
    assert.equal(editGroundingRefusal([], 'src/new.js', false), undefined);
  });
});

describe('intent routing', () => {
  const table = [
    { input: 'the app does not start with make up', intent: 'boot-fix', role: 'implementer' },
    { input: 'npm run build fails with a type error', intent: 'build-fix', role: 'implementer' },
    { input: 'the unit tests are failing', intent: 'test-fix', role: 'implementer' },
    { input: 'should we split the API into two services?', intent: 'design-question', role: 'architect' },
    { input: 'fix the crash in the parser', intent: 'other-fix', role: 'implementer' },
  ];
  for (const { input, intent, role } of table) {
    it(input, () => {
      assert.equal(classifyIntent(input), intent);
      assert.equal(roleFor(classifyIntent(input)), role);
    });
  }
});
