import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Finding } from '../../core/session-result';
import { findingsCachePath } from '../../policies/findings-cache-key';
import type { ReviewerReport } from '../../core/review-types';
import type { SessionOutcome } from '../../core/session-types';
import { decidePanel, reviewerReportOf } from '../../policies/quorum';

const tree = 'a'.repeat(40);
const finding = (file: string, line: number, severity: Finding['severity'], rule = 'todo'): Finding => ({ file, line, severity, rule, message: rule });
const delivered = (harnessModel: string, findings: Finding[] = []): ReviewerReport => ({ harnessModel, status: 'delivered', findings });
const errored = (harnessModel: string): ReviewerReport => ({ harnessModel, status: 'errored', findings: [], reason: 'failed: gave up after 2 attempt(s)' });
const unavailable = (harnessModel: string): ReviewerReport => ({
  harnessModel,
  status: 'unavailable',
  findings: [],
  reason: 'agent-unavailable: key K is not set',
});

describe('decidePanel (quorum)', () => {
  const table: {
    name: string;
    reports: ReviewerReport[];
    quorum: number;
    rule?: 'incomplete' | 'skip';
    expected: {
      status: string;
      delivered: number;
      missing: string[];
      findings: number;
      blocking: number;
      errored?: string[];
      unavailable?: string[];
      skipped?: { harnessModel: string; reason: string }[];
      incomplete?: RegExp;
    };
  }[] = [
    {
      name: 'all clean → approved',
      reports: [delivered('a#1'), delivered('b#1'), delivered('c#1')],
      quorum: 2,
      expected: { status: 'approved', delivered: 3, missing: [], findings: 0, blocking: 0 },
    },
    {
      name: 'an errored reviewer → review-incomplete whatever the quorum (2 of 3 delivered, quorum 2)',
      reports: [delivered('a#1'), delivered('b#1'), errored('c#1')],
      quorum: 2,
      expected: { status: 'review-incomplete', delivered: 2, missing: ['c#1'], findings: 0, blocking: 0, errored: ['c#1'] },
    },
    {
      name: 'an errored reviewer → review-incomplete even with a quorum of 1',
      reports: [delivered('a#1'), errored('b#1')],
      quorum: 1,
      expected: { status: 'review-incomplete', delivered: 1, missing: ['b#1'], findings: 0, blocking: 0, errored: ['b#1'] },
    },
    {
      name: 'an errored reviewer → review-incomplete, not changes-requested, even beside a blocking finding',
      reports: [delivered('a#1', [finding('x.js', 3, 'blocking')]), delivered('b#1'), errored('c#1')],
      quorum: 2,
      expected: { status: 'review-incomplete', delivered: 2, missing: ['c#1'], findings: 1, blocking: 1, errored: ['c#1'] },
    },
    {
      name: 'every configured reviewer counts: one that cannot run here → review-incomplete, naming why, though the quorum delivered',
      reports: [delivered('a#1'), delivered('b#1'), unavailable('c#1')],
      quorum: 2,
      expected: {
        status: 'review-incomplete',
        delivered: 2,
        missing: ['c#1'],
        findings: 0,
        blocking: 0,
        errored: [],
        unavailable: ['c#1'],
        skipped: [],
        incomplete: /^every configured reviewer counts, and 1 cannot run here \(set what is missing, or mark the panel "unavailable": "skip"\)$/,
      },
    },
    {
      name: '"skip": a reviewer that cannot run here is left out and listed with why; the quorum decides over the rest',
      reports: [delivered('a#1'), delivered('b#1'), unavailable('c#1')],
      quorum: 2,
      rule: 'skip',
      expected: {
        status: 'approved',
        delivered: 2,
        missing: ['c#1'],
        findings: 0,
        blocking: 0,
        errored: [],
        unavailable: ['c#1'],
        skipped: [{ harnessModel: 'c#1', reason: 'agent-unavailable: key K is not set' }],
      },
    },
    {
      name: '"skip": blocking findings of the rest still request changes',
      reports: [delivered('a#1', [finding('x.js', 3, 'blocking')]), delivered('b#1'), unavailable('c#1')],
      quorum: 2,
      rule: 'skip',
      expected: { status: 'changes-requested', delivered: 2, missing: ['c#1'], findings: 1, blocking: 1 },
    },
    {
      name: '"skip" and a quorum more than the reviewers left → review-incomplete, naming why',
      reports: [delivered('a#1'), unavailable('b#1'), unavailable('c#1')],
      quorum: 2,
      rule: 'skip',
      expected: {
        status: 'review-incomplete',
        delivered: 1,
        missing: ['b#1', 'c#1'],
        findings: 0,
        blocking: 0,
        errored: [],
        unavailable: ['b#1', 'c#1'],
        incomplete: /^the quorum of 2 cannot be met: 2 reviewer\(s\) skipped, 1 left$/,
      },
    },
    {
      name: '"skip" does not excuse an errored reviewer',
      reports: [delivered('a#1'), delivered('b#1'), errored('c#1'), unavailable('d#1')],
      quorum: 2,
      rule: 'skip',
      expected: {
        status: 'review-incomplete',
        delivered: 2,
        missing: ['c#1', 'd#1'],
        findings: 0,
        blocking: 0,
        errored: ['c#1'],
        incomplete: /^an errored reviewer/,
      },
    },
    {
      name: 'by default, unavailable reviewers below the quorum → review-incomplete',
      reports: [delivered('a#1'), unavailable('b#1'), unavailable('c#1')],
      quorum: 2,
      expected: { status: 'review-incomplete', delivered: 1, missing: ['b#1', 'c#1'], findings: 0, blocking: 0, errored: [], unavailable: ['b#1', 'c#1'] },
    },
    {
      name: 'too few delivered → review-incomplete, even with no findings',
      reports: [delivered('a#1'), errored('b#1'), errored('c#1')],
      quorum: 2,
      expected: { status: 'review-incomplete', delivered: 1, missing: ['b#1', 'c#1'], findings: 0, blocking: 0 },
    },
    {
      name: 'a blocking finding → changes-requested',
      reports: [delivered('a#1', [finding('x.js', 3, 'blocking', 'debugger')]), delivered('b#1')],
      quorum: 2,
      expected: { status: 'changes-requested', delivered: 2, missing: [], findings: 1, blocking: 1 },
    },
    {
      name: 'duplicates across reviewers merge',
      reports: [
        delivered('a#1', [finding('x.js', 3, 'minor')]),
        delivered('b#1', [finding('x.js', 3, 'minor')]),
        delivered('c#1', [finding('y.js', 1, 'minor')]),
      ],
      quorum: 3,
      expected: { status: 'approved', delivered: 3, missing: [], findings: 2, blocking: 0 },
    },
    {
      name: 'incomplete wins over blocking (no verdict without quorum)',
      reports: [delivered('a#1', [finding('x.js', 3, 'blocking')]), errored('b#1')],
      quorum: 2,
      expected: { status: 'review-incomplete', delivered: 1, missing: ['b#1'], findings: 1, blocking: 1 },
    },
  ];
  for (const { name, reports, quorum, rule, expected } of table) {
    it(name, () => {
      const decision = decidePanel(reports, quorum, ['blocking'], rule);
      assert.equal(decision.status, expected.status);
      assert.equal(decision.delivered, expected.delivered);
      assert.deepEqual(decision.missing, expected.missing);
      assert.equal(decision.findings.length, expected.findings);
      assert.equal(decision.blocking.length, expected.blocking);
      if (expected.errored) assert.deepEqual(decision.errored, expected.errored);
      if (expected.unavailable) assert.deepEqual(decision.unavailable, expected.unavailable);
      if (expected.skipped) assert.deepEqual(decision.skipped, expected.skipped);
      if (expected.incomplete) assert.match(decision.incomplete ?? '', expected.incomplete);
      else assert.equal(decision.incomplete === undefined, decision.status !== 'review-incomplete', 'a reason exactly when incomplete');
    });
  }
  it('merged findings carry their votes', () => {
    const decision = decidePanel([delivered('a#1', [finding('x.js', 3, 'minor')]), delivered('b#1', [finding('x.js', 3, 'minor')])], 2, ['blocking']);
    assert.deepEqual(decision.findings[0]!.votes, ['a#1', 'b#1']);
  });
});

