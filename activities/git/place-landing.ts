import { log } from '@temporalio/activity';
import { failure, FailureCode } from '../../core/failures';
import type Docker from 'dockerode';
import { defaultRunnerImage, suiteTimeoutMs } from '../../core/gate-file';
import type { StepTiming } from '../../core/types';
import type { PanelReadiness } from '../../core/agent-availability';
import type { RecipeSnapshot } from '../../core/recipe-schemas';
import { gateFileDecision } from '../../policies/gate-file-change';
import { startStepContainerAhead } from '../containers/containers';
import type { GateActivities } from '../containers/gates';
import type { EnvironmentActivities } from '../environments/environments';
import type { EnvironmentRef } from '../../core/environment-types';
import { environmentDetail } from '../../policies/environment-text';
import { automationGit, type GitActivities, type InspectTargetInput, type InspectTargetResult } from './git';
import { runPaths } from '../stores/run-store';
import type { LandingCapsules } from './landing-capsules';
import type { RebaseActivities, RebaseResult } from './rebase';

interface PlaceLandingResult {
  inspected: InspectTargetResult;
  /** The gate file's review panel cannot give a verdict on this host (a reviewer's key or image missing): nothing is made. */
  review?: Extract<PanelReadiness, { ok: false }>;
  /** The first rebase of the branches onto the target (absent when the gate file is invalid: nothing is made). */
  rebased?: RebaseResult;
  /** Each part's own start and end: the landing records them as its steps. */
  parts: StepTiming[];
  /** The repository's environment of the rebased head, when the host has it (looked up beside the rebase; nothing is built here). */
  environment?: { commitSha: string; environment: EnvironmentRef };
}

/** After this first rebase the landing's next step is its first gate round: no conflict, no dropped patch, no gate-file question. */
function gateRunsNext(rebased: RebaseResult): boolean {
  return rebased.status === 'done' && rebased.dropped.length === 0 && gateFileDecision(rebased.gateFile, undefined).kind !== 'ask';
}

/**
 * The first three steps of a landing in one round trip, on the host that takes it: inspect
 * the target (fetch, pinned heads, gate file), make the run's workspace, rebase the branches
 * (with the patch check). Each part is the capsule it always was; only the trips between them
 * are gone. A retry runs them again: each is idempotent on its host (the workspace and the
 * rebase state are kept and resumed).
 */
