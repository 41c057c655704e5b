import { defineQuery, defineUpdate } from '@temporalio/workflow';

/**
 * Suite quarantines: one entity workflow per (repo, target) (workflows/suite-quarantine.ts) holds the
 * suites whose red blocks no landing on that target until a set time, each with the evidence that put
 * it there. Landings add to it (update-with-start) and ask it (a query) when a suite of theirs is red;
 * the API lists and lifts them. Pure data and message definitions, imported by workflow code.
 */

/** One quarantined suite. Times are ISO strings. */
export interface Quarantine {
  suiteId: string;
  since: string;
  until: string;
  /** What the evidence showed: green on the same tree when run again, or red on the base too. */
  settled: 'flaky' | 'pre-existing';
  /** The landing whose evidence put it here, the tree it was red on, and the logs of the red and the evidence runs. */
  landingId: string;
  treeSha: string;
  logRefs: string[];
}

/** A landing asks for a quarantine: the entity sets `since` and `until` from its own clock (`forMs` on from now). */
export interface QuarantineRequest {
  suiteId: string;
  forMs: number;
  settled: Quarantine['settled'];
  landingId: string;
  treeSha: string;
  logRefs: string[];
}

/** What the entity starts (and continues as new) with. */
export interface SuiteQuarantineInput {
  repo: string;
  target: string;
  entries: Quarantine[];
}

/** Quarantines a suite (or keeps the later end of one in force); answers the entry as it now stands. */
export const quarantineUpdate = defineUpdate<Quarantine, [QuarantineRequest]>('quarantine');
/** Lifts a suite's quarantine before it expires; `lifted: false` when it was not quarantined. */
export const liftQuarantineUpdate = defineUpdate<{ lifted: boolean }, [{ suiteId: string }]>('lift');
/** The quarantines in force, as of the entity's last activation (callers compare `until` with their own clock too). */
export const quarantinesQuery = defineQuery<Quarantine[]>('quarantines');
