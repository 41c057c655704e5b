import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { freePort, uniquePicks } from '../../infra/ports';

/** Binds the port on loopback and lets it go again: it was free. */
const bindable = (port: number) =>
  new Promise<void>((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => server.close(() => resolve()));
  });

describe('freePort: a loopback port that is free, never the same one twice in a process', () => {
  it('hands out 60 distinct ports, each bindable when handed out', async () => {
    const ports: number[] = [];
    for (let index = 0; index < 60; index += 1) {
      const port = await freePort();
      await bindable(port);
      ports.push(port);
    }
    assert.equal(new Set(ports).size, ports.length, `repeated: ${ports.filter((port, index) => ports.indexOf(port) !== index).join(', ')}`);
  });
});

describe('uniquePicks: a port the system offers again is skipped, not handed out twice', () => {
  it('skips repeats of the picks and fails after 100 picks of nothing new', async () => {
    const offered = [5001, 5001, 5002, 5001, 5002, 5003];
    const next = uniquePicks(async () => offered.shift() ?? 5001);
    assert.deepEqual([await next(), await next(), await next()], [5001, 5002, 5003]);
    await assert.rejects(next(), /100 picks/);
  });
});
