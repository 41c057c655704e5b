/**
 * Decisions of the nightly run, as data. Pure: no I/O, no clock.
 */
import type { NightlyStatus } from '../core/nightly-types';

export { repairPlan, shellCommand } from './repair-plan';

/**
 * The run id of a nightly from its workflow id. A Schedule names each run
 * `<schedule's workflow id>-<RFC 3339 time>`, whose colons are not allowed in git
 * refs (the repair branch is `tarmac/fix/<run id>.fix`) nor in the API's ids; every
 * character outside `[A-Za-z0-9._-]` becomes `-`, and dot runs collapse to one dot.
 */
export function nightlyRunId(workflowId: string): string {
  const safe = workflowId
    .replace(/[^A-Za-z0-9._-]/g, '-')
    .replace(/\.{2,}/g, '.')
    .replace(/^[.-]+/, '')
    .replace(/[.]+$/, '');
  return safe || 'nightly';
}

/**
 * What the fix loop is told. Fixed wording on purpose: the fix loop routes by the
 * words of its request, and a suite id or command (user data) must not route a
 * red gate to an architect. It classifies as a test fix (implementer).
 */
export const repairRequest = 'The nightly full gate of the target is red: a gate suite fails. Fix the cause so the suite passes.';

type AfterFix = { kind: 'land'; branch: string } | { kind: 'stop'; status: NightlyStatus; summary: string };

/**
 * After the fix loop: land its branch only when the loop fixed the repro (a branch
 * with partial fixes of an exhausted loop is kept for people, never landed).
 */
export function afterFix(fix: { outcome: string; summary: string; fixBranch: string | null }): AfterFix {
  if (fix.outcome === 'fixed' && fix.fixBranch) return { kind: 'land', branch: fix.fixBranch };
  const kept = fix.fixBranch ? `; its partial fixes stay on ${fix.fixBranch}, not landed` : '';
  return { kind: 'stop', status: 'repair-failed', summary: `the gate is red and the fix loop ended ${fix.outcome}: ${fix.summary}${kept}` };
}

/** After the landing of the repair branch. */
export function afterLanding(status: string): NightlyStatus {
  return status === 'landed' ? 'repaired' : 'landing-failed';
}
