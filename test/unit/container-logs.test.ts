import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { copyCappedLog, DockerFrameSplitter, fitWithin, truncationNote } from '../../activities/containers/container-logs';

/** One frame of Docker's multiplexed log stream. */
function frame(stream: 1 | 2, text: string): Buffer {
  const payload = Buffer.from(text);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

/** Feeds `chunks` to a fresh splitter and joins what comes out per stream. */
function split(chunks: Buffer[]): string[] {
  const splitter = new DockerFrameSplitter();
  const out: string[] = [];
  for (const chunk of chunks) for (const piece of splitter.push(chunk)) out.push(`${piece.stream}:${piece.data.toString()}`);
  return out;
}

describe('DockerFrameSplitter', () => {
  const two = Buffer.concat([frame(1, 'out\n'), frame(2, 'err\n')]);
  const table = [
    { name: 'two frames in one chunk', chunks: [two], expected: ['1:out\n', '2:err\n'] },
    { name: 'a header cut in two', chunks: [two.subarray(0, 3), two.subarray(3)], expected: ['1:out\n', '2:err\n'] },
    { name: 'a payload cut in two comes out in pieces', chunks: [two.subarray(0, 10), two.subarray(10)], expected: ['1:ou', '1:t\n', '2:err\n'] },
    { name: 'one byte at a time', chunks: [...frame(1, 'ab')].map((byte) => Buffer.from([byte])), expected: ['1:a', '1:b'] },
    { name: 'an empty frame', chunks: [Buffer.concat([frame(1, ''), frame(1, 'x')])], expected: ['1:x'] },
    { name: 'nothing', chunks: [], expected: [] },
  ];
  for (const { name, chunks, expected } of table) it(name, () => assert.deepEqual(split(chunks), expected));
});

describe('fitWithin: what of a chunk fits under the cap', () => {
  const table = [
    { name: 'fits whole', data: 'ab\ncd\n', written: 0, limit: 10, keep: 'ab\ncd\n', full: false },
    { name: 'fits exactly', data: 'abcd', written: 6, limit: 10, keep: 'abcd', full: false },
    { name: 'cut after the last whole line', data: 'ab\ncd\nef', written: 0, limit: 7, keep: 'ab\ncd\n', full: true },
    { name: 'no newline within the room: nothing more (no half line)', data: 'abcdefgh', written: 5, limit: 8, keep: '', full: true },
    { name: 'one giant line from the start: hard cut', data: 'abcdefgh', written: 0, limit: 3, keep: 'abc', full: true },
    { name: 'already at the cap', data: 'abc', written: 8, limit: 8, keep: '', full: true },
    { name: 'already past the cap', data: 'abc', written: 9, limit: 8, keep: '', full: true },
  ];
  for (const { name, data, written, limit, keep, full } of table) {
    it(name, () => {
      const result = fitWithin(Buffer.from(data), written, limit);
      assert.equal(result.keep.toString(), keep);
      assert.equal(result.full, full);
    });
  }
  it('the truncation note names the bytes kept, on a line of its own', () => {
    assert.equal(truncationNote(42, true), "[tarmac] log truncated after 42 bytes: the rest of the container's output was not kept\n");
    assert.match(truncationNote(42, false), /^\n\[tarmac\] log truncated after 42 bytes/);
  });
});

describe('copyCappedLog (into a real file)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tarmac-log-cap-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('copies a small log whole, both streams in order, and says nothing', async () => {
    const file = join(dir, 'small.log');
    let firsts = 0;
    const result = await copyCappedLog(Readable.from([frame(1, 'one\n'), frame(2, 'two\n')]), file, 4096, () => (firsts += 1));
    assert.deepEqual(result, { bytes: 8, truncated: false });
    assert.equal(readFileSync(file, 'utf8'), 'one\ntwo\n');
    assert.equal(firsts, 1, 'first output reported once');
  });

  it('stops a flood at the cap: the file, truncation line included, is no bigger than the cap, and the rest is not read', async () => {
    const file = join(dir, 'flood.log');
    const cap = 64 * 1024;
    let produced = 0;
    // 64 MiB on offer, one 1 KiB line per frame; only a little of it may be pulled.
    const line = `${'y'.repeat(1023)}\n`;
    const source = Readable.from(
      (function* () {
        for (let index = 0; index < 64 * 1024; index += 1) {
          produced += 1;
          yield frame(1, line);
        }
      })(),
    );
    const result = await copyCappedLog(source, file, cap);
    assert.equal(result.truncated, true);
    const size = statSync(file).size;
    assert.ok(size <= cap, `file ${size} bytes ≤ cap ${cap}`);
    const text = readFileSync(file, 'utf8');
    assert.match(text, new RegExp(`\\[tarmac\\] log truncated after ${result.bytes} bytes`));
    assert.ok(text.endsWith('was not kept\n'));
    assert.equal(
      text
        .split('\n')
        .filter((entry) => entry.startsWith('y'))
        .every((entry) => entry.length === 1023),
      true,
      'whole lines only',
    );
    assert.ok(produced < 200, `the source was not drained (${produced} frames pulled)`);
    assert.equal(source.destroyed, true, 'the stream is closed at the cap');
  });
});
