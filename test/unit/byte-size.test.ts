import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatBytes } from '../../core/byte-size';

describe('formatBytes: sizes as a person reads them (binary units)', () => {
  const cases: { input: number; expected: string }[] = [
    { input: 0, expected: '0 B' },
    { input: 512, expected: '512 B' },
    { input: 1023, expected: '1023 B' },
    { input: 1024, expected: '1.0 KiB' },
    { input: 1536, expected: '1.5 KiB' },
    { input: 10 * 1024, expected: '10 KiB' },
    { input: 9.96 * 1024, expected: '10 KiB' },
    { input: 1023.9 * 1024, expected: '1.0 MiB' },
    { input: 340 * 1024 ** 2, expected: '340 MiB' },
    { input: 2.1 * 1024 ** 3, expected: '2.1 GiB' },
    { input: 5 * 1024 ** 5, expected: '5120 TiB' },
    { input: -1, expected: '?' },
    { input: Number.NaN, expected: '?' },
  ];
  for (const { input, expected } of cases) it(`${input} → ${expected}`, () => assert.equal(formatBytes(input), expected));
});
