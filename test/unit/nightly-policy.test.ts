import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { branchNameProblem } from '../../core/refs';
import { nightlyScheduleId } from '../../core/node/schedule-id';
import { classifyIntent, landingRepairRequest, roleFor } from '../../policies/intent';
import { afterFix, afterLanding, nightlyRunId, repairPlan, repairRequest, shellCommand } from '../../policies/nightly';

describe('nightlyRunId', () => {
  const table = [
    {
      name: 'a scheduled run (colons of the RFC 3339 time)',
      input: 'nightly.demo.main.0123456789ab-2025-03-01T03:00:00Z',
      expected: 'nightly.demo.main.0123456789ab-2025-03-01T03-00-00Z',
    },
    { name: 'a plain id', input: 'nightly.manual', expected: 'nightly.manual' },
    { name: 'dot runs and a leading dot', input: '..a..b:c.', expected: 'a.b-c' },
    { name: 'nothing usable', input: '::', expected: 'nightly' },
  ];
  for (const { name, input, expected } of table) it(name, () => assert.equal(nightlyRunId(input), expected));
  it('gives a valid repair branch name', () =>
    assert.equal(branchNameProblem(`tarmac/fix/${nightlyRunId('nightly.x.main.abc-2025-03-01T03:00:00Z')}.fix`), undefined));
});

describe('shellCommand', () => {
  const table = [
    { name: 'plain words', input: ['make', 'test'], expected: 'make test' },
    { name: 'a word with spaces', input: ['node', '-e', 'process.exit(1)'], expected: "node -e 'process.exit(1)'" },
    { name: 'a single quote', input: ['echo', "it's"], expected: "echo 'it'\\''s'" },
    { name: 'shell syntax stays literal', input: ['echo', '$HOME;rm'], expected: "echo '$HOME;rm'" },
  ];
  for (const { name, input, expected } of table) it(name, () => assert.equal(shellCommand(input), expected));
});

describe('repairPlan', () => {
  const suites = [
    { id: 'lint', run: ['make', 'lint'] },
    { id: 'test', run: ['make', 'test'] },
  ];
  const table = [
    { name: 'all green', failing: [], expected: { kind: 'green' } },
    { name: 'one red suite', failing: ['test'], expected: { kind: 'repair', failing: ['test'], reproCommand: 'make test' } },
    {
      name: 'two red suites, in gate order',
      failing: ['test', 'lint'],
      expected: { kind: 'repair', failing: ['lint', 'test'], reproCommand: 'make lint && make test' },
    },
  ];
  for (const { name, failing, expected } of table) it(name, () => assert.deepEqual(repairPlan(suites, failing), expected));
});

describe('repair requests (nightly and landing)', () => {
  for (const [name, text] of [
    ['nightly', repairRequest],
    ['landing', landingRepairRequest],
  ] as const) {
    it(`${name}: routes to an implementer as a test fix, whatever the suite is called`, () => {
      assert.equal(classifyIntent(text), 'test-fix');
      assert.equal(roleFor(classifyIntent(text)), 'implementer');
    });
  }
});

describe('afterFix', () => {
  const table = [
    {
      name: 'fixed with a branch → land it',
      input: { outcome: 'fixed', summary: 'ok', fixBranch: 'tarmac/fix/n.fix' },
      expected: { kind: 'land', branch: 'tarmac/fix/n.fix' },
    },
    {
      name: 'exhausted with partial fixes → not landed',
      input: { outcome: 'exhausted', summary: '`make test` still exits 2', fixBranch: 'tarmac/fix/n.fix' },
      expected: {
        kind: 'stop',
        status: 'repair-failed',
        summary: 'the gate is red and the fix loop ended exhausted: `make test` still exits 2; its partial fixes stay on tarmac/fix/n.fix, not landed',
      },
    },
    {
      name: 'nothing to fix (a flaky suite) → nothing landed',
      input: { outcome: 'nothing-to-fix', summary: '`make test` already exits 0', fixBranch: null },
      expected: { kind: 'stop', status: 'repair-failed', summary: 'the gate is red and the fix loop ended nothing-to-fix: `make test` already exits 0' },
    },
  ];
  for (const { name, input, expected } of table) it(name, () => assert.deepEqual(afterFix(input), expected));
});

describe('afterLanding', () => {
  const table = [
    { input: 'landed', expected: 'repaired' },
    { input: 'gate-failed', expected: 'landing-failed' },
    { input: 'cancelled', expected: 'landing-failed' },
  ];
  for (const { input, expected } of table) it(input, () => assert.equal(afterLanding(input), expected));
});

describe('nightlyScheduleId', () => {
  it('is one id per (repo, target)', () => assert.equal(nightlyScheduleId('/srv/app.git', 'main'), nightlyScheduleId('/srv/app.git', 'main')));
  it('differs for another target', () => assert.notEqual(nightlyScheduleId('/srv/app.git', 'main'), nightlyScheduleId('/srv/app.git', 'release/1')));
  it('differs for another repo', () => assert.notEqual(nightlyScheduleId('/srv/app.git', 'main'), nightlyScheduleId('/srv/other/app.git', 'main')));
  it('is readable and safe in URLs', () =>
    assert.match(nightlyScheduleId('git@example.com:team/My App.git', 'release/2.0'), /^nightly\.My_App\.release_2\.0\.[0-9a-f]{12}$/));
});
