import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Finding } from '../../core/session-result';
import { findingsCachePath } from '../../policies/findings-cache-key';
import type { ReviewerReport } from '../../core/review-types';
import { decidePanel } from '../../policies/quorum';

const tree = 'a'.repeat(40);
const finding = (file: string, line: number, severity: Finding['severity'], rule = 'todo'): Finding => ({ file, line, severity, rule, message: rule });
const delivered = (harnessModel: string, findings: Finding[] = []): ReviewerReport => ({ harnessModel, status: 'delivered', findings });
const errored = (harnessModel: string): ReviewerReport => ({ harnessModel, status: 'errored', findings: [] });

describe('decidePanel (quorum)', () => {
  const table: { name: string; reports: ReviewerReport[]; quorum: number; expected: { status: string; delivered: number; missing: string[]; findings: number; blocking: number } }[] = [
    { name: 'all clean → approved', reports: [delivered('a#1'), delivered('b#1'), delivered('c#1')], quorum: 2, expected: { status: 'approved', delivered: 3, missing: [], findings: 0, blocking: 0 } },
    {
      name: 'an errored reviewer is missing, not "no findings"; quorum still met',
      reports: [delivered('a#1'), delivered('b#1'), errored('c#1')],
      quorum: 2,
      expected: { status: 'approved', delivered: 2, missing: ['c#1'], findings: 0, blocking: 0 },
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
      reports: [delivered('a#1', [finding('x.js', 3, 'minor')]), delivered('b#1', [finding('x.js', 3, 'minor')]), delivered('c#1', [finding('y.js', 1, 'minor')])],
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
  for (const { name, reports, quorum, expected } of table) {
    it(name, () => {
      const decision = decidePanel(reports, quorum, ['blocking']);
      assert.equal(decision.status, expected.status);
      assert.equal(decision.delivered, expected.delivered);
      assert.deepEqual(decision.missing, expected.missing);
      assert.equal(decision.findings.length, expected.findings);
      assert.equal(decision.blocking.length, expected.blocking);
    });
  }
  it('merged findings carry their votes', () => {
    const decision = decidePanel([delivered('a#1', [finding('x.js', 3, 'minor')]), delivered('b#1', [finding('x.js', 3, 'minor')])], 2, ['blocking']);
    assert.deepEqual(decision.findings[0]!.votes, ['a#1', 'b#1']);
  });
});

describe('findingsCachePath', () => {
  const table = [
    { input: { treeSha: tree, harnessModel: 'script#reviewer-a', promptVersion: 'v1' }, expected: `aa/${tree}/script_reviewer-a@v1.json` },
    { input: { treeSha: tree, harnessModel: 'opencode#openai/gpt-5', promptVersion: 'v1' }, expected: `aa/${tree}/opencode_openai_gpt-5@v1.json` },
  ];
  for (const { input, expected } of table) it(input.harnessModel, () => assert.equal(findingsCachePath(input), expected));
  it('different trees, models or versions never share a path', () => {
    const base = { treeSha: tree, harnessModel: 'script#reviewer-a', promptVersion: 'v1' };
    const paths = new Set([base, { ...base, treeSha: 'b'.repeat(40) }, { ...base, harnessModel: 'script#reviewer-b' }, { ...base, promptVersion: 'v2' }].map(findingsCachePath));
    assert.equal(paths.size, 4);
  });
  it('refuses something that is not a tree SHA', () => assert.throws(() => findingsCachePath({ treeSha: '../etc', harnessModel: 'x#y', promptVersion: 'v1' })));
});
