import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig, parseRetentionDuration } from '../../core/node/config';
import { cacheEntryRetention, mirrorRetention, runRetention, type RunFacts } from '../../policies/retention';

const hour = 3_600_000;
const now = Date.UTC(2026, 0, 10);
const limits = { now, retentionMs: 24 * hour, hostId: 'h1' };
const run = (facts: Partial<RunFacts>): RunFacts => ({
  dirName: 'land.r.main.1',
  manifest: { runId: 'land.r.main.1', hostId: 'h1' },
  workflow: { state: 'closed', status: 'COMPLETED', closedAt: now - 48 * hour },
  lastWriteMs: now - 48 * hour,
  ...facts,
});

describe('runRetention', () => {
  const table: { name: string; facts: RunFacts; remove: boolean; reason: RegExp }[] = [
    { name: 'finished two days ago, retention one day', facts: run({}), remove: true, reason: /completed 2 d ago: older than the retention \(24 h\)/ },
    {
      name: 'finished an hour ago',
      facts: run({ workflow: { state: 'closed', status: 'FAILED', closedAt: now - hour } }),
      remove: false,
      reason: /failed 1 h ago: younger/,
    },
    {
      name: 'running, however old its files',
      facts: run({ workflow: { state: 'running' }, lastWriteMs: now - 400 * hour }),
      remove: false,
      reason: /^running$/,
    },
    { name: 'no manifest', facts: run({ manifest: undefined }), remove: false, reason: /no manifest/ },
    { name: 'a manifest naming another run', facts: run({ manifest: { runId: 'land.other', hostId: 'h1' } }), remove: false, reason: /names run land\.other/ },
    { name: 'another host’s run', facts: run({ manifest: { runId: 'land.r.main.1', hostId: 'h2' } }), remove: false, reason: /host h2/ },
    {
      name: 'Temporal did not answer',
      facts: run({ workflow: { state: 'unknown', problem: 'connection refused' } }),
      remove: false,
      reason: /unknown \(connection refused\)/,
    },
    {
      name: 'unknown to Temporal, files old',
      facts: run({ workflow: { state: 'not-found' } }),
      remove: true,
      reason: /unknown to Temporal, last written 2 d ago/,
    },
    {
      name: 'unknown to Temporal, files young',
      facts: run({ workflow: { state: 'not-found' }, lastWriteMs: now - 2 * hour }),
      remove: false,
      reason: /younger/,
    },
    {
      name: 'closed exactly at the retention',
      facts: run({ workflow: { state: 'closed', status: 'COMPLETED', closedAt: now - 24 * hour } }),
      remove: true,
      reason: /older/,
    },
  ];
  for (const { name, facts, remove, reason } of table) {
    it(name, () => {
      const decision = runRetention(facts, limits);
      assert.equal(decision.remove, remove);
      assert.match(decision.reason, reason);
    });
  }
  it('a removed run is dated by its workflow’s close time, not its files', () => {
    const decision = runRetention(run({ workflow: { state: 'closed', status: 'COMPLETED', closedAt: now - 30 * hour }, lastWriteMs: now - 1 }), limits);
    assert.deepEqual(decision.remove && decision.finishedAt, now - 30 * hour);
  });
});

describe('mirrorRetention', () => {
  const table = [
    { name: 'named by a kept run', usedBy: ['land.a'], lastUsedMs: now - 100 * hour, remove: false, reason: /used by 1 kept run\(s\) \(land\.a\)/ },
    { name: 'fetched into an hour ago', usedBy: [], lastUsedMs: now - hour, remove: false, reason: /fetched into 1 h ago/ },
    { name: 'idle past the retention', usedBy: [], lastUsedMs: now - 30 * hour, remove: true, reason: /no kept run uses it/ },
  ];
  for (const { name, usedBy, lastUsedMs, remove, reason } of table) {
    it(name, () => {
      const decision = mirrorRetention({ usedBy, lastUsedMs }, limits);
      assert.equal(decision.remove, remove);
      assert.match(decision.reason, reason);
    });
  }
});

describe('cacheEntryRetention', () => {
  it('keeps an entry used within the retention, removes an older one', () => {
    assert.equal(cacheEntryRetention(now - hour, limits).remove, false);
    assert.equal(cacheEntryRetention(now - 25 * hour, limits).remove, true);
  });
});

describe('TARMAC_RETENTION and TARMAC_RETENTION_EVERY', () => {
  const table: { input: string; expected: number | undefined }[] = [
    { input: '7d', expected: 7 * 24 * hour },
    { input: '36h', expected: 36 * hour },
    { input: '90m', expected: 90 * 60_000 },
    { input: '30s', expected: 30_000 },
    { input: '7 days', expected: undefined },
    { input: '-1d', expected: undefined },
    { input: '', expected: undefined },
  ];
  for (const { input, expected } of table) it(`"${input}" → ${expected}`, () => assert.equal(parseRetentionDuration(input), expected));
  it('defaults to 7 days, swept every hour', () => {
    const config = loadConfig({});
    assert.equal(config.retentionMs, 7 * 24 * hour);
    assert.equal(config.retentionEveryMs, hour);
  });
  it('off keeps everything', () => assert.equal(loadConfig({ TARMAC_RETENTION: 'off' }).retentionMs, undefined));
  it('a malformed value is refused, naming the variable', () => {
    assert.throws(() => loadConfig({ TARMAC_RETENTION: 'a week' }), /TARMAC_RETENTION: "a week" must be a duration/);
    assert.throws(() => loadConfig({ TARMAC_RETENTION_EVERY: '10ms' }), /TARMAC_RETENTION_EVERY: "10ms" must be a duration of at least 1s/);
  });
});
