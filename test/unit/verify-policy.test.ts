import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { verifyProblems, type VerifyFacts } from '../../policies/verify';

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
    { name: 'the gate file problem is passed on', facts: { gateFileProblem: 'the gate file changed and was not approved' }, expected: ['the gate file changed and was not approved'] },
    { name: 'no review: nothing to check', facts: { reviewedTreeSha: undefined }, expected: [] },
    { name: 'reviewed on this tree', facts: { reviewedTreeSha: head }, expected: [] },
    { name: 'reviewed on another tree', facts: { reviewedTreeSha: 'c'.repeat(40) }, expected: ['the review quorum was not met on tree aaaaaaaaaaaa (approved tree: cccccccccccc)'] },
    { name: 'review not approved at all', facts: { reviewedTreeSha: null }, expected: ['the review quorum was not met on tree aaaaaaaaaaaa'] },
    {
      name: 'a suite green only on another tree',
      facts: { gates: [{ suiteId: 'unit', treeSha: head, status: 'passed' }, { suiteId: 'lint', treeSha: target, status: 'passed' }] },
      expected: ['suite lint has no passing result on tree aaaaaaaaaaaa'],
    },
    {
      name: 'a red suite superseded by a green one on the same tree passes',
      facts: { gates: [{ suiteId: 'unit', treeSha: head, status: 'failed' }, { suiteId: 'unit', treeSha: head, status: 'passed' }, { suiteId: 'lint', treeSha: head, status: 'passed' }] },
      expected: [],
    },
    { name: 'a declared suite never run', facts: { gates: [{ suiteId: 'unit', treeSha: head, status: 'passed' }] }, expected: ['suite lint has no passing result on tree aaaaaaaaaaaa'] },
    { name: 'a timed-out suite is not a pass', facts: { gates: [{ suiteId: 'unit', treeSha: head, status: 'timed-out' }, { suiteId: 'lint', treeSha: head, status: 'passed' }] }, expected: ['suite unit has no passing result on tree aaaaaaaaaaaa'] },
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
