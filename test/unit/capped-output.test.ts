import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CappedOutput, DockerFrameReader } from '../../activities/containers/capped-output';
import { searchAnswer, searchCommand, searchLimits } from '../../activities/gateways/tool-gateway-search';

describe('CappedOutput keeps the head and the tail of a flood, and counts the rest', () => {
  const table: { name: string; head: number; tail: number; chunks: string[]; expected: { text: string; dropped: number; total: number } }[] = [
    { name: 'short output is kept whole', head: 4, tail: 4, chunks: ['ab', 'cd', 'ef'], expected: { text: 'abcdef', dropped: 0, total: 6 } },
    { name: 'exactly head + tail is kept whole', head: 2, tail: 3, chunks: ['abcde'], expected: { text: 'abcde', dropped: 0, total: 5 } },
    {
      name: 'a long chunk keeps its head and tail',
      head: 2,
      tail: 3,
      chunks: ['abcdefghij'],
      expected: { text: 'ab\n[… output truncated: 5 bytes dropped …]\nhij', dropped: 5, total: 10 },
    },
    {
      name: 'many small chunks: the tail slides',
      head: 2,
      tail: 3,
      chunks: ['a', 'b', 'c', 'd', 'e', 'f', 'g'],
      expected: { text: 'ab\n[… output truncated: 2 bytes dropped …]\nefg', dropped: 2, total: 7 },
    },
    {
      name: 'no tail at all',
      head: 3,
      tail: 0,
      chunks: ['abcd', 'ef'],
      expected: { text: 'abc\n[… output truncated: 3 bytes dropped …]\n', dropped: 3, total: 6 },
    },
  ];
  for (const { name, head, tail, chunks, expected } of table) {
    it(name, () => {
      const output = new CappedOutput(head, tail);
      for (const chunk of chunks) output.push(Buffer.from(chunk));
      assert.deepEqual({ text: output.text(), dropped: output.dropped, total: output.total }, expected);
    });
  }

  it('holds a fixed amount of memory for 64 MiB of output', () => {
    const output = new CappedOutput(1024, 4096);
    const chunk = Buffer.alloc(64 * 1024, 'x');
    for (let i = 0; i < 1024; i += 1) output.push(chunk);
    assert.equal(output.total, 64 * 1024 * 1024);
    assert.equal(output.dropped, 64 * 1024 * 1024 - 1024 - 4096);
    assert.ok(output.text().length < 6000);
  });
});

describe('DockerFrameReader splits the attach stream whatever the chunking', () => {
  const frame = (kind: number, text: string) => {
    const payload = Buffer.from(text);
    const header = Buffer.alloc(8);
    header.writeUInt8(kind, 0);
    header.writeUInt32BE(payload.length, 4);
    return Buffer.concat([header, payload]);
  };
  const stream = Buffer.concat([frame(1, 'out one\n'), frame(2, 'err\n'), frame(1, ''), frame(1, 'out two\n')]);
  for (const size of [1, 3, 8, 9, stream.length]) {
    it(`chunks of ${size} byte(s)`, () => {
      const seen = { 1: '', 2: '' } as Record<number, string>;
      const reader = new DockerFrameReader((kind, payload) => (seen[kind] += payload.toString()));
      for (let at = 0; at < stream.length; at += size) reader.push(stream.subarray(at, at + size));
      assert.deepEqual(seen, { 1: 'out one\nout two\n', 2: 'err\n' });
    });
  }
});

describe('search: the argv and the answer', () => {
  it('passes the pattern and the path as arguments, never as shell text', () => {
    const argv = searchCommand('$(touch /tmp/pwned)', 'src');
    assert.deepEqual(argv.slice(0, 5), ['timeout', '-s', 'KILL', String(searchLimits.seconds), 'sh']);
    assert.deepEqual(argv.slice(-3), ['search', '$(touch /tmp/pwned)', './src']);
    assert.equal(argv[6]!.includes('pwned'), false, 'the script does not contain the pattern');
    assert.equal(searchCommand('x', '.').at(-1), '.');
    assert.equal(searchCommand('x', '-rf').at(-1), './-rf', 'a path cannot become an option');
  });

  const table: {
    name: string;
    input: { exitCode: number; stdout: string; stderr: string };
    expected: { text: string | RegExp; hits: number; isError: boolean };
  }[] = [
    {
      name: 'hits without the ./ prefix',
      input: { exitCode: 0, stdout: './src/a.js:3:const a = 1;\n./b.txt:1:a\n', stderr: '' },
      expected: { text: 'src/a.js:3:const a = 1;\nb.txt:1:a', hits: 2, isError: false },
    },
    { name: 'no hits', input: { exitCode: 0, stdout: '', stderr: '' }, expected: { text: '', hits: 0, isError: false } },
    { name: 'killed by the timeout', input: { exitCode: 137, stdout: '', stderr: '' }, expected: { text: /stopped after 10 s/, hits: 0, isError: true } },
    {
      name: 'an invalid pattern',
      input: { exitCode: 0, stdout: '', stderr: 'grep: Unmatched ( or \\(\n' },
      expected: { text: 'search: grep: Unmatched ( or \\(', hits: 0, isError: true },
    },
    {
      name: 'more hits than the cap',
      input: { exitCode: 0, stdout: Array.from({ length: searchLimits.hits + 1 }, (_, index) => `./f:${index + 1}:x`).join('\n'), stderr: '' },
      expected: {
        text: new RegExp(`f:${searchLimits.hits}:x\\n\\[search stopped at ${searchLimits.hits} matches\\]$`),
        hits: searchLimits.hits,
        isError: false,
      },
    },
  ];
  for (const { name, input, expected } of table) {
    it(name, () => {
      const answer = searchAnswer(input);
      if (expected.text instanceof RegExp) assert.match(answer.text, expected.text);
      else assert.equal(answer.text, expected.text);
      assert.equal(answer.hits, expected.hits);
      assert.equal(answer.isError, expected.isError);
    });
  }
});
