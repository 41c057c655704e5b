import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SseParser, type SseMessage } from '../../cli/sse';

function parse(chunks: string[]): { messages: SseMessage[]; parser: SseParser } {
  const parser = new SseParser();
  const messages = chunks.flatMap((chunk) => parser.push(chunk));
  return { messages, parser };
}

const cases: { name: string; chunks: string[]; expected: SseMessage[]; lastEventId?: string; retryMs?: number }[] = [
  {
    name: 'one event with id, kind and JSON data',
    chunks: ['id: 3\nevent: phase\ndata: {"kind":"phase","phase":"gate"}\n\n'],
    expected: [{ id: '3', event: 'phase', data: '{"kind":"phase","phase":"gate"}' }],
    lastEventId: '3',
  },
  {
    name: 'a message split in the middle of a field name and of a value',
    chunks: ['id: 4\nev', 'ent: st', 'ep\ndata: {"a"', ':1}\n', '\n'],
    expected: [{ id: '4', event: 'step', data: '{"a":1}' }],
  },
  {
    name: 'multi-line data is joined with newlines',
    chunks: ['data: first\ndata: second\ndata:\n\n'],
    expected: [{ id: '', event: 'message', data: 'first\nsecond\n' }],
  },
  {
    name: 'comments (keep-alives) are skipped and dispatch nothing',
    chunks: [': keep-alive\n\n', ': keep-alive\n', 'event: end\ndata: {}\n\n'],
    expected: [{ id: '', event: 'end', data: '{}' }],
  },
  {
    name: 'CRLF line ends, with CR and LF in different chunks',
    chunks: ['id: 7\r', '\nevent: gate\r\ndata: x\r', '\n\r', '\n'],
    expected: [{ id: '7', event: 'gate', data: 'x' }],
  },
  {
    name: 'lone CR line ends',
    chunks: ['event: log\rdata: y\r\r'],
    expected: [{ id: '', event: 'log', data: 'y' }],
  },
  {
    name: 'a message cut off by the end of the stream is not dispatched and does not move the cursor',
    chunks: ['id: 1\ndata: a\n\n', 'id: 2\ndata: b\n'],
    expected: [{ id: '1', event: 'message', data: 'a' }],
    lastEventId: '1',
  },
  {
    name: 'the cursor carries over to a message without its own id',
    chunks: ['id: 5;gate-unit-r1.log=40\ndata: a\n\n', 'event: log\ndata: b\n\n'],
    expected: [
      { id: '5;gate-unit-r1.log=40', event: 'message', data: 'a' },
      { id: '5;gate-unit-r1.log=40', event: 'log', data: 'b' },
    ],
  },
  {
    name: 'no space after the colon; a field without a colon; unknown fields ignored',
    chunks: ['event:step\nfoo: bar\ndata\n\n'],
    expected: [{ id: '', event: 'step', data: '' }],
  },
  {
    name: 'retry is kept, a non-numeric retry ignored; an id containing NUL ignored',
    chunks: ['retry: 1500\nretry: soon\nid: 9\nid: bad\0id\ndata: z\n\n'],
    expected: [{ id: '9', event: 'message', data: 'z' }],
    retryMs: 1500,
  },
  {
    name: 'a byte-order mark at the start of the stream is dropped',
    chunks: ['\uFEFFdata: bom\n\n'],
    expected: [{ id: '', event: 'message', data: 'bom' }],
  },
  {
    name: 'an event type without data dispatches nothing and does not leak into the next message',
    chunks: ['event: phase\n\ndata: plain\n\n'],
    expected: [{ id: '', event: 'message', data: 'plain' }],
  },
];

describe('SseParser', () => {
  for (const { name, chunks, expected, lastEventId, retryMs } of cases) {
    it(name, () => {
      const { messages, parser } = parse(chunks);
      assert.deepEqual(messages, expected);
      if (lastEventId !== undefined) assert.equal(parser.lastEventId, lastEventId);
      if (retryMs !== undefined) assert.equal(parser.retryMs, retryMs);
    });
  }

  it('gives the same messages however the stream is split (every split point, every line-end style)', () => {
    const body = (eol: string) =>
      [
        ': keep-alive',
        'id: 1',
        'event: phase',
        'data: {"phase":"prepare"}',
        '',
        'id: 2;x.log=12',
        'event: log',
        'data: line one',
        'data: line two',
        '',
        '',
      ].join(eol);
    for (const eol of ['\n', '\r\n', '\r']) {
      const text = body(eol);
      const whole = parse([text]).messages;
      assert.equal(whole.length, 2);
      assert.deepEqual(whole[1], { id: '2;x.log=12', event: 'log', data: 'line one\nline two' });
      for (let cut = 0; cut <= text.length; cut += 1) {
        for (let second = cut; second <= text.length; second += 7) {
          assert.deepEqual(
            parse([text.slice(0, cut), text.slice(cut, second), text.slice(second)]).messages,
            whole,
            `split at ${cut}/${second} (${JSON.stringify(eol)})`,
          );
        }
      }
    }
  });
});
