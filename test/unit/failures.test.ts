import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { ApiError } from '../../api/errors';
import {
  endsAs,
  failure,
  failureRow,
  failureTable,
  FailureCode,
  fixFailureTable,
  FixFailure,
  fixOutcomeOf,
  httpStatus,
  isFailureCode,
  nonRetryableCodes,
  type Ends,
  type RunFailureCode,
} from '../../core/failures';
import { LandingStatus } from '../../core/types';
import { NightlyStatus } from '../../core/nightly-types';
import { afterFix, afterLanding } from '../../policies/nightly';
import { capsule, gateSuite, sessionRun } from '../../workflows/activity-options';

const root = join(__dirname, '..', '..');
const rows = Object.entries(failureTable);

describe('the failure table: one row per code', () => {
  // The wire strings are a contract (outcomes, ApplicationFailure types, API bodies, clients' tests):
  // this list is what they were before the table, plus the codes workflows used to spell inline
  // (and TARMAC_WRONG_HOST, which a host-bound local capsule answers on another host).
  const wire: Record<keyof typeof failureTable, string> = {
    repoUnreachable: 'TARMAC_REPO_UNREACHABLE',
    refNotFound: 'TARMAC_REF_NOT_FOUND',
    imageMissing: 'TARMAC_IMAGE_MISSING',
    targetMoved: 'TARMAC_TARGET_MOVED',
    notFastForward: 'TARMAC_NOT_FAST_FORWARD',
    pushRefused: 'TARMAC_PUSH_REFUSED',
    recipesInvalid: 'TARMAC_RECIPES_INVALID',
    unknownModel: 'TARMAC_UNKNOWN_MODEL',
    invalidRequest: 'TARMAC_INVALID_REQUEST',
    invalidEnvironment: 'TARMAC_INVALID_ENVIRONMENT',
    environmentFailed: 'TARMAC_ENVIRONMENT_FAILED',
    manifestInvalid: 'TARMAC_MANIFEST_INVALID',
    budgetExhausted: 'TARMAC_BUDGET_EXHAUSTED',
    wrongHost: 'TARMAC_WRONG_HOST',
    invalidGateFile: 'TARMAC_INVALID_GATE_FILE',
    agentUnavailable: 'TARMAC_AGENT_UNAVAILABLE',
    droppedCommits: 'TARMAC_DROPPED_COMMITS',
    conflictUnresolved: 'TARMAC_CONFLICT_UNRESOLVED',
    needsDecision: 'TARMAC_NEEDS_DECISION',
    gateFailed: 'TARMAC_GATE_FAILED',
    fixupFailed: 'TARMAC_FIXUP_FAILED',
    reviewIncomplete: 'TARMAC_REVIEW_INCOMPLETE',
    reviewBlocked: 'TARMAC_REVIEW_BLOCKED',
    verifyFailed: 'TARMAC_VERIFY_FAILED',
    lostHost: 'TARMAC_LOST_HOST',
    repairFailed: 'TARMAC_REPAIR_FAILED',
    landingFailed: 'TARMAC_LANDING_FAILED',
    internal: 'TARMAC_INTERNAL',
    validation: 'TARMAC_VALIDATION',
    unauthorized: 'TARMAC_UNAUTHORIZED',
    notFound: 'TARMAC_NOT_FOUND',
    methodNotAllowed: 'TARMAC_METHOD_NOT_ALLOWED',
    conflict: 'TARMAC_CONFLICT',
    rateLimited: 'TARMAC_RATE_LIMITED',
    unavailable: 'TARMAC_UNAVAILABLE',
  };

  it('every name has its wire string, and FailureCode says the same', () => {
    assert.deepEqual(Object.fromEntries(rows.map(([name, row]) => [name, row.code])), wire);
    assert.deepEqual({ ...FailureCode }, wire);
  });

  it('no two codes share a string, and each is found back by its string', () => {
    const codes = rows.map(([, row]) => row.code);
    assert.equal(new Set(codes).size, codes.length);
    for (const [name, row] of rows) {
      assert.ok(isFailureCode(row.code), name);
      assert.equal(failureRow(row.code), row, name);
    }
    assert.equal(isFailureCode('TARMAC_DATA_DIR'), false);
    assert.equal(isFailureCode('Error'), false);
  });

  it('every row says what it means, and every run failure ends every kind of run', () => {
    for (const [name, row] of rows) {
      assert.ok(row.description.length > 20, `${name}: a description`);
      if (row.raised === 'answered') continue;
      const ends: Ends = row.ends;
      assert.ok(Object.values(LandingStatus).includes(ends.landing), `${name}: landing ${ends.landing}`);
      assert.ok(Object.values(NightlyStatus).includes(ends.nightly), `${name}: nightly ${ends.nightly}`);
      assert.ok(['failed', 'invalid-request', 'budget-exhausted', 'agent-unavailable'].includes(ends.session), `${name}: session ${ends.session}`);
    }
  });

  it('every failure status of a landing and a nightly is reached by a code (no status without its code)', () => {
    // `needs-rebase` is a status no landing ends with today; landed, cancelled and green/repaired are not failures.
    const notFailures = new Set(['landed', 'cancelled', 'needs-rebase', 'green', 'repaired']);
    const runRows = rows.flatMap(([, row]) => (row.raised === 'answered' ? [] : [row]));
    for (const status of Object.values(LandingStatus).filter((value) => !notFailures.has(value))) {
      assert.ok(
        runRows.some((row) => row.ends.landing === status),
        `landing ${status}`,
      );
    }
    for (const status of Object.values(NightlyStatus).filter((value) => !notFailures.has(value))) {
      assert.ok(
        runRows.some((row) => row.ends.nightly === status),
        `nightly ${status}`,
      );
    }
  });
});

