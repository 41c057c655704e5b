import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resultContract } from '../../core/harnesses/result-contract';
import { readResultBlock } from '../../core/session-result';

const fence = (body: string) => ['```tarmac-result', body, '```'].join('\n');

describe('readResultBlock (a CLI agent’s structured results)', () => {
  it('no block: no fields, the message is the summary', () =>
    assert.deepEqual(readResultBlock('All good.'), { ok: true, found: false, fields: {}, summary: 'All good.' }));
  it('findings are read and the block leaves the summary', () => {
    const message = `One problem.\n${fence('{"findings": [{"file": "a.js", "line": 2, "severity": "blocking", "message": "off by one"}]}')}`;
    assert.deepEqual(readResultBlock(message), {
      ok: true,
      found: true,
      fields: { findings: [{ file: 'a.js', line: 2, severity: 'blocking', message: 'off by one' }] },
      summary: 'One problem.',
    });
  });
  it('the last block wins (an earlier one may be quoted text)', () => {
    const message = `${fence('{"findings": []}')}\nthen\n${fence('{"questions": ["which API?"]}')}`;
    const read = readResultBlock(message);
    assert.ok(read.ok);
    assert.deepEqual(read.fields, { questions: ['which API?'] });
  });
  const problems: [string, string, RegExp][] = [
    ['not JSON', fence('{findings'), /is not valid JSON/],
    ['a bad severity', fence('{"findings": [{"file": "a", "severity": "fatal", "message": "x"}]}'), /findings\[0\]\.severity/],
    ['an unknown field', fence('{"status": "ok"}'), /tarmac-result block/],
    ['not an object', fence('[1]'), /tarmac-result block/],
  ];
  for (const [name, message, expected] of problems) {
    it(`${name} → a problem (not delivered, never "no findings")`, () => {
      const read = readResultBlock(message);
      assert.equal(read.ok, false);
      assert.match((read as { problem: string }).problem, expected);
    });
  }
  it('the contract a reviewer is given shows a block the reader accepts', () => {
    const contract = resultContract('reviewer');
    const read = readResultBlock(contract);
    assert.ok(read.ok && read.found && read.fields.findings?.length === 1, JSON.stringify(read));
  });
});
