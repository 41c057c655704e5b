/**
 * Retention: what a host's sweep may remove from its data dir, decided from facts the sweep
 * gathered (the run's manifest, its workflow's status, times). Pure; the sweep
 * (activities/janitor/retention.ts) only reads the facts and removes what this says.
 */

/** What Temporal says about the run's workflow. */
export type RunWorkflowStatus =
  /** Still running (or continued as new and running): never removed. */
  | { state: 'running' }
  /** Closed (completed, failed, cancelled, terminated, timed out) at `closedAt` (ms). */
  | { state: 'closed'; status: string; closedAt: number }
  /** Temporal knows no such workflow (its history is past the namespace's retention): not running. */
  | { state: 'not-found' }
  /** Temporal could not be asked: nothing is removed on a guess. */
  | { state: 'unknown'; problem: string };

export interface RunFacts {
  /** The directory's name under `runs/`. */
  dirName: string;
  /** The run's manifest (`runs/<id>/manifest.json`), when it has one that parses. */
  manifest?: { runId: string; hostId: string };
  workflow: RunWorkflowStatus;
  /** The newest modification time (ms) of the run's own files at the top of its directory. */
  lastWriteMs: number;
}

type RetentionDecision = { remove: true; finishedAt: number; reason: string } | { remove: false; reason: string };

const age = (ms: number) => {
  const hours = ms / 3_600_000;
  return hours >= 48 ? `${Math.floor(hours / 24)} d` : hours >= 1 ? `${Math.floor(hours)} h` : `${Math.max(0, Math.round(ms / 1000))} s`;
};

/**
 * A run's directory is removed only when all of these hold: its manifest names it (Tarmac made it)
 * and this host; Temporal says its workflow is not running; and it finished longer ago than the
 * retention (by the workflow's close time, or — when Temporal no longer knows the run — by its
 * files' last write). Anything else keeps it, with the reason.
 */
export function runRetention(facts: RunFacts, { now, retentionMs, hostId }: { now: number; retentionMs: number; hostId: string }): RetentionDecision {
  const { manifest, workflow } = facts;
  if (!manifest) return { remove: false, reason: 'no manifest: not a run directory Tarmac made, never removed' };
  if (manifest.runId !== facts.dirName) return { remove: false, reason: `its manifest names run ${manifest.runId}, not ${facts.dirName}: never removed` };
  if (manifest.hostId !== hostId) return { remove: false, reason: `a run of host ${manifest.hostId}: only that host's sweep removes it` };
  if (workflow.state === 'running') return { remove: false, reason: 'running' };
  if (workflow.state === 'unknown') return { remove: false, reason: `its workflow status is unknown (${workflow.problem}): kept until Temporal answers` };
  const finishedAt = workflow.state === 'closed' ? workflow.closedAt : facts.lastWriteMs;
  const finishedAgo = now - finishedAt;
  const how =
    workflow.state === 'closed' ? `${workflow.status.toLowerCase()} ${age(finishedAgo)} ago` : `unknown to Temporal, last written ${age(finishedAgo)} ago`;
  if (finishedAgo < retentionMs) return { remove: false, reason: `${how}: younger than the retention (${age(retentionMs)})` };
  return { remove: true, finishedAt, reason: `${how}: older than the retention (${age(retentionMs)})` };
}

interface MirrorFacts {
  /** Runs kept on this host whose manifest names this mirror. */
  usedBy: string[];
  /** The last fetch into it (ms): a run being placed fetches before its manifest exists. */
  lastUsedMs: number;
}

/** A mirror no kept run names and nobody fetched into within the retention is removed; the next run makes it again. */
export function mirrorRetention({ usedBy, lastUsedMs }: MirrorFacts, { now, retentionMs }: { now: number; retentionMs: number }): RetentionDecision {
  if (usedBy.length > 0)
    return { remove: false, reason: `used by ${usedBy.length} kept run(s) (${usedBy.slice(0, 3).join(', ')}${usedBy.length > 3 ? ', …' : ''})` };
  const idle = now - lastUsedMs;
  if (idle < retentionMs) return { remove: false, reason: `fetched into ${age(idle)} ago: younger than the retention (${age(retentionMs)})` };
  return { remove: true, finishedAt: lastUsedMs, reason: `no kept run uses it and nothing fetched into it for ${age(idle)} (retention ${age(retentionMs)})` };
}

/** A findings- or gate-cache file is kept while it was sealed or reused within the retention. */
export function cacheEntryRetention(lastUsedMs: number, { now, retentionMs }: { now: number; retentionMs: number }): RetentionDecision {
  const idle = now - lastUsedMs;
  return idle < retentionMs
    ? { remove: false, reason: 'used within the retention' }
    : { remove: true, finishedAt: lastUsedMs, reason: `not used for ${age(idle)} (retention ${age(retentionMs)})` };
}