describe('endsAs: the status a run ends with on a code', () => {
  // The pairs the workflows wrote inline before the table; they must not change.
  const table: { name: string; kind: keyof Ends; code: RunFailureCode; expected: string }[] = [
    { name: 'a red gate, no fixup round left', kind: 'landing', code: FailureCode.gateFailed, expected: 'gate-failed' },
    { name: 'still red after the fixup rounds', kind: 'landing', code: FailureCode.fixupFailed, expected: 'fixup-failed' },
    { name: 'a missing reviewer', kind: 'landing', code: FailureCode.reviewIncomplete, expected: 'review-incomplete' },
    { name: 'blocking findings', kind: 'landing', code: FailureCode.reviewBlocked, expected: 'review-blocked' },
    { name: 'a lost commit', kind: 'landing', code: FailureCode.droppedCommits, expected: 'dropped-commits' },
    { name: 'a conflict no resolver solved', kind: 'landing', code: FailureCode.conflictUnresolved, expected: 'conflict-unresolved' },
    { name: 'verification refused', kind: 'landing', code: FailureCode.verifyFailed, expected: 'verify-failed' },
    { name: 'an unapproved gate-file edit', kind: 'landing', code: FailureCode.needsDecision, expected: 'needs-decision' },
    { name: 'an invalid gate file', kind: 'landing', code: FailureCode.invalidGateFile, expected: 'invalid-gate-file' },
    { name: 'the target kept moving', kind: 'landing', code: FailureCode.targetMoved, expected: 'target-moved' },
    { name: 'the budget is spent', kind: 'landing', code: FailureCode.budgetExhausted, expected: 'budget-exhausted' },
    { name: 'no agent can start', kind: 'landing', code: FailureCode.agentUnavailable, expected: 'agent-unavailable' },
    { name: 'anything unexpected', kind: 'landing', code: FailureCode.internal, expected: 'failed' },
    { name: 'a missing ref thrown out of a phase', kind: 'landing', code: FailureCode.refNotFound, expected: 'failed' },
    { name: 'a session with no agent', kind: 'session', code: FailureCode.agentUnavailable, expected: 'agent-unavailable' },
    { name: 'a session whose host is gone', kind: 'session', code: FailureCode.lostHost, expected: 'failed' },
    { name: 'a session refused at dispatch', kind: 'session', code: FailureCode.invalidRequest, expected: 'invalid-request' },
    { name: 'a session with an unknown model', kind: 'session', code: FailureCode.unknownModel, expected: 'invalid-request' },
    { name: 'a session failing unexpectedly', kind: 'session', code: FailureCode.internal, expected: 'failed' },
    { name: 'a nightly with an invalid gate file', kind: 'nightly', code: FailureCode.invalidGateFile, expected: 'invalid-gate-file' },
    { name: 'a nightly whose fix loop failed', kind: 'nightly', code: FailureCode.repairFailed, expected: 'repair-failed' },
    { name: 'a nightly whose landing failed', kind: 'nightly', code: FailureCode.landingFailed, expected: 'landing-failed' },
    { name: 'a nightly failing unexpectedly', kind: 'nightly', code: FailureCode.internal, expected: 'failed' },
    { name: 'a landing code means nothing special to a nightly', kind: 'nightly', code: FailureCode.gateFailed, expected: 'failed' },
  ];
  for (const { name, kind, code, expected } of table) {
    it(`${name}: ${kind} ${code} → ${expected}`, () => assert.equal(endsAs(kind, code), expected));
  }

  it("agrees with the nightly policy's statuses", () => {
    const stop = afterFix({ outcome: 'exhausted', summary: 'still red', fixBranch: null });
    assert.equal(stop.kind === 'stop' && stop.status, endsAs('nightly', FailureCode.repairFailed));
    assert.equal(afterLanding('gate-failed'), endsAs('nightly', FailureCode.landingFailed));
  });
});