describe("reviewerReportOf (a reviewer session's end → its report)", () => {
  const usage = { inputTokens: 0, outputTokens: 0, costUsd: 0 };
  const ended = (
    status: SessionOutcome['status'],
    summary: string,
    result?: SessionOutcome['result'],
  ): Pick<SessionOutcome, 'status' | 'summary' | 'result'> => ({ status, summary, ...(result ? { result } : {}) });
  const table: {
    name: string;
    outcome: Pick<SessionOutcome, 'status' | 'summary' | 'result'>;
    expected: { status: string; findings: number; reason?: RegExp };
  }[] = [
    {
      name: 'delivered ok with findings → its findings',
      outcome: ended('delivered', 'd', { status: 'ok', summary: '1 finding', findings: [finding('x.js', 1, 'minor')], usage }),
      expected: { status: 'delivered', findings: 1 },
    },
    {
      name: 'delivered ok without findings → a clean review',
      outcome: ended('delivered', 'd', { status: 'ok', summary: 'clean', usage }),
      expected: { status: 'delivered', findings: 0 },
    },
    {
      name: 'a result that says error is no review, whatever its findings',
      outcome: ended('delivered', 'd', { status: 'error', summary: 'API error 529', findings: [finding('x.js', 1, 'minor')], usage }),
      expected: { status: 'errored', findings: 0, reason: /says error: API error 529/ },
    },
    {
      name: 'gave up after its respawns → errored, the policy named',
      outcome: ended('failed', 'gave up after 2 attempt(s): crashed repeated 2 times on script#crash'),
      expected: { status: 'errored', findings: 0, reason: /^failed: gave up after 2 attempt\(s\): crashed/ },
    },
    {
      name: 'asked instead of reviewing → errored, the questions quoted',
      outcome: ended('asked', 'asked 1', { status: 'ok', summary: 's', questions: ['which base?'], usage }),
      expected: { status: 'errored', findings: 0, reason: /asked instead of reviewing: which base\?/ },
    },
    {
      name: 'budget-exhausted → errored',
      outcome: ended('budget-exhausted', 'stopped: tokens: 600 used of 500'),
      expected: { status: 'errored', findings: 0, reason: /^budget-exhausted: stopped/ },
    },
    {
      name: 'cancelled → errored',
      outcome: ended('cancelled', 'cancelled after 1 attempt(s)'),
      expected: { status: 'errored', findings: 0, reason: /^cancelled/ },
    },
    {
      name: 'could not start here → unavailable, the missing key named',
      outcome: ended('agent-unavailable', 'agent-unavailable: key OPENAI_API_KEY is not set; no container was started'),
      expected: { status: 'unavailable', findings: 0, reason: /OPENAI_API_KEY/ },
    },
    {
      name: 'a long reason is cut short',
      outcome: ended('failed', 'x'.repeat(5000)),
      expected: { status: 'errored', findings: 0, reason: /^failed: x{200,238}…$/ },
    },
  ];
  for (const { name, outcome, expected } of table) {
    it(name, () => {
      const report = reviewerReportOf('a#1', outcome);
      assert.equal(report.status, expected.status);
      assert.equal(report.findings.length, expected.findings);
      if (expected.reason) assert.match(report.reason ?? '', expected.reason);
      else assert.equal(report.reason, undefined);
    });
  }
});

describe('findingsCachePath', () => {
  const table = [
    { input: { treeSha: tree, harnessModel: 'script#reviewer-a', promptVersion: 'v1' }, expected: `aa/${tree}/script_reviewer-a@v1.json` },
    { input: { treeSha: tree, harnessModel: 'opencode#openai/gpt-5', promptVersion: 'v1' }, expected: `aa/${tree}/opencode_openai_gpt-5@v1.json` },
  ];
  for (const { input, expected } of table) it(input.harnessModel, () => assert.equal(findingsCachePath(input), expected));
  it('different trees, models or versions never share a path', () => {
    const base = { treeSha: tree, harnessModel: 'script#reviewer-a', promptVersion: 'v1' };
    const paths = new Set(
      [base, { ...base, treeSha: 'b'.repeat(40) }, { ...base, harnessModel: 'script#reviewer-b' }, { ...base, promptVersion: 'v2' }].map(findingsCachePath),
    );
    assert.equal(paths.size, 4);
  });
  it('refuses something that is not a tree SHA', () => assert.throws(() => findingsCachePath({ treeSha: '../etc', harnessModel: 'x#y', promptVersion: 'v1' })));
});
