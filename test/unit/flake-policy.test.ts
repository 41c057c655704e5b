import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { GateSuiteResult } from '../../core/types';
import {
  activeQuarantines,
  addQuarantine,
  decide,
  defaultFlakePolicy,
  flakePolicy,
  settle,
  wantsEvidence,
  type FlakePolicy,
  type QuarantineView,
} from '../../policies/flake';

type Status = GateSuiteResult['status'];

describe('settle: what the re-run on the same tree and the run on the base say about a red', () => {
  const table: { again: Status; onBase: Status; expected: ReturnType<typeof settle> }[] = [
    { again: 'passed', onBase: 'passed', expected: 'flaky' },
    { again: 'passed', onBase: 'failed', expected: 'flaky' },
    { again: 'passed', onBase: 'timed-out', expected: 'flaky' },
    { again: 'failed', onBase: 'failed', expected: 'pre-existing' },
    { again: 'failed', onBase: 'timed-out', expected: 'pre-existing' },
    { again: 'timed-out', onBase: 'failed', expected: 'pre-existing' },
    { again: 'failed', onBase: 'passed', expected: 'failed' },
    { again: 'timed-out', onBase: 'passed', expected: 'failed' },
  ];
  for (const { again, onBase, expected } of table) {
    it(`again ${again}, on the base ${onBase} → ${expected}`, () => assert.equal(settle(again, onBase), expected));
  }
});

describe('decide: the recipe’s answer to a settlement', () => {
  const policy = (flaky: FlakePolicy['flaky'], preExisting: FlakePolicy['preExisting']): FlakePolicy => ({ flaky, preExisting, quarantineFor: '1h' });
  const table: { name: string; settled: ReturnType<typeof settle>; policy: FlakePolicy; expected: ReturnType<typeof decide> }[] = [
    {
      name: 'flaky, retry → counts, no quarantine',
      settled: 'flaky',
      policy: policy('retry', 'fail'),
      expected: { blocks: false, excusedBy: 'retry', quarantine: false },
    },
    {
      name: 'flaky, quarantine → counts, quarantined',
      settled: 'flaky',
      policy: policy('quarantine', 'fail'),
      expected: { blocks: false, excusedBy: 'quarantine', quarantine: true },
    },
    { name: 'flaky, fail → blocks', settled: 'flaky', policy: policy('fail', 'allow'), expected: { blocks: true, quarantine: false } },
    {
      name: 'pre-existing, allow → counts, no quarantine',
      settled: 'pre-existing',
      policy: policy('fail', 'allow'),
      expected: { blocks: false, excusedBy: 'pre-existing', quarantine: false },
    },
    {
      name: 'pre-existing, quarantine → counts, quarantined',
      settled: 'pre-existing',
      policy: policy('retry', 'quarantine'),
      expected: { blocks: false, excusedBy: 'quarantine', quarantine: true },
    },
    { name: 'pre-existing, fail → blocks', settled: 'pre-existing', policy: policy('retry', 'fail'), expected: { blocks: true, quarantine: false } },
    {
      name: 'failed blocks whatever the recipe says (retry, allow)',
      settled: 'failed',
      policy: policy('retry', 'allow'),
      expected: { blocks: true, quarantine: false },
    },
    {
      name: 'failed blocks whatever the recipe says (quarantine, quarantine)',
      settled: 'failed',
      policy: policy('quarantine', 'quarantine'),
      expected: { blocks: true, quarantine: false },
    },
  ];
  for (const { name, settled, policy: chosen, expected } of table) {
    it(name, () => assert.deepEqual(decide(settled, chosen), expected));
  }
});

