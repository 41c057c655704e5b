import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { describe, it } from 'node:test';
import { endToEndHeaders } from '../../activities/gateways/egress-relay';

// What the egress gateway forwards of a plain HTTP request's (or response's) headers: never one hop's, never the proxy's.
const table: { name: string; input: IncomingHttpHeaders; expected: Record<string, string | string[]> }[] = [
  {
    name: 'end-to-end headers pass',
    input: { accept: 'application/json', 'user-agent': 'apt', 'if-none-match': '"x"' },
    expected: { accept: 'application/json', 'user-agent': 'apt', 'if-none-match': '"x"' },
  },
  {
    name: 'hop-by-hop headers are dropped',
    input: {
      accept: '*/*',
      connection: 'keep-alive',
      'keep-alive': 'timeout=5',
      te: 'trailers',
      trailer: 'x',
      'transfer-encoding': 'chunked',
      upgrade: 'websocket',
    },
    expected: { accept: '*/*' },
  },
  {
    name: 'proxy credentials and other proxy headers are dropped',
    input: { accept: '*/*', 'proxy-authorization': 'Basic c2VjcmV0', 'proxy-connection': 'keep-alive' },
    expected: { accept: '*/*' },
  },
  { name: 'headers the Connection header names are dropped', input: { connection: 'close, X-Hop', 'x-hop': '1', 'x-kept': '2' }, expected: { 'x-kept': '2' } },
  { name: "host is dropped (the gateway sets the target's)", input: { host: 'elsewhere.example.com', accept: '*/*' }, expected: { accept: '*/*' } },
  { name: 'repeated headers stay lists', input: { 'set-cookie': ['a=1', 'b=2'] }, expected: { 'set-cookie': ['a=1', 'b=2'] } },
];

describe('endToEndHeaders (egress relay)', () => {
  for (const { name, input, expected } of table) it(name, () => assert.deepEqual(endToEndHeaders(input), expected));
});
