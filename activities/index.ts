import type Docker from 'dockerode';
import type { LandingOutcome } from '../core/types';
import { createGateActivities } from './gates';
import { createGitActivities } from './git';
import { runPaths, writeFileAtomic } from './run-store';

export interface ActivityDeps {
  dataDir: string;
  hostId: string;
  docker: Docker;
}

/**
 * Every activity, under the name it shows in the Temporal Web UI. Names read as
 * steps: `capsule.*` are deterministic host-side steps, `gate.*` run containers.
 */
export function createActivities(deps: ActivityDeps) {
  const git = createGitActivities(deps);
  const gates = createGateActivities(deps);
  return {
    'capsule.inspectTarget': git.inspectTarget,
    'capsule.prepareRun': git.prepareRun,
    'capsule.verifyLanding': git.verifyLanding,
    'capsule.fastForwardTarget': git.fastForwardTarget,
    'gate.runSuite': gates.runGateSuite,
    /** Removes what the manifest lists and the run's labelled containers; keeps logs and the outcome. */
    async 'capsule.cleanupRun'({ runId }: { runId: string }): Promise<{ removedPaths: string[]; removedContainers: number }> {
      const { removed } = await gates.removeRunContainers({ runId });
      const files = await git.cleanupRunFiles({ runId });
      return { removedPaths: files.removed, removedContainers: removed };
    },
    /** Stores the outcome next to the run's logs, so it outlives Temporal's retention. */
    async 'capsule.recordOutcome'({ outcome }: { outcome: LandingOutcome }): Promise<{ path: string }> {
      const path = runPaths(deps.dataDir, outcome.runId).outcome;
      await writeFileAtomic(path, `${JSON.stringify(outcome, null, 2)}\n`);
      return { path };
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
