import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { FailureCode, FixFailure } from '../../core/failures';
import { causeOf, outcomeOf, typedCauseOf } from '../../workflows/run-record';

const workflowsDir = join(__dirname, '../../workflows');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

describe('outcomeOf: the failure table, per kind', () => {
  const table = [
    { name: 'a moved target ends a landing as target-moved', kind: 'landing', code: FailureCode.targetMoved, expected: 'target-moved' },
    { name: 'a moved target ends a session as failed', kind: 'session', code: FailureCode.targetMoved, expected: 'failed' },
    { name: 'a spent budget ends a session as budget-exhausted', kind: 'session', code: FailureCode.budgetExhausted, expected: 'budget-exhausted' },
    { name: 'an internal failure ends a nightly as failed', kind: 'nightly', code: FailureCode.internal, expected: 'failed' },
    { name: "a fix loop's cancellation ends it as cancelled", kind: 'fix', code: FixFailure.cancelled, expected: 'cancelled' },
  ] as const;
  for (const { name, kind, code, expected } of table) {
    it(name, () => assert.equal(outcomeOf(kind, code as never), expected));
  }
});

describe('causeOf: the failure type and message of an error', () => {
  const wrapped = Object.assign(new Error('Activity task failed'), {
    cause: ApplicationFailure.create({ type: FailureCode.targetMoved, message: 'the target moved' }),
  });
  const table = [
    {
      name: "an activity's failure: its cause's type and message",
      error: wrapped,
      expected: { type: FailureCode.targetMoved, message: 'the target moved' },
      typed: { type: FailureCode.targetMoved, message: 'the target moved' },
    },
    {
      name: "a local activity's failure: its own type",
      error: ApplicationFailure.create({ type: FailureCode.wrongHost, message: 'not this host' }),
      expected: { type: FailureCode.wrongHost, message: 'not this host' },
      typed: { type: FailureCode.wrongHost, message: 'not this host' },
    },
    {
      name: 'a plain error: its message, no type (TARMAC_INTERNAL when one is needed)',
      error: new Error('boom'),
      expected: { message: 'boom' },
      typed: { type: FailureCode.internal, message: 'boom' },
    },
    { name: 'not an error at all: its text', error: 'odd', expected: { message: 'odd' }, typed: { type: FailureCode.internal, message: 'odd' } },
  ];
  for (const { name, error, expected, typed } of table) {
    it(name, () => {
      assert.deepEqual(causeOf(error), expected);
      assert.deepEqual(typedCauseOf(error), typed);
    });
  }
});

describe('the run record is the one place a failure becomes a status', () => {
  it('no workflow file but run-record.ts calls the failure table (endsAs, fixOutcomeOf)', () => {
    const callers = sourceFiles(workflowsDir)
      .filter((file) => /\b(endsAs|fixOutcomeOf)\(/.test(readFileSync(file, 'utf8')))
      .map((file) => relative(workflowsDir, file));
    assert.deepEqual(callers, ['run-record.ts']);
  });
});
