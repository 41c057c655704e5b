/**
 * Types of the nightly run. Pure data: imported by workflow code, the API and the tests.
 */
import type { GateSuiteResult, Meters } from './types';

export interface NightlyRequest {
  /** Normalised repository location (the API validated it when the schedule was created). */
  repo: string;
  /** Branch whose head gets the full gate, and onto which a repair lands. */
  target: string;
  /** Agents of the repair: the fix loop's implementer (and the landing's fixer), and their ladder. */
  agents?: { implementer?: string; ladder?: string[] };
}

/** How a nightly run ended. */
export const NightlyStatus = {
  /** Every suite of the gate passed on the target head. */
  green: 'green',
  /** The gate was red; the fix loop repaired it and the repair landed on the target. */
  repaired: 'repaired',
  /** The gate was red and the fix loop did not make the failing suites pass: nothing to land. */
  repairFailed: 'repair-failed',
  /** The repair branch exists but its landing ended with another status than `landed`. */
  landingFailed: 'landing-failed',
  /** The target's gate file is missing or invalid. */
  invalidGateFile: 'invalid-gate-file',
  failed: 'failed',
  cancelled: 'cancelled',
} as const;
export type NightlyStatus = (typeof NightlyStatus)[keyof typeof NightlyStatus];

export const NightlyPhase = {
  inspect: 'inspect',
  prepare: 'prepare',
  gate: 'gate',
  fix: 'fix',
  land: 'land',
  cleanup: 'cleanup',
  done: 'done',
} as const;
export type NightlyPhase = (typeof NightlyPhase)[keyof typeof NightlyPhase];

export interface NightlyOutcome {
  status: NightlyStatus;
  summary: string;
  /** The run's id in file names and child ids (the workflow id, made safe for refs). */
  runId: string;
  repo: string;
  target: string;
  endedInPhase: NightlyPhase;
  /** The target head that was gated, and its tree. */
  targetSha?: string;
  treeSha?: string;
  gates: GateSuiteResult[];
  /** Suites that were red on the target head. */
  failingSuites: string[];
  /** The fix loop that repaired the red gate (a child workflow). */
  fixLoop?: { id: string; outcome: string; summary: string; playbookUsed: string | null; filesChanged: string[] };
  /** The run-owned branch holding the repair (`tarmac/fix/<fix loop id>`), when there is one. */
  repairBranch?: string;
  /** The landing of the repair branch onto the target (a child workflow with the API's id). */
  landing?: { id: string; status: string; summary: string; mergedSha?: string };
  failure?: { type: string; message: string };
  meters: Meters;
}

export interface NightlyStatusView {
  runId: string;
  repo: string;
  target: string;
  phase: NightlyPhase;
  targetSha?: string;
  treeSha?: string;
  gates: GateSuiteResult[];
  fixLoopId?: string;
  repairBranch?: string;
  landingId?: string;
  outcome?: NightlyOutcome;
}
