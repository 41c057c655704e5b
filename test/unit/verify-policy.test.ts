import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { conflictMarkersIn, verifyProblems, verifyVerdict, type VerifyFacts } from '../../policies/verify';

const head = 'a'.repeat(40);
const target = 'b'.repeat(40);
const good: VerifyFacts = {
  commitsOver: 2,
  headTree: head,
  targetTree: target,
  headDescendsFromTarget: true,
  dropped: [],
  suiteIds: ['unit', 'lint'],
  gates: [
    { suiteId: 'unit', treeSha: head, status: 'passed' },
    { suiteId: 'lint', treeSha: head, status: 'passed' },
  ],
};

describe('verifyProblems (verify-landing: on exactly this tree)', () => {
  const table: { name: string; facts: Partial<VerifyFacts>; expected: string[] }[] = [
    { name: 'everything holds → no problem', facts: {}, expected: [] },
    { name: 'no commit over the target', facts: { commitsOver: 0 }, expected: ['the landing adds no commit over the target'] },
    { name: 'an unchanged tree', facts: { targetTree: head }, expected: ['the landing does not change the target tree'] },
    { name: 'not a fast-forward', facts: { headDescendsFromTarget: false }, expected: ['the head is not a descendant of the target'] },
    { name: 'dropped commits are named', facts: { dropped: ['c1 "x"', 'c2 "y"'] }, expected: ['dropped commits: c1 "x", c2 "y"'] },
    {
      name: 'the gate file problem is passed on',
      facts: { gateFileProblem: 'the gate file changed and was not approved' },
      expected: ['the gate file changed and was not approved'],
    },
    { name: 'no review: nothing to check', facts: { reviewedTreeSha: undefined }, expected: [] },
    { name: 'reviewed on this tree', facts: { reviewedTreeSha: head }, expected: [] },
    {
      name: 'reviewed on another tree',
      facts: { reviewedTreeSha: 'c'.repeat(40) },
      expected: ['the review quorum was not met on tree aaaaaaaaaaaa (approved tree: cccccccccccc)'],
    },
    { name: 'review not approved at all', facts: { reviewedTreeSha: null }, expected: ['the review quorum was not met on tree aaaaaaaaaaaa'] },
    {
      name: 'a suite green only on another tree',
      facts: {
        gates: [
          { suiteId: 'unit', treeSha: head, status: 'passed' },
          { suiteId: 'lint', treeSha: target, status: 'passed' },
        ],
      },
      expected: ['suite lint has no passing result on tree aaaaaaaaaaaa'],
    },
    {
      name: 'a red suite superseded by a green one on the same tree passes',
      facts: {
        gates: [
          { suiteId: 'unit', treeSha: head, status: 'failed' },
          { suiteId: 'unit', treeSha: head, status: 'passed' },
          { suiteId: 'lint', treeSha: head, status: 'passed' },
        ],
      },
      expected: [],
    },
    {
      name: 'a declared suite never run',
      facts: { gates: [{ suiteId: 'unit', treeSha: head, status: 'passed' }] },
      expected: ['suite lint has no passing result on tree aaaaaaaaaaaa'],
    },
    {
      name: 'a red the evidence excused (flaky, retried) counts on this tree',
      facts: {
        gates: [
          { suiteId: 'unit', treeSha: head, status: 'failed', excused: { by: 'retry' } },
          { suiteId: 'lint', treeSha: head, status: 'passed' },
        ],
      },
      expected: [],
    },
    {
      name: 'an excused red on another tree does not count',
      facts: {
        gates: [
          { suiteId: 'unit', treeSha: target, status: 'failed', excused: { by: 'quarantine', until: '2030-01-01T00:00:00.000Z' } },
          { suiteId: 'lint', treeSha: head, status: 'passed' },
        ],
      },
      expected: ['suite unit has no passing result on tree aaaaaaaaaaaa'],
    },
    {
      name: 'a timed-out suite is not a pass',
      facts: {
        gates: [
          { suiteId: 'unit', treeSha: head, status: 'timed-out' },
          { suiteId: 'lint', treeSha: head, status: 'passed' },
        ],
      },
      expected: ['suite unit has no passing result on tree aaaaaaaaaaaa'],
    },
    {
      name: 'every problem at once, in order',
      facts: { commitsOver: 0, targetTree: head, headDescendsFromTarget: false, dropped: ['c1'], gates: [] },
      expected: [
        'the landing adds no commit over the target',
        'the landing does not change the target tree',
        'the head is not a descendant of the target',
        'dropped commits: c1',
        'suite unit has no passing result on tree aaaaaaaaaaaa',
        'suite lint has no passing result on tree aaaaaaaaaaaa',
      ],
    },
  ];
  for (const { name, facts, expected } of table) it(name, () => assert.deepEqual(verifyProblems({ ...good, ...facts }), expected));
});

