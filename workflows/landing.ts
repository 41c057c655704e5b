import { CancellationScope, isCancellation, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { parseDuration } from '../core/duration';
import { FailureType } from '../core/errors';
import { defaultRunnerImage, defaultSuiteTimeout, gateFilePath } from '../core/gate-file';
import { hostQueue } from '../core/queues';
import type { LandingOutcome, LandingRequest } from '../core/types';
import { capsule, gateSuite } from './activity-options';
import { LandingTracker } from './landing-tracker';
import { landingStatusQuery } from './messages';

/** The failure type and message of an activity failure, read from its cause. */
function failureOf(error: unknown): { type?: string; message: string; details?: Record<string, unknown> } {
  const cause = (error as { cause?: { type?: string; message?: string; details?: unknown[] } }).cause;
  const message = cause?.message ?? (error instanceof Error ? error.message : String(error));
  const details = cause?.details?.[0] as Record<string, unknown> | undefined;
  return { ...(cause?.type ? { type: cause.type } : {}), message, ...(details ? { details } : {}) };
}

/**
 * landing: validate → prepare → gate → verify → merge → cleanup → outcome.
 * Every exit path, cancellation included, returns and records an outcome.
 */
export async function landing(request: LandingRequest): Promise<LandingOutcome> {
  const { workflowId: runId, taskQueue } = workflowInfo();
  const tracker = new LandingTracker(runId, request);
  setHandler(landingStatusQuery, () => tracker.view());

  const shared = proxyActivities<Activities>({ ...capsule, taskQueue });
  let host: Activities | undefined;
  let outcome: LandingOutcome;
  try {
    outcome = await land();
  } catch (error) {
    if (isCancellation(error)) {
      outcome = tracker.finish('cancelled', `cancelled in phase ${tracker.phase}; nothing was merged by this run`);
    } else {
      const failure = failureOf(error);
      outcome = tracker.finish('failed', `failed in phase ${tracker.phase}: ${failure.message}`, {
        type: failure.type ?? 'TARMAC_INTERNAL',
        message: failure.message,
      });
    }
  }
  // The finale runs even when the workflow is cancelled: cleanup by manifest, then the record.
  await CancellationScope.nonCancellable(async () => {
    if (host) {
      const cleaner = host;
      tracker.enter('cleanup');
      try {
        await tracker.step('capsule.cleanupRun', 'capsule', () => cleaner['capsule.cleanupRun']({ runId }));
      } catch (error) {
        outcome.summary += ` (cleanup failed: ${failureOf(error).message})`;
      }
      tracker.enter('done');
      await cleaner['capsule.recordOutcome']({ outcome });
    }
  });
  return outcome;

  async function land(): Promise<LandingOutcome> {
    tracker.enter('validate');
    const inspected = await tracker.step(
      'capsule.inspectTarget',
      'capsule',
      () => shared['capsule.inspectTarget']({ runId, repo: request.repo, target: request.target, heads: request.heads }),
      (value) => `target at ${value.targetSha.slice(0, 12)} on host ${value.hostId}`,
    );
    tracker.facts.targetSha = inspected.targetSha;
    // Everything after this touches the host's mirror, worktree or Docker daemon: pin to that host.
    host = proxyActivities<Activities>({ ...capsule, taskQueue: hostQueue(inspected.hostId) });
    const pinned = host;
    if (!inspected.gate.ok) {
      const { field, message } = inspected.gate;
      const where = field === '(file)' ? gateFilePath : `${gateFilePath}: ${field}`;
      return tracker.finish('invalid-gate-file', `${where} ${message}`, {
        type: FailureType.invalidGateFile,
        message: `${where} ${message}`,
        file: gateFilePath,
        field,
      });
    }
    const gate = inspected.gate.gate;

    tracker.enter('prepare');
    let prepared;
    try {
      prepared = await tracker.step('capsule.prepareRun', 'capsule', () =>
        pinned['capsule.prepareRun']({ runId, repo: request.repo, targetSha: inspected.targetSha, heads: request.heads }),
      );
    } catch (error) {
      const failure = failureOf(error);
      if (failure.type === FailureType.notFastForward) {
        return tracker.finish('needs-rebase', failure.message, { type: failure.type, message: failure.message });
      }
      throw error;
    }
    tracker.facts.headSha = prepared.headSha;
    tracker.facts.treeSha = prepared.treeSha;

    tracker.enter('gate');
    for (const suite of gate.suites) {
      const timeoutMs = parseDuration(suite.timeout ?? defaultSuiteTimeout) ?? 600_000;
      const suiteRunner = proxyActivities<Activities>({ ...gateSuite(timeoutMs), taskQueue: hostQueue(inspected.hostId) });
      const result = await tracker.step(
        `gate.runSuite:${suite.id}`,
        'container',
        () =>
          suiteRunner['gate.runSuite']({
            runId,
            repo: request.repo,
            commitSha: prepared.headSha,
            treeSha: prepared.treeSha,
            suite,
            image: gate.image ?? defaultRunnerImage,
            timeoutMs,
            round: 1,
          }),
        (value) => `${value.status} (exit ${value.exitCode ?? 'none'})${value.reattached ? ', reattached' : ''}`,
      );
      tracker.gates.push(result);
      if (result.status !== 'passed') {
        const how = result.status === 'timed-out' ? `timed out after ${suite.timeout ?? defaultSuiteTimeout}` : `exited ${result.exitCode}`;
        return tracker.finish('gate-failed', `gate suite ${suite.id} ${how} on tree ${prepared.treeSha.slice(0, 12)}; log: ${result.logRef}`, {
          type: 'TARMAC_GATE_FAILED',
          message: `suite ${suite.id} ${how}`,
        });
      }
    }

    tracker.enter('verify');
    const verified = await tracker.step('capsule.verifyLanding', 'capsule', () =>
      pinned['capsule.verifyLanding']({
        runId,
        repo: request.repo,
        targetSha: inspected.targetSha,
        headSha: prepared.headSha,
        gates: tracker.gates,
        suiteIds: gate.suites.map((suite) => suite.id),
      }),
    );
    if (!verified.ok) {
      return tracker.finish('verify-failed', `verification refused the merge: ${verified.problems.join('; ')}`, {
        type: 'TARMAC_VERIFY_FAILED',
        message: verified.problems.join('; '),
      });
    }

    tracker.enter('merge');
    try {
      const merged = await tracker.step('capsule.fastForwardTarget', 'capsule', () =>
        pinned['capsule.fastForwardTarget']({
          runId,
          repo: request.repo,
          target: request.target,
          expectedTargetSha: inspected.targetSha,
          headSha: prepared.headSha,
        }),
      );
      tracker.facts.mergedSha = merged.mergedSha;
    } catch (error) {
      const failure = failureOf(error);
      if (failure.type === FailureType.targetMoved) {
        return tracker.finish('target-moved', `${failure.message}; nothing was merged`, { type: failure.type, message: failure.message });
      }
      throw error;
    }
    return tracker.finish(
      'landed',
      `${request.target} fast-forwarded to ${prepared.headSha.slice(0, 12)} (${prepared.commitsOverTarget} commit(s), all ${gate.suites.length} suite(s) green on tree ${prepared.treeSha.slice(0, 12)})`,
    );
  }
}
