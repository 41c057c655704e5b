import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { readNewLogLines } from '../../api/run-logs';

test('readNewLogLines: complete lines only, with offsets that resume exactly; timestamps split off; files in name order', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tarmac-logs-'));
  writeFileSync(join(dir, 'b.log'), '2026-11-30T10:00:00.123456789Z first\r\nsecond\npart');
  writeFileSync(join(dir, 'a.log'), 'alpha\n');
  writeFileSync(join(dir, 'ignored.txt'), 'not a log\n');
  const lines = await readNewLogLines(dir, {});
  assert.deepEqual(lines, [
    { file: 'a.log', line: 'alpha', offsetAfter: 6 },
    { file: 'b.log', line: 'first', at: '2026-11-30T10:00:00.123456789Z', offsetAfter: 38 },
    { file: 'b.log', line: 'second', offsetAfter: 45 },
  ]);
  assert.deepEqual(await readNewLogLines(dir, { 'a.log': 6, 'b.log': 45 }), [], 'the unfinished line waits for its newline');
  appendFileSync(join(dir, 'b.log'), 'ial\n');
  assert.deepEqual(await readNewLogLines(dir, { 'a.log': 6, 'b.log': 45 }), [{ file: 'b.log', line: 'partial', offsetAfter: 53 }]);
});

test('readNewLogLines: no log directory (the API runs on another host) → no lines, no error', async () => {
  assert.deepEqual(await readNewLogLines(join(tmpdir(), 'tarmac-no-such-dir-x'), {}), []);
});
