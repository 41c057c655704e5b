/**
 * From a red gate to the command that reproduces it, for a fix loop. Pure.
 * Used by the nightly (red target) and by a landing's fixup round (red branch).
 */
import type { GateSuite } from '../core/gate-file';

/** An argv as one `sh -c` command line: every word single-quoted unless it is plainly safe. */
export function shellCommand(argv: readonly string[]): string {
  return argv.map((word) => (/^[A-Za-z0-9_./=:@%+,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`)).join(' ');
}

type RepairPlan = { kind: 'green' } | { kind: 'repair'; failing: string[]; reproCommand: string };

/**
 * After the full gate: green, or a repair whose repro command runs every failing
 * suite in gate order (`a && b`), so the fix loop is done only when all of them pass.
 */
export function repairPlan(suites: readonly GateSuite[], failing: readonly string[]): RepairPlan {
  const red = suites.filter((suite) => failing.includes(suite.id));
  if (red.length === 0) return { kind: 'green' };
  return { kind: 'repair', failing: red.map((suite) => suite.id), reproCommand: red.map((suite) => shellCommand(suite.run)).join(' && ') };
}
