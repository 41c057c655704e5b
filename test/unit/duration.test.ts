import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseDuration } from '../../core/duration';

const table: { input: string; expected: number | undefined }[] = [
  { input: '500ms', expected: 500 },
  { input: '30s', expected: 30_000 },
  { input: '10m', expected: 600_000 },
  { input: '2h', expected: 7_200_000 },
  { input: '10', expected: undefined },
  { input: '1.5m', expected: undefined },
  { input: '5 min', expected: undefined },
  { input: '', expected: undefined },
];

describe('parseDuration', () => {
  for (const { input, expected } of table) it(`"${input}" → ${expected}`, () => assert.equal(parseDuration(input), expected));
});
