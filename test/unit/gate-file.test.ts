import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fieldName, parseGateFile } from '../../core/gate-file';

const valid = { version: 1, suites: [{ id: 'test', run: ['make', 'test'], timeout: '10m' }] };
const withSuite = (suite: Record<string, unknown>) => JSON.stringify({ version: 1, suites: [suite] });

const cases: { name: string; input: string; expected: { ok: true } | { ok: false; field: string; message: RegExp } }[] = [
  { name: 'minimal valid file', input: JSON.stringify(valid), expected: { ok: true } },
  {
    name: 'full valid file',
    input: JSON.stringify({ ...valid, image: 'tarmac/runner:bookworm', review: { panel: 'default', quorum: 2 }, fixup: { maxRounds: 1 } }),
    expected: { ok: true },
  },
  { name: 'not JSON', input: '{ version: 1', expected: { ok: false, field: '(root)', message: /not valid JSON/ } },
  { name: 'not an object', input: '[]', expected: { ok: false, field: '(root)', message: /object/ } },
  { name: 'wrong version', input: JSON.stringify({ ...valid, version: 2 }), expected: { ok: false, field: 'version', message: /1/ } },
  { name: 'missing suites', input: JSON.stringify({ version: 1 }), expected: { ok: false, field: 'suites', message: /required/ } },
  { name: 'no suites', input: JSON.stringify({ version: 1, suites: [] }), expected: { ok: false, field: 'suites', message: /length/ } },
  { name: 'empty argv', input: withSuite({ id: 'a', run: [] }), expected: { ok: false, field: 'suites[0].run', message: /length/ } },
  { name: 'shell string instead of argv', input: withSuite({ id: 'a', run: 'make test' }), expected: { ok: false, field: 'suites[0].run', message: /array/ } },
  { name: 'bad timeout', input: withSuite({ id: 'a', run: ['x'], timeout: '5 min' }), expected: { ok: false, field: 'suites[0].timeout', message: /10m/ } },
  { name: 'bad suite id', input: withSuite({ id: 'Has Space', run: ['x'] }), expected: { ok: false, field: 'suites[0].id', message: /lowercase/ } },
  { name: 'unknown suite field', input: withSuite({ id: 'a', run: ['x'], cmd: 'y' }), expected: { ok: false, field: 'suites[0].cmd', message: /valid fields: id, run, timeout/ } },
  { name: 'unknown top-level field', input: JSON.stringify({ ...valid, gates: [] }), expected: { ok: false, field: 'gates', message: /not a known field/ } },
  {
    name: 'duplicate suite ids',
    input: JSON.stringify({ version: 1, suites: [{ id: 'a', run: ['x'] }, { id: 'a', run: ['y'] }] }),
    expected: { ok: false, field: 'suites[1].id', message: /duplicates/ },
  },
  { name: 'quorum below 1', input: JSON.stringify({ ...valid, review: { panel: 'p', quorum: 0 } }), expected: { ok: false, field: 'review.quorum', message: /1/ } },
  { name: 'too many fixup rounds', input: JSON.stringify({ ...valid, fixup: { maxRounds: 9 } }), expected: { ok: false, field: 'fixup.maxRounds', message: /5/ } },
];

describe('parseGateFile', () => {
  for (const { name, input, expected } of cases) {
    it(name, () => {
      const result = parseGateFile(input);
      assert.equal(result.ok, expected.ok, JSON.stringify(result));
      if (!result.ok && !expected.ok) {
        assert.equal(result.field, expected.field);
        assert.match(result.message, expected.message);
      }
    });
  }
});

describe('fieldName', () => {
  const table = [
    { input: '/suites/0/run', expected: 'suites[0].run' },
    { input: '/version', expected: 'version' },
    { input: '', expected: '(root)' },
    { input: '/review/quorum', expected: 'review.quorum' },
  ];
  for (const { input, expected } of table) it(`${input || '(empty)'} → ${expected}`, () => assert.equal(fieldName(input), expected));
});
