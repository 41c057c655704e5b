import type { StepTiming } from '../core/types';
import type { GitActivities, InspectTargetInput, InspectTargetResult } from './git';
import type { LandingCapsules } from './landing-capsules';
import type { RebaseActivities, RebaseResult } from './rebase';

export interface PlaceLandingResult {
  inspected: InspectTargetResult;
  /** The first rebase of the branches onto the target (absent when the gate file is invalid: nothing is made). */
  rebased?: RebaseResult;
  /** Each part's own start and end: the landing records them as its steps. */
  parts: StepTiming[];
}

/**
 * The first three steps of a landing in one round trip, on the host that takes it: inspect
 * the target (fetch, pinned heads, gate file), make the run's workspace, rebase the branches
 * (with the patch check). Each part is the capsule it always was; only the trips between them
 * are gone. A retry runs them again: each is idempotent on its host (the workspace and the
 * rebase state are kept and resumed).
 */
export function createPlacement({ git, landing, rebase }: { git: GitActivities; landing: LandingCapsules; rebase: RebaseActivities }) {
  return async function placeLanding(input: InspectTargetInput): Promise<PlaceLandingResult> {
    const parts: StepTiming[] = [];
    const timed = async <T>(name: string, run: () => Promise<T>): Promise<T> => {
      const startedAt = new Date().toISOString();
      const value = await run();
      parts.push({ name, startedAt, endedAt: new Date().toISOString() });
      return value;
    };
    const inspected = await timed('capsule.inspectTarget', () => git.inspectTarget(input));
    if (!inspected.gate.ok) return { inspected, parts };
    const { runId, repo, heads } = input;
    await timed('capsule.prepareRun', () => landing.prepareRun({ runId, repo, targetSha: inspected.targetSha }));
    const rebased = await timed('capsule.rebaseBranches', () => rebase.rebaseBranches({ runId, targetSha: inspected.targetSha, heads }));
    return { inspected, rebased, parts };
  };
}