export function createPlacement(deps: {
  dataDir: string;
  hostId: string;
  servesHost: boolean;
  git: GitActivities;
  landing: LandingCapsules;
  rebase: RebaseActivities;
  gates: GateActivities;
  environments: EnvironmentActivities;
  /** Whether a panel can run on this host (activities/sessions/sessions.ts); none: not checked. */
  panelReadiness?: (review: { panel: string; quorum?: number }, recipes: RecipeSnapshot | undefined) => Promise<PanelReadiness | undefined>;
}) {
  const { dataDir, hostId, servesHost, git, landing, rebase, gates, environments } = deps;
  return async function placeLanding(input: InspectTargetInput & { recipes?: RecipeSnapshot }): Promise<PlaceLandingResult> {
    // A worker that does not poll its host's queue must not become a run's host: nothing would run
    // the steps pinned to it. The landing then places itself through the placement queue.
    if (!servesHost) throw failure(FailureCode.wrongHost, `this worker (host ${hostId}) serves no host queue; the landing is placed by a host's worker`);
    const parts: StepTiming[] = [];
    const timed = async <T>(name: string, run: () => Promise<T>): Promise<T> => {
      const startedAt = new Date().toISOString();
      const value = await run();
      parts.push({ name, startedAt, endedAt: new Date().toISOString() });
      return value;
    };
    const inspected = await timed('capsule.inspectTarget', () => git.inspectTarget(input));
    // An invalid gate file or environment declaration: nothing is made.
    if (!inspected.gate.ok || inspected.environment?.ok === false) return { inspected, parts };
    // A panel that cannot give a verdict here (a reviewer's key or image missing, the panel not
    // skipping it): the landing is refused before anything is made or run (docs/decisions/0036).
    const review = inspected.gate.gate.review;
    const readiness = review && deps.panelReadiness ? await deps.panelReadiness(review, input.recipes) : undefined;
    if (readiness && !readiness.ok) return { inspected, parts, review: readiness };
    const { runId, repo, heads } = input;
    await timed('capsule.prepareRun', () => landing.prepareRun({ runId, repo, targetSha: inspected.targetSha }));
    const gate = inspected.gate.gate;
    // The first gate round's containers are made beside the patch check (snapshot exported,
    // container created): the round then only takes them on. Best effort — the round makes
    // whatever is missing itself, and reports what fails (a missing image) in its own phase. A suite
    // whose result on this tree is sealed in the gate cache gets none: the round reuses the result.
    const ahead: Docker.Container[] = [];
    let sealed = 0;
    let pooled = false;
    const declaration = inspected.environment?.ok ? inspected.environment.declaration : undefined;
    let placed: PlaceLandingResult['environment'];
    const gateAhead = async (headSha: string) => {
      // Suites of a repository environment run in it: their containers are made ahead only when the
      // host has the head's environment (a hit); a build is the gate phase's, with its own step.
      const startedAt = new Date().toISOString();
      const [treeSha, environment] = await Promise.all([
        automationGit(runPaths(dataDir, runId).worktree)
          .revparse([`${headSha}^{tree}`])
          .then((sha) => sha.trim()),
        declaration
          ? environments
              .lookupEnvironment({ runId, repo, commitSha: headSha, declaration, fallbackImage: gate.image ?? defaultRunnerImage })
              .catch((error: unknown) => {
                log.info('the environment was not looked up; the gate phase prepares it', { error: String(error) });
                return undefined;
              })
          : undefined,
      ]);
      if (declaration) {
        if (!environment) return;
        placed = { commitSha: headSha, environment };
        parts.push({
          name: `environment.prepare:${treeSha.slice(0, 12)}`,
          startedAt,
          endedAt: new Date().toISOString(),
          detail: environmentDetail(environment),
        });
      }
      await Promise.all(
        gate.suites.map(async (suite, index) => {
          const input = {
            runId,
            repo,
            commitSha: headSha,
            treeSha,
            suite,
            image: gate.image ?? defaultRunnerImage,
            timeoutMs: suiteTimeoutMs(suite),
            round: 1,
            ...(environment ? { environment } : {}),
          };
          if ('hit' in (await gates.sealedResult(input).catch(() => ({ miss: 'lookup failed' })))) {
            sealed += 1;
            return;
          }
          // The first suite takes a container of the host's warm pool, already started (activities/containers/gate-pool.ts).
          if (index === 0) {
            pooled = await gates.claimPooled(input).catch((error: unknown) => {
              log.info('no gate pool container; the round makes its own', { suite: suite.id, error: String(error) });
              return false;
            });
            if (pooled) return;
          }
          await gates
            .prepareGateSuite(input)
            .then((container) => void ahead.push(container))
            .catch((error: unknown) => {
              log.info('gate container not made ahead; the round makes it', { suite: suite.id, error: String(error) });
            });
        }),
      );
    };
    const rebased = await timed('capsule.rebaseBranches', () =>
      rebase.rebaseBranches({ runId, targetSha: inspected.targetSha, heads }, { rebased: gateAhead }),
    );
    // Started now when nothing can stop the landing before its gate (every patch present, the gate
    // file as the target has it): the suites run while the landing goes on to its gate phase.
    // Not awaited: Docker takes ~200 ms to start a container, and the landing's trip to its gate
    // step overlaps them. The step takes the container on in whatever state it finds it (created:
    // it starts it; a start in flight answers 304 and it waits; running; exited).
    // The pool's container runs its suite now, or goes (the landing stops, or asks, before its gate).
    if (pooled) {
      const next = gateRunsNext(rebased);
      await (next ? gates.goPooled(runId) : gates.discardPooled(runId)).catch((error: unknown) => {
        log.info(
          next
            ? 'the gate pool container was not given its go; the round runs the suite in its own'
            : 'the unused gate pool container was not removed; the run cleanup removes it',
          { error: String(error) },
        );
      });
    }
    if (ahead.length > 0 && ahead.length + (pooled ? 1 : 0) + sealed === gate.suites.length && gateRunsNext(rebased)) {
      void Promise.all(ahead.map((container) => startStepContainerAhead(container))).catch((error: unknown) => {
        log.info('gate containers not started ahead; the round starts them', { error: String(error) });
      });
    }
    // Verify's reads of these two SHAs, begun now: they are done when the gate is.
    if (rebased.status === 'done') landing.readVerifyFactsAhead({ runId, targetSha: inspected.targetSha, headSha: rebased.headSha });
    return { inspected, rebased, parts, ...(placed ? { environment: placed } : {}) };
  };
}