describe('flakePolicy and wantsEvidence', () => {
  it('a recipe without limits.gate (a run started before it) gets the defaults: retry, fail, a week', () => {
    assert.deepEqual(flakePolicy(undefined), { flaky: 'retry', preExisting: 'fail', quarantineFor: '168h' });
    assert.deepEqual(flakePolicy(undefined), defaultFlakePolicy);
  });
  it('each field the recipe sets wins; the rest default', () => {
    assert.deepEqual(flakePolicy({ flaky: 'quarantine', quarantineFor: '5s' }), { flaky: 'quarantine', preExisting: 'fail', quarantineFor: '5s' });
    assert.deepEqual(flakePolicy({ preExisting: 'allow' }), { flaky: 'retry', preExisting: 'allow', quarantineFor: '168h' });
  });
  const table: { flaky: FlakePolicy['flaky']; preExisting: FlakePolicy['preExisting']; expected: boolean }[] = [
    { flaky: 'fail', preExisting: 'fail', expected: false },
    { flaky: 'retry', preExisting: 'fail', expected: true },
    { flaky: 'fail', preExisting: 'allow', expected: true },
    { flaky: 'quarantine', preExisting: 'quarantine', expected: true },
  ];
  for (const { flaky, preExisting, expected } of table) {
    it(`flaky ${flaky}, pre-existing ${preExisting}: evidence runs ${expected ? 'wanted' : 'not wanted (every red blocks as before, no container spent)'}`, () =>
      assert.equal(wantsEvidence({ flaky, preExisting, quarantineFor: '1h' }), expected));
  }
});

describe('quarantines: in force until their end, never shortened by new evidence', () => {
  const at = (iso: string) => Date.parse(iso);
  const entry = (suiteId: string, since: string, until: string, extra: Partial<QuarantineView & { landingId: string }> = {}) => ({
    suiteId,
    since,
    until,
    landingId: 'land.a',
    ...extra,
  });
  it('an entry is in force strictly before its end', () => {
    const entries = [
      entry('test', '2030-01-01T00:00:00.000Z', '2030-01-01T01:00:00.000Z'),
      entry('lint', '2030-01-01T00:00:00.000Z', '2030-01-01T00:30:00.000Z'),
    ];
    assert.deepEqual(
      activeQuarantines(entries, at('2030-01-01T00:29:59.999Z')).map((e) => e.suiteId),
      ['test', 'lint'],
    );
    assert.deepEqual(
      activeQuarantines(entries, at('2030-01-01T00:30:00.000Z')).map((e) => e.suiteId),
      ['test'],
    );
    assert.deepEqual(activeQuarantines(entries, at('2030-01-01T01:00:00.000Z')), []);
  });
  const table: {
    name: string;
    existing: ReturnType<typeof entry>[];
    added: ReturnType<typeof entry>;
    expected: { suiteId: string; since: string; until: string; landingId: string }[];
  }[] = [
    {
      name: 'a new suite is added',
      existing: [entry('lint', 'T0', '2030-01-02T00:00:00.000Z')],
      added: entry('test', '2030-01-01T00:00:00.000Z', '2030-01-01T01:00:00.000Z', { landingId: 'land.b' }),
      expected: [
        entry('lint', 'T0', '2030-01-02T00:00:00.000Z'),
        entry('test', '2030-01-01T00:00:00.000Z', '2030-01-01T01:00:00.000Z', { landingId: 'land.b' }),
      ],
    },
    {
      name: 'again with a later end: extended, first quarantined when it was, the new evidence kept',
      existing: [entry('test', '2030-01-01T00:00:00.000Z', '2030-01-01T01:00:00.000Z')],
      added: entry('test', '2030-01-01T00:30:00.000Z', '2030-01-01T01:30:00.000Z', { landingId: 'land.b' }),
      expected: [entry('test', '2030-01-01T00:00:00.000Z', '2030-01-01T01:30:00.000Z', { landingId: 'land.b' })],
    },
    {
      name: 'again with an earlier end (a shorter recipe): the later end stays',
      existing: [entry('test', '2030-01-01T00:00:00.000Z', '2030-01-08T00:00:00.000Z')],
      added: entry('test', '2030-01-01T00:30:00.000Z', '2030-01-01T00:30:05.000Z', { landingId: 'land.b' }),
      expected: [entry('test', '2030-01-01T00:00:00.000Z', '2030-01-08T00:00:00.000Z', { landingId: 'land.b' })],
    },
  ];
  for (const { name, existing, added, expected } of table) {
    it(name, () => assert.deepEqual(addQuarantine(existing, added), expected));
  }
});
