import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { afterFailedVerify, failureShape, sightingKey, type FailureSighting, type NextMove } from '../../policies/repeated-failure';

describe('failureShape', () => {
  it('two runs that differ only in timings, counts, ids and temp paths have one shape', () => {
    const a = 'FAIL test/app.test.js (23 ms)\n  expected 5, got 2 at /tmp/tmp-123abc/x.js\ncommit 3f2a9c1d';
    const b = 'FAIL test/app.test.js (41 ms)\n  expected 5, got 2 at /tmp/tmp-987zzz/x.js\ncommit 9e8d7c6b';
    assert.equal(failureShape(a), failureShape(b));
  });
  it('different errors have different shapes', () => assert.notEqual(failureShape("Cannot find module './a'"), failureShape("Cannot find module './b'")));
  const table: { name: string; a: string; b: string; same: boolean }[] = [
    { name: 'a value the agent changed is another failure', a: 'value.txt says value=0, want value=2', b: 'value.txt says value=1, want value=2', same: false },
    { name: 'clock times and ISO timestamps are noise', a: '[12:01:02] 2026-12-01T12:01:02.123Z boom', b: '[13:44:59] 2026-12-01T13:44:59Z boom', same: true },
    { name: 'durations in any unit are noise', a: 'done in 1.5s, waited 230ms, 2 minutes', b: 'done in 0.9s, waited 12ms, 3 minutes', same: true },
    { name: 'pids and ports (5+ digits) are noise', a: 'process 48213 on port 38211 died', b: 'process 51002 on port 40123 died', same: true },
  ];
  for (const { name, a, b, same } of table) it(name, () => assert.equal(failureShape(a) === failureShape(b), same));
});

describe('afterFailedVerify', () => {
  const latest: FailureSighting = { command: 'make test', exitCode: 2, shape: failureShape('expected 5, got 2') };
  const table: { name: string; seen: number; toolFailures: { command: string; count: number }[]; expected: NextMove['move']; orThrash?: boolean }[] = [
    { name: 'a new failure → another agent round', seen: 1, toolFailures: [], expected: 'agent' },
    { name: 'the same command failing the same way twice → the playbooks, then thrash', seen: 2, toolFailures: [], expected: 'playbook', orThrash: true },
    {
      name: 'seen three times: still the playbooks, then thrash',
      seen: 3,
      toolFailures: [{ command: 'make test', count: 1 }],
      expected: 'playbook',
      orThrash: true,
    },
    {
      name: "a command the agent's tool loop failed twice → the playbooks, then the agent again",
      seen: 1,
      toolFailures: [{ command: 'npm test', count: 2 }],
      expected: 'playbook',
      orThrash: false,
    },
    {
      name: 'tool-loop failures once each → the agent',
      seen: 1,
      toolFailures: [
        { command: 'npm test', count: 1 },
        { command: 'ls x', count: 1 },
      ],
      expected: 'agent',
    },
  ];
  for (const { name, seen, toolFailures, expected, orThrash } of table) {
    it(name, () => {
      const next = afterFailedVerify({ seen: { [sightingKey(latest)]: seen }, latest, toolFailures });
      assert.equal(next.move, expected);
      if (next.move === 'playbook') {
        assert.equal(next.orThrash, orThrash);
        assert.match(next.why, /failed/);
      }
    });
  }
  it('the same output with another exit code is another failure', () => {
    const other = { ...latest, exitCode: 1 };
    assert.equal(afterFailedVerify({ seen: { [sightingKey(latest)]: 2, [sightingKey(other)]: 1 }, latest: other, toolFailures: [] }).move, 'agent');
  });
});
