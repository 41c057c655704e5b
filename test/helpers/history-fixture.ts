import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * The recorded histories (test/fixtures/histories/<kind>.json), written by scripts/record-histories.ts
 * from runs on the real stack and replayed by test/unit/replay.test.ts against today's workflow code.
 */
export const historiesDir = resolve(__dirname, '..', 'fixtures', 'histories');
export const replayDemoDir = resolve(__dirname, '..', 'fixtures', 'replay-demo');

/** One recorded workflow: what the replayer needs (its id and history) and what a reader wants to know. */
export interface RecordedWorkflow {
  workflowId: string;
  workflowType: string;
  /** Its status when recorded (a target queue or the agent registry is still running). */
  status: string;
  events: number;
  /** The history as `historyToJSON` writes it (and the Temporal CLI, and `historyFromJSON` reads). */
  history: unknown;
}

export interface Provenance {
  /** The commit the tree was at. */
  commit: string;
  /** Workflow source files that differed from that commit (work in progress when recorded). */
  uncommitted: string[];
  /** worker/workflow-bundle.ts's key of the sources the worker ran. */
  sourceKey: string;
  recordedAt: string;
}

export interface HistoryFixture {
  kind: string;
  description: string;
  recordedFrom: Provenance;
  /** The run and every child it started (sessions, panels, fix loops, landings), depth first. */
  workflows: RecordedWorkflow[];
}

/** The replay demo's recorded run of one version of `orderedSteps` (test/fixtures/replay-demo/). */
export interface DemoHistory extends RecordedWorkflow {
  result: string[];
}

export function readHistoryFixtures(): HistoryFixture[] {
  return readdirSync(historiesDir)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => JSON.parse(readFileSync(join(historiesDir, name), 'utf8')) as HistoryFixture);
}

export function readDemoHistory(version: 'v1' | 'v3'): DemoHistory {
  return JSON.parse(readFileSync(join(replayDemoDir, `ordered-steps-${version}.history.json`), 'utf8')) as DemoHistory;
}
