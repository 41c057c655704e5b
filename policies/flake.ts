import type { GateLimits } from '../core/recipe-schemas';
import type { GateSettlement, GateSuiteResult } from '../core/types';

/**
 * Flakes settled by evidence. A suite that comes out red in a gate round is run once more on the
 * identical tree and once on the base (the target commit the head is rebased onto); what the two
 * runs show settles it, and the recipe's `limits.gate` decides what follows. Pure.
 */

type Status = GateSuiteResult['status'];

/** What follows a settled red, from the recipe (each field's default filled in). */
export interface FlakePolicy {
  flaky: NonNullable<GateLimits['flaky']>;
  preExisting: NonNullable<GateLimits['preExisting']>;
  quarantineFor: string;
}

/**
 * The defaults keep the doctrine — every merge is a fast-forward to a tree that passed every suite:
 * a flaky red counts once the identical tree passed when run again (`retry`: it did pass); a red the
 * base shares blocks as any red (`fail`: the tree never passed it), its record saying it was there
 * before, so an operator can choose `allow` or `quarantine`. A quarantine lasts a week.
 */
export const defaultFlakePolicy: FlakePolicy = { flaky: 'retry', preExisting: 'fail', quarantineFor: '168h' };

/** The recipe's `limits.gate` with the defaults for what it leaves out (a run that started before it: all defaults). */
export function flakePolicy(limits: GateLimits | undefined): FlakePolicy {
  return {
    flaky: limits?.flaky ?? defaultFlakePolicy.flaky,
    preExisting: limits?.preExisting ?? defaultFlakePolicy.preExisting,
    quarantineFor: limits?.quarantineFor ?? defaultFlakePolicy.quarantineFor,
  };
}

/**
 * Whether a red is worth its evidence runs: only when some settlement would change what follows.
 * Both actions `fail` → every red blocks as it always did, and no container is spent on evidence.
 */
export function wantsEvidence(policy: FlakePolicy): boolean {
  return policy.flaky !== 'fail' || policy.preExisting !== 'fail';
}

/**
 * What the evidence says about a red result (failed or timed out: a suite that outlived its timeout is
 * red like one that exited non-zero, and is settled the same way — on a shared machine a timeout is
 * the commonest flake):
 * - green when run again on the identical tree → `flaky` (whatever the base did: this tree can pass);
 * - red again, and red on the base too → `pre-existing` (the landing did not break it);
 * - red again, green on the base → `failed` (the landing broke it).
 */
export function settle(again: Status, onBase: Status): GateSettlement {
  if (again === 'passed') return 'flaky';
  return onBase === 'passed' ? 'failed' : 'pre-existing';
}

/** What a settled red means for the landing: whether it blocks, why not, and whether the suite is quarantined. */
interface FlakeDecision {
  blocks: boolean;
  /** Why it does not block (absent when it blocks). */
  excusedBy?: 'retry' | 'quarantine' | 'pre-existing';
  /** Quarantine the suite on the (repo, target) for the policy's `quarantineFor`. */
  quarantine: boolean;
}

/**
 * The recipe's answer to a settlement. `failed` always blocks (today's path: a fixup round, or the
 * end). `flaky`: `retry` counts the green re-run for this landing, `quarantine` also quarantines the
 * suite (its red blocks no landing until it expires or is lifted), `fail` blocks. `pre-existing`:
 * `allow` lets this landing go on (and the next landing checks the base again, so the allowance ends
 * the moment the target is mended), `quarantine` quarantines the suite, `fail` blocks.
 */
export function decide(settled: GateSettlement, policy: FlakePolicy): FlakeDecision {
  if (settled === 'failed') return { blocks: true, quarantine: false };
  const action = settled === 'flaky' ? policy.flaky : policy.preExisting;
  if (action === 'fail') return { blocks: true, quarantine: false };
  if (action === 'quarantine') return { blocks: false, excusedBy: 'quarantine', quarantine: true };
  return { blocks: false, excusedBy: settled === 'flaky' ? 'retry' : 'pre-existing', quarantine: false };
}

/** An active quarantine of a suite on one (repo, target): until when, and the evidence that put it there. */
export interface QuarantineView {
  suiteId: string;
  since: string;
  until: string;
}

/** The quarantines still in force at `now` (ms since the epoch): `until` is exclusive. */
export function activeQuarantines<Q extends QuarantineView>(entries: readonly Q[], now: number): Q[] {
  return entries.filter((entry) => Date.parse(entry.until) > now);
}

/**
 * A suite quarantined again while in force keeps the later end (a quarantine is never shortened by
 * new evidence; lifting it is an operator's act). Returns the entries with `entry` added or merged.
 */
export function addQuarantine<Q extends QuarantineView>(entries: readonly Q[], entry: Q): Q[] {
  const existing = entries.find((candidate) => candidate.suiteId === entry.suiteId);
  if (!existing) return [...entries, entry];
  const merged =
    Date.parse(existing.until) >= Date.parse(entry.until) ? { ...entry, since: existing.since, until: existing.until } : { ...entry, since: existing.since };
  return entries.map((candidate) => (candidate === existing ? merged : candidate));
}
