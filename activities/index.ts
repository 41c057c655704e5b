import type Docker from 'dockerode';
import { join } from 'node:path';
import type { SessionOutcome } from '../core/session-types';
import type { LandingOutcome } from '../core/types';
import { createGateActivities } from './containers/gates';
import { createEnvironmentActivities, type EnvironmentDeps } from './environments/environments';
import { createFixActivities } from './fix/fix';
import { createGroundingActivities } from './fix/grounding';
import { createGitActivities } from './git/git';
import { createLandingCapsules } from './git/landing-capsules';
import { createBatchActivities } from './git/batch';
import { createPlacement } from './git/place-landing';
import { createRebaseActivities } from './git/rebase';
import { createReviewCacheActivities } from './stores/review-cache';
import { createQueueActivities } from './stores/queue';
import { createQuarantineActivities } from './stores/quarantine';
import { createRetentionActivities } from './janitor/retention';
import { createNightlyActivities } from './git/nightly';
import { defaultTaskQueue } from '../core/queues';
import { createSessionActivities } from './sessions/sessions';
import { runPaths, writeFileAtomic } from './stores/run-store';
import { createRunJanitor, type RunJanitor } from './janitor/run-janitor';
import type { GatePool } from './containers/gate-pool';
import { Context } from '@temporalio/activity';
import { Runtime } from '@temporalio/worker';
import { failure, FailureCode } from '../core/failures';
import { hostBoundCapsules, type HostBoundCapsule } from '../core/host-bound';
import { loadRecipes } from '../core/node/recipes';
import type { RecipeSnapshot } from '../core/recipe-schemas';

interface ActivityDeps {
  dataDir: string;
  hostId: string;
  /**
   * This worker polls its host's queue (default true). A worker that does not places no run on its
   * host: its local placement refuses (TARMAC_WRONG_HOST) and the placement goes to a host's worker.
   */
  servesHost?: boolean;
  docker: Docker;
  /** Recipes directory; default the repository's `recipes/`. */
  recipesDir?: string;
  /** Shared task queue (target queues are started on it); default `tarmac`. */
  taskQueue?: string;
  /** Where the model gateway forwards (config `modelUpstreams`); default the providers' public APIs. */
  modelUpstreams?: { anthropic: string; openai: string };
  /** The script harness's scenarios (config `scriptScenariosDir`); default none. */
  scriptScenariosDir?: string;
  /** This host's warm gate pool (the worker makes it once, activities/containers/gate-pool.ts); none: every gate suite starts its own container. */
  gatePool?: GatePool;
  /**
   * Repository environments (activities/environments/environments.ts): the operator's egress allow-list
   * (`TARMAC_EGRESS_ALLOW`, default none: a setup reaches nothing), entries every setup gets, the CA
   * bundle setups trust and the size limits.
   */
  environments?: Omit<EnvironmentDeps, 'dataDir' | 'hostId' | 'docker'>;
  /** This host's run janitor (the worker makes one and resumes it); default one of these activities' own. */
  runJanitor?: RunJanitor;
  /** Where the run janitor logs (it works outside any activity); default the SDK runtime's logger. */
  janitorLog?: { info(message: string, meta?: Record<string, unknown>): void; warn(message: string, meta?: Record<string, unknown>): void };
}

/** The host's run janitor (activities/janitor/run-janitor.ts) on the same containers and manifests as the cleanup activity. */
export function createHostRunJanitor(deps: ActivityDeps): RunJanitor {
  const git = createGitActivities(deps);
  const gates = createGateActivities(deps);
  return createRunJanitor({
    dataDir: deps.dataDir,
    removeContainers: async (runId) => (await gates.removeRunContainers({ runId })).removed,
    removeFiles: async (runId) => (await git.cleanupRunFiles({ runId })).removed,
    log: deps.janitorLog ?? {
      info: (message, meta) => {
        Runtime.instance().logger.info(message, meta);
      },
      warn: (message, meta) => {
        Runtime.instance().logger.warn(message, meta);
      },
    },
  });
}