describe('retryability', () => {
  const thrown = rows.flatMap(([, row]) => (row.raised === 'thrown' ? [row] : []));

  it('every thrown code is non-retryable today, and only thrown codes are listed', () => {
    assert.deepEqual(
      thrown.filter((row) => row.retryable).map((row) => row.code),
      [],
    );
    assert.deepEqual([...nonRetryableCodes].sort(), thrown.map((row) => row.code).sort());
  });

  it('every activity preset refuses to retry them', () => {
    for (const [name, options] of [
      ['capsule', capsule],
      ['gateSuite', gateSuite(60_000)],
      ['sessionRun', sessionRun(60_000, 30_000)],
    ] as const) {
      assert.deepEqual(options.retry?.nonRetryableErrorTypes, [...nonRetryableCodes], name);
    }
  });

  it('failure(): an ApplicationFailure of the code, non-retryable as the table says, details as its first detail', () => {
    const refused = failure(FailureCode.unknownModel, 'agents.fixer: unknown', { field: 'agents.fixer', nearest: ['script#fixer'] });
    assert.ok(refused instanceof ApplicationFailure);
    assert.equal(refused.type, 'TARMAC_UNKNOWN_MODEL');
    assert.equal(refused.message, 'agents.fixer: unknown');
    assert.equal(refused.nonRetryable, true);
    assert.deepEqual(refused.details, [{ field: 'agents.fixer', nearest: ['script#fixer'] }]);
    assert.deepEqual(failure(FailureCode.refNotFound, 'no such ref').details, []);
  });
});

describe('HTTP statuses of the API', () => {
  const table: { code: Parameters<typeof httpStatus>[0]; expected: number }[] = [
    { code: FailureCode.validation, expected: 400 },
    { code: FailureCode.unknownModel, expected: 400 },
    { code: FailureCode.agentUnavailable, expected: 400 },
    { code: FailureCode.unauthorized, expected: 401 },
    { code: FailureCode.notFound, expected: 404 },
    { code: FailureCode.methodNotAllowed, expected: 405 },
    { code: FailureCode.conflict, expected: 409 },
    { code: FailureCode.rateLimited, expected: 429 },
    { code: FailureCode.internal, expected: 500 },
    { code: FailureCode.unavailable, expected: 503 },
    { code: FailureCode.recipesInvalid, expected: 500 },
  ];
  for (const { code, expected } of table) {
    it(`${code} → ${expected}, and an ApiError of it answers so`, () => {
      assert.equal(httpStatus(code), expected);
      const error = new ApiError(code, 'x');
      assert.equal(error.statusCode, expected);
      assert.equal(error.code, code);
    });
  }

  it('every code the API answers with has a status; the others have none', () => {
    for (const [name, row] of rows) {
      const answered = table.some((entry) => entry.code === row.code);
      assert.equal('http' in row, answered, name);
    }
  });
});

describe('the fix loop vocabulary', () => {
  const table: { type: (typeof FixFailure)[keyof typeof FixFailure]; expected: string }[] = [
    { type: FixFailure.budgetExhausted, expected: 'exhausted' },
    { type: FixFailure.repairsExhausted, expected: 'exhausted' },
    { type: FixFailure.thrashing, expected: 'thrashing' },
    { type: FixFailure.commandThrashing, expected: 'thrashing' },
    { type: FixFailure.noRepro, expected: 'no-repro' },
    { type: FixFailure.needsDecision, expected: 'needs-decision' },
    { type: FixFailure.agentUnavailable, expected: 'agent-unavailable' },
    { type: FixFailure.agentFailed, expected: 'failed' },
    { type: FixFailure.error, expected: 'failed' },
    { type: FixFailure.cancelled, expected: 'cancelled' },
  ];
  for (const { type, expected } of table) {
    it(`${type} → ${expected}`, () => assert.equal(fixOutcomeOf(type), expected));
  }
  it('every type has a row, and no two share a string', () => {
    const types = Object.values(fixFailureTable).map((row) => row.type);
    assert.equal(new Set(types).size, types.length);
    assert.deepEqual(types.sort(), table.map((entry) => entry.type).sort());
  });
});

describe('no failure code spelled outside the table', () => {
  function sources(dir: string): string[] {
    return readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return sources(path);
      return path.endsWith('.ts') ? [path] : [];
    });
  }

  it('core, policies, workflows, activities, api and cli use FailureCode, never a quoted code', () => {
    const codes = new Set<string>(rows.map(([, row]) => row.code));
    const found: string[] = [];
    for (const folder of ['core', 'policies', 'workflows', 'activities', 'api', 'cli', 'worker']) {
      for (const file of sources(join(root, folder))) {
        if (file.endsWith(join('core', 'failures.ts'))) continue;
        // Quoted as a string in code ('…' or "…"); doc comments may name a code in backticks.
        for (const match of readFileSync(file, 'utf8').matchAll(/(['"])(TARMAC_[A-Z_]+)\1/g)) {
          if (codes.has(match[2]!)) found.push(`${relative(root, file)}: ${match[2]}`);
        }
      }
    }
    assert.deepEqual(found, []);
  });
});