describe('verifyVerdict: where a refusal goes (one fixup round only for what a change to the tree mends)', () => {
  const table: { name: string; facts: Partial<VerifyFacts>; repairable: boolean }[] = [
    { name: 'nothing wrong → nothing to repair', facts: {}, repairable: false },
    { name: 'leftover conflict markers only → repairable', facts: { conflictMarkers: ['a.txt:2'] }, repairable: true },
    {
      name: 'markers and a missing gate result → final (no fixer can add a gate result)',
      facts: { conflictMarkers: ['a.txt:2'], gates: [] },
      repairable: false,
    },
    { name: 'dropped commits → final', facts: { dropped: ['c1'] }, repairable: false },
    { name: 'an unapproved gate file → final (a decision, not an edit)', facts: { gateFileProblem: 'not approved' }, repairable: false },
    { name: 'no change at all → final', facts: { targetTree: head }, repairable: false },
  ];
  for (const { name, facts, repairable } of table) {
    it(name, () => {
      const verdict = verifyVerdict({ ...good, ...facts });
      assert.equal(verdict.repairable, repairable);
      assert.deepEqual(verdict.problems, verifyProblems({ ...good, ...facts }));
      assert.equal(verdict.ok, verdict.problems.length === 0);
    });
  }
  it('names the markers', () =>
    assert.deepEqual(verifyProblems({ ...good, conflictMarkers: ['a.txt:2', 'a.txt:4'] }), ['leftover conflict markers: a.txt:2, a.txt:4']));
});

describe('conflictMarkersIn: added marker lines of a zero-context diff, as file:line', () => {
  const diff = (file: string, hunk: string, lines: string[]) => [`diff --git a/${file} b/${file}`, `--- a/${file}`, `+++ b/${file}`, hunk, ...lines].join('\n');
  const table: { name: string; text: string; expected: string[] }[] = [
    { name: 'no diff → none', text: '', expected: [] },
    {
      name: 'a committed conflict: each marker line, numbered on the new side',
      text: diff('notes.txt', '@@ -0,0 +1,6 @@', ['+x', '+<<<<<<< HEAD', '+y', '+=======', '+z', '+>>>>>>> feature']),
      expected: ['notes.txt:2', 'notes.txt:4', 'notes.txt:6'],
    },
    { name: "diff3's base marker counts", text: diff('a.txt', '@@ -3 +3,2 @@', ['-old', '+||||||| base', '+kept']), expected: ['a.txt:3'] },
    { name: 'a removed marker is a repair, not a problem', text: diff('a.txt', '@@ -2 +1,0 @@', ['-<<<<<<< HEAD']), expected: [] },
    {
      name: 'look-alikes are not markers (8 signs, text after =======, indented)',
      text: diff('a.md', '@@ -0,0 +1,3 @@', ['+========', '+======= title', '+ <<<<<<< x']),
      expected: [],
    },
    { name: 'a second hunk restarts the count', text: diff('b.txt', '@@ -1 +1 @@', ['-a', '+b']) + '\n@@ -10,0 +11 @@\n+>>>>>>> x', expected: ['b.txt:11'] },
    { name: 'a deleted file is skipped', text: ['--- a/gone.txt', '+++ /dev/null', '@@ -1 +0,0 @@', '-<<<<<<< x'].join('\n'), expected: [] },
  ];
  for (const { name, text, expected } of table) it(name, () => assert.deepEqual(conflictMarkersIn(text), expected));
});
