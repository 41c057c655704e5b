import type { GateSuiteResult } from '../core/types';

/** What verify-landing learned from git about exactly the SHAs to be merged. */
export interface VerifyFacts {
  /** Commits of the head over the target. */
  commitsOver: number;
  headTree: string;
  targetTree: string;
  /** The target is an ancestor of the head (a fast-forward is possible). */
  headDescendsFromTarget: boolean;
  /** Original commits missing from the rebased result, undeclared. */
  dropped: string[];
  /** Why the gate file change is not approved for this head, if it is not (policies/gate-file-change.ts). */
  gateFileProblem?: string;
  /** The tree the review panel approved; null when none was approved; undefined when the landing has no review. */
  reviewedTreeSha?: string | null;
  gates: Pick<GateSuiteResult, 'suiteId' | 'treeSha' | 'status'>[];
  /** The suites the gate file declares: each must have passed on the head's tree. */
  suiteIds: string[];
}

/**
 * The rules a landing must meet, on this exact tree, before its merge: ≥ 1 commit over the target,
 * a changed tree, a fast-forward, no dropped commit, the gate file unchanged or approved, the review
 * quorum met on this tree, and every declared suite green on this tree. Pure: every problem is named.
 */
export function verifyProblems(facts: VerifyFacts): string[] {
  const problems: string[] = [];
  const tree = facts.headTree.slice(0, 12);
  if (facts.commitsOver < 1) problems.push('the landing adds no commit over the target');
  if (facts.headTree === facts.targetTree) problems.push('the landing does not change the target tree');
  if (!facts.headDescendsFromTarget) problems.push('the head is not a descendant of the target');
  if (facts.dropped.length > 0) problems.push(`dropped commits: ${facts.dropped.join(', ')}`);
  if (facts.gateFileProblem) problems.push(facts.gateFileProblem);
  if (facts.reviewedTreeSha !== undefined && facts.reviewedTreeSha !== facts.headTree) {
    problems.push(`the review quorum was not met on tree ${tree}${facts.reviewedTreeSha ? ` (approved tree: ${facts.reviewedTreeSha.slice(0, 12)})` : ''}`);
  }
  for (const suiteId of facts.suiteIds) {
    const passed = facts.gates.some((gate) => gate.suiteId === suiteId && gate.treeSha === facts.headTree && gate.status === 'passed');
    if (!passed) problems.push(`suite ${suiteId} has no passing result on tree ${tree}`);
  }
  return problems;
}