/**
 * Every activity, under the name it shows in the Temporal Web UI. Names read as
 * steps: `capsule.*` are deterministic host-side steps, `gate.*` run containers.
 */
export function createActivities(deps: ActivityDeps) {
  const git = createGitActivities(deps);
  const gates = createGateActivities(deps);
  // A landing that uses an environment tells the host's gate pool, which keeps a container for the most recent keys.
  const { gatePool } = deps;
  const environments = createEnvironmentActivities({
    dataDir: deps.dataDir,
    hostId: deps.hostId,
    docker: deps.docker,
    egressAllow: [],
    ...deps.environments,
    ...(gatePool ? { onUsed: gatePool.useEnvironment } : {}),
  });
  const sessions = createSessionActivities(deps);
  const landing = createLandingCapsules(deps);
  const reviewCache = createReviewCacheActivities(deps);
  const fix = createFixActivities(deps);
  const grounding = createGroundingActivities(deps);
  const rebase = createRebaseActivities(deps);
  const queue = createQueueActivities({ taskQueue: deps.taskQueue ?? defaultTaskQueue });
  const quarantine = createQuarantineActivities({ taskQueue: deps.taskQueue ?? defaultTaskQueue });
  const nightly = createNightlyActivities();
  const retention = createRetentionActivities(deps);
  const batch = createBatchActivities(deps);
  const janitor = deps.runJanitor ?? createHostRunJanitor(deps);
  const activities = {
    'capsule.placeLanding': createPlacement({
      dataDir: deps.dataDir,
      hostId: deps.hostId,
      servesHost: deps.servesHost ?? true,
      git,
      landing,
      rebase,
      gates,
      environments,
      panelReadiness: sessions.panelReadiness,
    }),
    'capsule.inspectTarget': git.inspectTarget,
    'capsule.prepareRun': landing.prepareRun,
    'capsule.rebaseBranches': rebase.rebaseBranches,
    'capsule.checkPatches': rebase.checkPatches,
    'capsule.rebaseOnto': rebase.rebaseOnto,
    'queue.requestAdmission': queue.requestAdmission,
    /** The suites quarantined on a target, and a new quarantine (workflows/suite-quarantine.ts): a landing's red gate round asks and adds. */
    'quarantine.active': quarantine.active,
    'quarantine.add': quarantine.quarantine,
    'capsule.workspaceHead': landing.workspaceHead,
    'capsule.treeOf': landing.treeOf,
    'capsule.changedFiles': landing.changedFiles,
    'capsule.gateFileFacts': landing.gateFileFacts,
    'capsule.readGateFile': landing.readGateFile,
    'capsule.diffFacts': landing.diffFacts,
    'capsule.verifyLanding': landing.verifyLanding,
    'capsule.fastForwardTarget': landing.fastForwardTarget,
    'capsule.currentTarget': landing.currentTarget,
    'capsule.stackBatch': batch.stackBatch,
    'capsule.prepareSessionWorkspace': git.prepareSessionWorkspace,
    'gate.runSuite': gates.runGateSuite,
    'environment.prepare': environments.prepareEnvironment,
    'session.validateDispatch': sessions.validateDispatch,
    'session.run': sessions.runSession,
    'review.resolvePanel': sessions.resolvePanel,
    'review.restore': reviewCache.restore,
    'review.seal': reviewCache.seal,
    'fix.limits': fix.limits,
    'fix.groundingFacts': grounding.groundingFacts,
    'fix.applyPlaybook': fix.applyPlaybook,
    'fix.logTail': fix.logTail,
    'fix.publishFixes': fix.publishFixes,
    'nightly.pinLanding': nightly.pinLanding,
    /** This host's retention sweep (workflows/retention.ts): finished runs, unused mirrors and cache entries past TARMAC_RETENTION. */
    'retention.sweep': retention.sweep,
    /** The recipe snapshot a run started now carries (a nightly's first step: schedules start it, not the API). */
    'recipes.snapshot': async (): Promise<RecipeSnapshot> => loadRecipes(deps.recipesDir),
    /**
     * Removes what the manifest lists and the run's labelled containers; keeps logs and the
     * outcome. Given the outcome, stores it once the cleanup is done; given the landing's target
     * queue, releases it first (the landing's last trip: no signal of its own to wait for).
     */
    async 'capsule.cleanupRun'({
      runId,
      outcome,
      release,
    }: {
      runId: string;
      outcome?: LandingOutcome;
      release?: { queueId: string };
    }): Promise<{ removedPaths: string[]; removedContainers: number }> {
      // Side by side: the target freed for the next landing, the outcome stored, the run's
      // containers removed — and then its files (no container may still write into them).
      const [, , { removed }] = await Promise.all([
        release ? queue.release({ queueId: release.queueId, landingId: runId }) : undefined,
        outcome ? writeFileAtomic(runPaths(deps.dataDir, outcome.runId).outcome, `${JSON.stringify(outcome, null, 2)}\n`) : undefined,
        gates.removeRunContainers({ runId }),
      ]);
      const files = await git.cleanupRunFiles({ runId });
      return { removedPaths: files.removed, removedContainers: removed };
    },
    /**
     * A landing's last step, on its host, in the workflow task that ends the run: frees the target
     * (given the queue; a repeat is harmless), stores the outcome, and leaves the run's cleanup to
     * this host's janitor, which removes what `capsule.cleanupRun` would once the run has closed
     * (activities/janitor/run-janitor.ts). Every part converges when repeated: it may run as a local activity.
     */
    async 'capsule.finishRun'({
      runId,
      outcome,
      release,
    }: {
      runId: string;
      outcome: LandingOutcome;
      release?: { queueId: string };
    }): Promise<{ cleanup: 'after-close' }> {
      await Promise.all([
        release ? queue.release({ queueId: release.queueId, landingId: runId }) : undefined,
        writeFileAtomic(runPaths(deps.dataDir, outcome.runId).outcome, `${JSON.stringify(outcome, null, 2)}\n`),
      ]);
      await janitor.finishLater(runId, Context.current().client);
      return { cleanup: 'after-close' };
    },
    /** Stores the outcome next to the run's logs, so it outlives Temporal's retention. */
    async 'capsule.recordOutcome'({ outcome, name }: { outcome: LandingOutcome | SessionOutcome; name?: string }): Promise<{ path: string }> {
      const paths = runPaths(deps.dataDir, outcome.runId);
      const path = name ? join(paths.runDir, `${name}.json`) : paths.outcome;
      await writeFileAtomic(path, `${JSON.stringify(outcome, null, 2)}\n`);
      return { path };
    },
  };
  return {
    ...activities,
    /**
     * A host-bound capsule as a local activity of the worker running the workflow — only when
     * that worker is the run's host (workflows/pinned.ts); anywhere else TARMAC_WRONG_HOST, and
     * the workflow sends the step through the host's task queue.
     */
    async 'capsule.onHost'({ hostId, name, input }: { hostId: string; name: HostBoundCapsule; input: unknown }): Promise<unknown> {
      if (hostId !== deps.hostId) throw failure(FailureCode.wrongHost, `this worker is host ${deps.hostId}, the run's host is ${hostId}`);
      if (!hostBoundCapsules.includes(name)) throw failure(FailureCode.invalidRequest, `${String(name)} is not a host-bound capsule`);
      return await (activities[name] as (input: unknown) => Promise<unknown>)(input);
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;

// The types workflows name: workflows import them from this index only, never from a room's file.
export type { StackedMember } from './git/batch';
export type { RebaseResult } from './git/rebase';
export type { RetentionReport } from './janitor/retention';
export type { SealedReport } from './stores/review-cache';
export type { DispatchPlan } from './sessions/sessions';
