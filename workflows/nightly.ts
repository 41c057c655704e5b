import { CancellationScope, executeChild, isCancellation, ParentClosePolicy, proxyActivities, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import type { Activities } from '../activities';
import { parseDuration } from '../core/duration';
import { FailureType } from '../core/errors';
import type { FixOutcome, FixRequest } from '../core/fix-types';
import { defaultRunnerImage, defaultSuiteTimeout, gateFilePath } from '../core/gate-file';
import type { NightlyOutcome, NightlyPhase, NightlyRequest, NightlyStatus, NightlyStatusView } from '../core/nightly-types';
import { hostQueue } from '../core/queues';
import type { GateSuiteResult, LandingOutcome, LandingRequest } from '../core/types';
import { capsule, gateSuite } from './activity-options';
import { emptyMeters } from './landing/tracker';
import { nightlyStatusQuery } from '../core/messages';
import { afterFix, afterLanding, nightlyRunId, repairPlan, repairRequest } from '../policies/nightly';
import { gateVerdict } from '../policies/supersedes';
import { landingRecord, searchAttributes } from '../core/search-attributes';

/**
 * nightly: inspect the target → prepare → full gate on the target head → green, or
 * fix (child fixLoop, repro = the failing suites; its fixes go to a run-owned branch)
 * → land (child landing of that branch, under the id the API would give it) →
 * cleanup → outcome. Started by a Temporal Schedule (`POST /v1/schedules`).
 */
export async function nightly(request: NightlyRequest): Promise<NightlyOutcome> {
  const { workflowId, taskQueue } = workflowInfo();
  const runId = nightlyRunId(workflowId);
  const started = Date.now();
  const meters = emptyMeters();
  const view: NightlyStatusView = { runId, repo: request.repo, target: request.target, phase: 'inspect', gates: [] };
  let failingSuites: string[] = [];
  let fix: NightlyOutcome['fixLoop'];
  let landed: NightlyOutcome['landing'];
  setHandler(nightlyStatusQuery, () => view);
  upsertSearchAttributes([
    { key: searchAttributes.kind, value: 'nightly' },
    { key: searchAttributes.repo, value: request.repo },
    { key: searchAttributes.target, value: request.target },
  ]);

  const enter = (phase: NightlyPhase) => {
    view.phase = phase;
    upsertSearchAttributes([{ key: searchAttributes.phase, value: phase }]);
  };
  const finish = (status: NightlyStatus, summary: string, failure?: NightlyOutcome['failure']): NightlyOutcome => ({
    status,
    summary,
    runId,
    repo: request.repo,
    target: request.target,
    endedInPhase: view.phase,
    ...(view.targetSha ? { targetSha: view.targetSha, treeSha: view.treeSha } : {}),
    gates: [...view.gates],
    failingSuites,
    ...(fix ? { fixLoop: fix } : {}),
    ...(view.repairBranch ? { repairBranch: view.repairBranch } : {}),
    ...(landed ? { landing: landed } : {}),
    ...(failure ? { failure } : {}),
    meters: { ...meters, wallTimeMs: Date.now() - started },
  });

  const shared = proxyActivities<Activities>({ ...capsule, taskQueue });
  let host: Activities | undefined;

  async function run(): Promise<NightlyOutcome> {
    enter('inspect');
    meters.capsulesRun += 1;
    const inspected = await shared['capsule.inspectTarget']({ runId, repo: request.repo, target: request.target, heads: [] });
    view.targetSha = inspected.targetSha;
    if (!inspected.gate.ok) {
      const where = inspected.gate.field === '(file)' ? gateFilePath : `${gateFilePath}: ${inspected.gate.field}`;
      return finish('invalid-gate-file', `${where} ${inspected.gate.message}`, { type: FailureType.invalidGateFile, message: `${where} ${inspected.gate.message}` });
    }
    const gate = inspected.gate.gate;
    const pinned = proxyActivities<Activities>({ ...capsule, taskQueue: hostQueue(inspected.hostId) });
    host = pinned;

    enter('prepare');
    meters.capsulesRun += 2;
    await pinned['capsule.prepareRun']({ runId, repo: request.repo, targetSha: inspected.targetSha });
    const { treeSha } = await pinned['capsule.workspaceHead']({ runId, since: inspected.targetSha });
    view.treeSha = treeSha;

    // The full gate, every suite, on exactly the target head.
    enter('gate');
    for (const suite of gate.suites) {
      const timeoutMs = parseDuration(suite.timeout ?? defaultSuiteTimeout) ?? 600_000;
      const runner = proxyActivities<Activities>({ ...gateSuite(timeoutMs), taskQueue: hostQueue(inspected.hostId) });
      meters.containersRun += 1;
      const result: GateSuiteResult = await runner['gate.runSuite']({
        runId,
        repo: request.repo,
        commitSha: inspected.targetSha,
        treeSha,
        suite,
        image: gate.image ?? defaultRunnerImage,
        timeoutMs,
        round: 1,
      });
      view.gates.push({ ...result, round: 1 });
    }
    const verdict = gateVerdict(view.gates.map((record) => ({ ...record, round: 1 })), gate.suites.map((suite) => suite.id), treeSha);
    const plan = repairPlan(gate.suites, verdict.failing);
    if (plan.kind === 'green') {
      return finish('green', `all ${gate.suites.length} suite(s) green on ${request.target} at ${inspected.targetSha.slice(0, 12)} (tree ${treeSha.slice(0, 12)}); nothing to repair`);
    }
    failingSuites = plan.failing;

    enter('fix');
    const fixId = `${runId}.fix`;
    view.fixLoopId = fixId;
    const fixed = (await executeChild('fixLoop', {
      workflowId: fixId,
      taskQueue,
      args: [
        {
          runId: fixId,
          repo: request.repo,
          branch: request.target,
          request: repairRequest,
          reproCommand: plan.reproCommand,
          ...(request.agents ? { agents: request.agents } : {}),
        } satisfies FixRequest,
      ],
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      typedSearchAttributes: [
        { key: searchAttributes.kind, value: 'fix-loop' },
        { key: searchAttributes.repo, value: request.repo },
        { key: searchAttributes.branch, value: [request.target] },
      ],
    })) as FixOutcome;
    fix = { id: fixId, outcome: fixed.outcome, summary: fixed.summary, playbookUsed: fixed.playbookUsed, filesChanged: fixed.filesChanged };
    meters.agentSessions += fixed.meters.agentSessions;
    meters.inputTokens += fixed.meters.inputTokens;
    meters.outputTokens += fixed.meters.outputTokens;
    meters.costUsd += fixed.meters.costUsd;
    if (fixed.fixBranch) view.repairBranch = fixed.fixBranch;
    const next = afterFix(fixed);
    if (next.kind === 'stop') return finish(next.status, `${plan.failing.join(', ')} red on ${request.target}; ${next.summary}`, { type: 'TARMAC_REPAIR_FAILED', message: fixed.summary });

    // The repair branch lands like any branch: rebase, gate, verify, queue, merge.
    enter('land');
    meters.capsulesRun += 1;
    const pin = await shared['nightly.pinLanding']({ repo: request.repo, target: request.target, branch: next.branch });
    view.landingId = pin.landingId;
    const landingRequest: LandingRequest = {
      repo: request.repo,
      target: request.target,
      heads: pin.heads,
      requestedTargetSha: pin.targetSha,
      ...(request.agents ? { agents: { ...(request.agents.implementer ? { fixer: request.agents.implementer } : {}), ...(request.agents.ladder ? { ladder: request.agents.ladder } : {}) } } : {}),
    };
    const landing = (await executeChild('landing', {
      workflowId: pin.landingId,
      taskQueue,
      args: [landingRequest],
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      // A nightly that is cancelled or terminated asks its landing to stop, so the
      // landing's own finale (queue release, cleanup, outcome) still runs.
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      ...landingRecord({ repo: request.repo, target: request.target, heads: pin.heads }, { startedBy: workflowId }),
    })) as LandingOutcome;
    landed = { id: pin.landingId, status: landing.status, summary: landing.summary, ...(landing.mergedSha ? { mergedSha: landing.mergedSha } : {}) };
    meters.agentSessions += landing.meters.agentSessions;
    meters.inputTokens += landing.meters.inputTokens;
    meters.outputTokens += landing.meters.outputTokens;
    meters.costUsd += landing.meters.costUsd;
    const status = afterLanding(landing.status);
    const repaired = `${plan.failing.join(', ')} red on ${request.target} at ${inspected.targetSha.slice(0, 12)}; fix loop ${fixed.outcome}${fixed.playbookUsed ? ` (playbook ${fixed.playbookUsed})` : ''} on ${next.branch}`;
    return status === 'repaired'
      ? finish('repaired', `${repaired}; landing ${pin.landingId} landed: ${landing.summary}`)
      : finish('landing-failed', `${repaired}; landing ${pin.landingId} ended ${landing.status}: ${landing.summary}`, { type: landing.failure?.type ?? 'TARMAC_LANDING_FAILED', message: landing.summary });
  }

  let outcome: NightlyOutcome;
  try {
    outcome = await run();
  } catch (error) {
    if (isCancellation(error)) {
      outcome = finish('cancelled', `cancelled in phase ${view.phase}`);
    } else {
      const cause = (error as { cause?: { type?: string; message?: string } }).cause;
      const message = cause?.message ?? (error instanceof Error ? error.message : String(error));
      outcome = finish('failed', `failed in phase ${view.phase}: ${message}`, { type: cause?.type ?? 'TARMAC_INTERNAL', message });
    }
  }
  // The finale runs on every exit path, cancellation included: cleanup by manifest, then the record.
  await CancellationScope.nonCancellable(async () => {
    if (host) {
      enter('cleanup');
      await host['capsule.cleanupRun']({ runId }).catch(() => undefined);
      await host['capsule.recordOutcome']({ outcome: outcome as never }).catch(() => undefined);
    }
    enter('done');
    upsertSearchAttributes([{ key: searchAttributes.outcome, value: outcome.status }]);
  });
  view.outcome = outcome;
  return outcome;
}
