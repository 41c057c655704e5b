import {
  CancellationScope,
  executeChild,
  isCancellation,
  ParentClosePolicy,
  patched,
  proxyActivities,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import type { Activities } from '../../activities';
import { parseDuration } from '../../core/duration';
import { FailureCode } from '../../core/failures';
import type { FixOutcome, FixRequest } from '../../core/fix-types';
import { defaultRunnerImage, defaultSuiteTimeout, gateFilePath, type GateFile } from '../../core/gate-file';
import type { NightlyOutcome, NightlyRequest } from '../../core/nightly-types';
import { hostQueue, placementQueue } from '../../core/queues';
import type { RecipeSnapshot } from '../../core/recipe-schemas';
import type { GateSuiteResult, LandingOutcome, LandingRequest } from '../../core/types';
import { capsule, environmentBuild, gateSuite } from '../activity-options';
import type { EnvironmentRef } from '../../core/environment-types';
import type { EnvironmentDeclaration } from '../../core/environment';
import { environmentFailureText } from '../../policies/environment-text';
import { afterFix, afterLanding, repairPlan, repairRequest } from '../../policies/nightly';
import { gateVerdict } from '../../policies/supersedes';
import { landingRecord, searchAttributes } from '../../core/search-attributes';
import { workflowTaskTimeout } from '../../core/timeouts';
import { NightlyRecord } from './record';
import { typedCauseOf } from '../run-record';

/** What the full gate left to repair: the failing suites and the command that reproduces them. */
type Red = { failing: string[]; reproCommand: string; targetSha: string };

/**
 * nightly: inspect the target → prepare → full gate on the target head → green, or
 * fix (child fixLoop, repro = the failing suites; its fixes go to a run-owned branch)
 * → land (child landing of that branch, under the id the API would give it) →
 * cleanup → outcome. Started by a Temporal Schedule (`POST /v1/schedules`).
 */
export async function nightly(request: NightlyRequest): Promise<NightlyOutcome> {
  const record = new NightlyRecord(request);
  const placed: { host?: Activities } = {};
  let outcome: NightlyOutcome;
  try {
    outcome = await run(record, placed);
  } catch (error) {
    if (isCancellation(error)) {
      outcome = record.finish('cancelled', `cancelled in phase ${record.view.phase}`);
    } else {
      const cause = typedCauseOf(error);
      outcome = record.fail(FailureCode.internal, `failed in phase ${record.view.phase}: ${cause.message}`, cause);
    }
  }
  // The finale runs on every exit path, cancellation included: cleanup by manifest, then the record.
  await CancellationScope.nonCancellable(async () => {
    const host = placed.host;
    if (host) {
      record.enter('cleanup');
      await host['capsule.cleanupRun']({ runId: record.runId }).catch(() => undefined);
      await host['capsule.recordOutcome']({ outcome: outcome as never }).catch(() => undefined);
    }
    record.enter('done');
    upsertSearchAttributes([{ key: searchAttributes.outcome, value: outcome.status }]);
  });
  record.view.outcome = outcome;
  return outcome;
}

async function run(record: NightlyRecord, placed: { host?: Activities }): Promise<NightlyOutcome> {
  const recipes = await pinRecipes();
  const gated = await gateTarget(record, placed);
  if ('status' in gated) return gated;
  const fixed = await fix(record, gated, recipes);
  const next = afterFix(fixed);
  if (next.kind === 'stop')
    return record.fail(FailureCode.repairFailed, `${gated.failing.join(', ')} red on ${record.request.target}; ${next.summary}`, { message: fixed.summary });
  return await land(record, gated, fixed, next.branch, recipes);
}

/** The history marker of nightlies that pin their recipes (see pinRecipes). */
const recipeSnapshotPatch = 'nightly-recipe-snapshot';

/**
 * A nightly is started by its schedule, not by the API, so it resolves its recipe snapshot itself, as
 * its first step (an activity: the result is in the history, and a replay sees the same), names the
 * version in its memo and hands the snapshot to its fix loop and its landing. A nightly that started
 * before this step existed has no marker in its history and goes on without one (its children then
 * read the live recipes, as it did).
 */
async function pinRecipes(): Promise<RecipeSnapshot | undefined> {
  if (!patched(recipeSnapshotPatch)) return undefined;
  const shared = proxyActivities<Activities>({ ...capsule, taskQueue: workflowInfo().taskQueue });
  const recipes = await shared['recipes.snapshot']();
  upsertMemo({ recipeVersion: recipes.version });
  return recipes;
}

/** inspect → prepare → the full gate, every suite, on exactly the target head: the outcome when green (or invalid), else what is red. */
async function gateTarget(record: NightlyRecord, placed: { host?: Activities }): Promise<NightlyOutcome | Red> {
  const { request, runId, meters, view } = record;
  record.enter('inspect');
  meters.capsulesRun += 1;
  // Through the placement queue: the worker that inspects (its mirror) is the run's host from here on.
  const placing = proxyActivities<Activities>({ ...capsule, taskQueue: placementQueue(workflowInfo().taskQueue) });
  const inspected = await placing['capsule.inspectTarget']({ runId, repo: request.repo, target: request.target, heads: [] });
  view.targetSha = inspected.targetSha;
  if (!inspected.gate.ok) {
    const where = inspected.gate.field === '(file)' ? gateFilePath : `${gateFilePath}: ${inspected.gate.field}`;
    return record.fail(FailureCode.invalidGateFile, `${where} ${inspected.gate.message}`, { message: `${where} ${inspected.gate.message}` });
  }
  if (inspected.environment && !inspected.environment.ok) {
    const { file, field, message } = inspected.environment;
    return record.fail(FailureCode.invalidEnvironment, `${file}: ${field} ${message}`, { message: `${file}: ${field} ${message}` });
  }
  const gate = inspected.gate.gate;
  const pinned = proxyActivities<Activities>({ ...capsule, taskQueue: hostQueue(inspected.hostId) });
  placed.host = pinned;

  record.enter('prepare');
  meters.capsulesRun += 2;
  await pinned['capsule.prepareRun']({ runId, repo: request.repo, targetSha: inspected.targetSha });
  const { treeSha } = await pinned['capsule.workspaceHead']({ runId, since: inspected.targetSha });
  view.treeSha = treeSha;

  record.enter('gate');
  // The repository's environment of the target's tree (issue 24): reused by key, else built.
  const declaration = inspected.environment?.ok ? inspected.environment.declaration : undefined;
  let environment: EnvironmentRef | undefined;
  if (declaration) {
    const ready = await prepareEnvironment(record, inspected.hostId, inspected.targetSha, gate, declaration);
    if ('outcome' in ready) return ready.outcome;
    environment = ready.environment;
  }
  await runSuites(record, inspected.hostId, inspected.targetSha, treeSha, gate, environment);
  const verdict = gateVerdict(
    view.gates.map((entry) => ({ ...entry, round: 1 })),
    gate.suites.map((suite) => suite.id),
    treeSha,
  );
  const plan = repairPlan(gate.suites, verdict.failing);
  if (plan.kind === 'green') {
    return record.finish(
      'green',
      `all ${gate.suites.length} suite(s) green on ${request.target} at ${inspected.targetSha.slice(0, 12)} (tree ${treeSha.slice(0, 12)}); nothing to repair`,
    );
  }
  record.failingSuites = plan.failing;
  return { failing: plan.failing, reproCommand: plan.reproCommand, targetSha: inspected.targetSha };
}

/** The repository's environment of the target's tree, or the run's outcome when it could not be set up. */
async function prepareEnvironment(
  record: NightlyRecord,
  hostId: string,
  targetSha: string,
  gate: GateFile,
  declaration: EnvironmentDeclaration,
): Promise<{ environment: EnvironmentRef } | { outcome: NightlyOutcome }> {
  const { request, runId } = record;
  const builder = proxyActivities<Activities>({ ...environmentBuild(declaration.timeoutMs), taskQueue: hostQueue(hostId) });
  const ready = await builder['environment.prepare']({
    runId,
    repo: request.repo,
    commitSha: targetSha,
    baseSha: targetSha,
    declaration,
    fallbackImage: gate.image ?? defaultRunnerImage,
  });
  if (!ready.ok) {
    const { summary, message } = environmentFailureText(ready.failure);
    return { outcome: record.fail(FailureCode.environmentFailed, summary, { message }) };
  }
  return { environment: ready.environment };
}

/** Every suite of the gate, one after another, on the target's tree; each result goes on the view. */
async function runSuites(
  record: NightlyRecord,
  hostId: string,
  targetSha: string,
  treeSha: string,
  gate: GateFile,
  environment: EnvironmentRef | undefined,
): Promise<void> {
  const { request, runId, meters, view } = record;
  for (const suite of gate.suites) {
    const timeoutMs = parseDuration(suite.timeout ?? defaultSuiteTimeout) ?? 600_000;
    const runner = proxyActivities<Activities>({ ...gateSuite(timeoutMs), taskQueue: hostQueue(hostId) });
    meters.containersRun += 1;
    // A nightly observes the target as it is tonight (time, the world outside the tree): never a reused result.
    const result: GateSuiteResult = await runner['gate.runSuite']({
      runId,
      repo: request.repo,
      commitSha: targetSha,
      treeSha,
      suite,
      image: gate.image ?? defaultRunnerImage,
      timeoutMs,
      round: 1,
      reuse: false,
      ...(environment ? { environment } : {}),
    });
    view.gates.push({ ...result, round: 1 });
  }
}

/** fix: a child fix loop whose repro is the failing suites; its fixes go to a run-owned branch. */
async function fix(record: NightlyRecord, red: Red, recipes: RecipeSnapshot | undefined): Promise<FixOutcome> {
  const { request, runId, view } = record;
  record.enter('fix');
  const fixId = `${runId}.fix`;
  view.fixLoopId = fixId;
  const fixed = (await executeChild('fixLoop', {
    workflowId: fixId,
    taskQueue: workflowInfo().taskQueue,
    workflowTaskTimeout,
    args: [
      {
        runId: fixId,
        repo: request.repo,
        branch: request.target,
        request: repairRequest,
        reproCommand: red.reproCommand,
        ...(request.agents ? { agents: request.agents } : {}),
        ...(recipes ? { recipes } : {}),
      } satisfies FixRequest,
    ],
    parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    typedSearchAttributes: [
      { key: searchAttributes.kind, value: 'fix-loop' },
      { key: searchAttributes.repo, value: request.repo },
      { key: searchAttributes.branch, value: [request.target] },
    ],
  })) as FixOutcome;
  record.fix = { id: fixId, outcome: fixed.outcome, summary: fixed.summary, playbookUsed: fixed.playbookUsed, filesChanged: fixed.filesChanged };
  record.addSpend(fixed.meters);
  if (fixed.fixBranch) view.repairBranch = fixed.fixBranch;
  return fixed;
}

/** land: the repair branch lands like any branch (rebase, gate, verify, queue, merge), under the id the API would give it. */
async function land(record: NightlyRecord, red: Red, fixed: FixOutcome, branch: string, recipes: RecipeSnapshot | undefined): Promise<NightlyOutcome> {
  const { request, view, meters } = record;
  const { workflowId, taskQueue } = workflowInfo();
  record.enter('land');
  meters.capsulesRun += 1;
  const shared = proxyActivities<Activities>({ ...capsule, taskQueue });
  const pin = await shared['nightly.pinLanding']({ repo: request.repo, target: request.target, branch });
  view.landingId = pin.landingId;
  const landingRequest: LandingRequest = {
    repo: request.repo,
    target: request.target,
    heads: pin.heads,
    requestedTargetSha: pin.targetSha,
    ...(request.agents
      ? {
          agents: {
            ...(request.agents.implementer ? { fixer: request.agents.implementer } : {}),
            ...(request.agents.ladder ? { ladder: request.agents.ladder } : {}),
          },
        }
      : {}),
    ...(recipes ? { recipes } : {}),
  };
  const landing = (await executeChild('landing', {
    workflowId: pin.landingId,
    taskQueue,
    workflowTaskTimeout,
    args: [landingRequest],
    workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    // A nightly that is cancelled or terminated asks its landing to stop, so the
    // landing's own finale (queue release, cleanup, outcome) still runs.
    parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    ...landingRecord(
      { repo: request.repo, target: request.target, heads: pin.heads },
      { startedBy: workflowId, ...(recipes ? { recipeVersion: recipes.version } : {}) },
    ),
  })) as LandingOutcome;
  record.landed = { id: pin.landingId, status: landing.status, summary: landing.summary, ...(landing.mergedSha ? { mergedSha: landing.mergedSha } : {}) };
  record.addSpend(landing.meters);
  const repaired = `${red.failing.join(', ')} red on ${request.target} at ${red.targetSha.slice(0, 12)}; fix loop ${fixed.outcome}${fixed.playbookUsed ? ` (playbook ${fixed.playbookUsed})` : ''} on ${branch}`;
  return afterLanding(landing.status) === 'repaired'
    ? record.finish('repaired', `${repaired}; landing ${pin.landingId} landed: ${landing.summary}`)
    : record.fail(FailureCode.landingFailed, `${repaired}; landing ${pin.landingId} ended ${landing.status}: ${landing.summary}`, {
        type: landing.failure?.type ?? FailureCode.landingFailed,
        message: landing.summary,
      });
}
