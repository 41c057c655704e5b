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
  gates: Pick<GateSuiteResult, 'suiteId' | 'treeSha' | 'status' | 'excused'>[];
  /** The suites the gate file declares: each must have passed on the head's tree (or its red be excused by the evidence, policies/flake.ts). */
  suiteIds: string[];
  /** Lines the landing adds that are leftover conflict markers (`file:line`), from `conflictMarkersIn`. */
  conflictMarkers?: string[];
}

/** One broken rule: what it says, and whether a change to the head's tree can mend it (a fixup round can). */
interface Problem {
  message: string;
  /** Content a fixer can change (leftover conflict markers); the rest is the landing's history or an operator's decision. */
  inTree: boolean;
}

function problemsOf(facts: VerifyFacts): Problem[] {
  const problems: Problem[] = [];
  const rule = (message: string, inTree = false) => problems.push({ message, inTree });
  const tree = facts.headTree.slice(0, 12);
  if (facts.commitsOver < 1) rule('the landing adds no commit over the target');
  if (facts.headTree === facts.targetTree) rule('the landing does not change the target tree');
  if (!facts.headDescendsFromTarget) rule('the head is not a descendant of the target');
  if (facts.dropped.length > 0) rule(`dropped commits: ${facts.dropped.join(', ')}`);
  if (facts.gateFileProblem) rule(facts.gateFileProblem);
  if ((facts.conflictMarkers ?? []).length > 0) rule(`leftover conflict markers: ${facts.conflictMarkers!.join(', ')}`, true);
  if (facts.reviewedTreeSha !== undefined && facts.reviewedTreeSha !== facts.headTree) {
    rule(`the review quorum was not met on tree ${tree}${facts.reviewedTreeSha ? ` (approved tree: ${facts.reviewedTreeSha.slice(0, 12)})` : ''}`);
  }
  for (const suiteId of facts.suiteIds) {
    const passed = facts.gates.some(
      (gate) => gate.suiteId === suiteId && gate.treeSha === facts.headTree && (gate.status === 'passed' || gate.excused !== undefined),
    );
    if (!passed) rule(`suite ${suiteId} has no passing result on tree ${tree}`);
  }
  return problems;
}

/**
 * The rules a landing must meet, on this exact tree, before its merge: ≥ 1 commit over the target,
 * a changed tree, a fast-forward, no dropped commit, the gate file unchanged or approved, no leftover
 * conflict marker among the lines it adds, the review quorum met on this tree, and every declared
 * suite green on this tree. Pure: every problem is named.
 */
export function verifyProblems(facts: VerifyFacts): string[] {
  return problemsOf(facts).map((problem) => problem.message);
}

/**
 * verify-landing's verdict and where a failure goes: a failure a fixup round can mend (every
 * problem is in the head's tree, e.g. conflict markers a resolver left) goes to one mechanical
 * fixup round and a re-verify; any other (history, a missing gate result or approval, a decision)
 * is final — no agent can change it.
 */
export function verifyVerdict(facts: VerifyFacts): { ok: boolean; problems: string[]; repairable: boolean } {
  const problems = problemsOf(facts);
  return {
    ok: problems.length === 0,
    problems: problems.map((problem) => problem.message),
    repairable: problems.length > 0 && problems.every((problem) => problem.inTree),
  };
}

/** A conflict marker line as git writes it (`<<<<<<< ours`, `=======`, `>>>>>>> theirs`, diff3's `||||||| base`). */
const markerLine = /^(<{7}|>{7}|\|{7})( |$)|^={7}$/;

/**
 * The added lines of a zero-context diff (`git diff -U0`) that are leftover conflict markers, as
 * `file:line` on the new side. Pure: it reads the diff text only.
 */
export function conflictMarkersIn(diff: string): string[] {
  const found: string[] = [];
  let file = '';
  let line = 0;
  for (const text of diff.split('\n')) {
    if (text.startsWith('+++ ')) {
      file = text === '+++ /dev/null' ? '' : text.slice(4).replace(/^b\//, '');
      continue;
    }
    const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(text);
    if (hunk) {
      line = Number(hunk[1]);
      continue;
    }
    if (text.startsWith('+') && file) {
      if (markerLine.test(text.slice(1))) found.push(`${file}:${line}`);
      line += 1;
    }
  }
  return found;
}
