import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatCursor, parseCursor, type EventCursor } from '../../core/event-cursor';

const parses: { name: string; input: string; expected: EventCursor | undefined }[] = [
  { name: 'journal only', input: '12', expected: { journal: 12, logs: {} } },
  { name: 'start', input: '0', expected: { journal: 0, logs: {} } },
  { name: 'with logs', input: '3;a.log=10;b.log=0', expected: { journal: 3, logs: { 'a.log': 10, 'b.log': 0 } } },
  { name: 'encoded file name', input: '1;gate%23x.log=5', expected: { journal: 1, logs: { 'gate#x.log': 5 } } },
  { name: 'empty', input: '', expected: undefined },
  { name: 'negative', input: '-1', expected: undefined },
  { name: 'leading zero', input: '01', expected: undefined },
  { name: 'not a number', input: 'abc', expected: undefined },
  { name: 'offset missing', input: '1;a.log=', expected: undefined },
  { name: 'offset not a number', input: '1;a.log=x', expected: undefined },
  { name: 'path in a file name', input: '1;..%2Fsecret=0', expected: undefined },
  { name: 'dot-dot', input: '1;..=0', expected: undefined },
  { name: 'file twice', input: '1;a.log=1;a.log=2', expected: undefined },
  { name: 'bad encoding', input: '1;%E0%A4%A=1', expected: undefined },
  { name: 'too long', input: `1;${'a'.repeat(9000)}=1`, expected: undefined },
];

for (const { name, input, expected } of parses) {
  test(`parseCursor: ${name}`, () => {
    assert.deepEqual(parseCursor(input), expected);
  });
}

const rounds: { name: string; cursor: EventCursor; text: string }[] = [
  { name: 'journal only', cursor: { journal: 7, logs: {} }, text: '7' },
  { name: 'sorted file names', cursor: { journal: 2, logs: { 'z.log': 1, 'a.log': 30 } }, text: '2;a.log=30;z.log=1' },
  { name: 'odd characters encoded', cursor: { journal: 0, logs: { 'a;b=c.log': 4 } }, text: '0;a%3Bb%3Dc.log=4' },
];

for (const { name, cursor, text } of rounds) {
  test(`formatCursor round-trips: ${name}`, () => {
    assert.equal(formatCursor(cursor), text);
    assert.deepEqual(parseCursor(text), cursor);
  });
}
