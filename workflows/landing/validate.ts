import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { FailureCode } from '../../core/failures';
import { gateFilePath } from '../../core/gate-file';
import { placementQueue } from '../../core/queues';
import { capsule } from '../activity-options';
import { pinnedTo } from '../pinned';
import { end, go, type LandingContext, type LandingState, type Next } from './context';
import { causeOf } from '../run-record';
import { invalidEnvironment, invalidGateFile } from './steps';

/**
 * validate: the target's head and gate file, and the host the run is pinned to from here on. The
 * same capsule makes the workspace and does the first rebase when the gate file is valid: prepare
 * and rebase take those results instead of a round trip each.
 */
export async function validate(ctx: LandingContext, state: LandingState): Promise<Next> {
  const { runId, request, tracker, local } = ctx;
  tracker.enter('validate');
  // Inspect, workspace and first rebase in one round trip on the host that takes it (each recorded as its step).
  // The run's recipes go along: the host checks the gate file's panel against them.
  const input = { runId, repo: request.repo, target: request.target, heads: request.heads, ...(request.recipes ? { recipes: request.recipes } : {}) };
  // On this worker when it is a host (no trip); else through the placement queue, to a worker that is.
  const placement = await tracker.compound('capsule.placeLanding', () =>
    local['capsule.placeLanding'](input).catch(async (error: unknown) => {
      if (causeOf(error).type !== FailureCode.wrongHost) throw error;
      return await proxyActivities<Activities>({ ...capsule, taskQueue: placementQueue(ctx.taskQueue) })['capsule.placeLanding'](input);
    }),
  );
  const { inspected } = placement;
  state.placement = placement.rebased;
  tracker.facts.targetSha = inspected.targetSha;
  // Everything after this touches the host's mirror, workspace or Docker daemon: pin to that host.
  state.hostId = inspected.hostId;
  state.host = pinnedTo(inspected.hostId, ctx.hostLostAfterMs);
  if (inspected.environment && !inspected.environment.ok) return end(invalidEnvironment(ctx, inspected.environment));
  if (!inspected.gate.ok) return end(invalidGateFile(ctx, inspected.gate));
  // The gate file's panel cannot give a verdict here: refused now, naming the reviewer and what to
  // set, rather than a review-incomplete after the gate (docs/decisions/0036).
  if (placement.review) {
    const { reason } = placement.review;
    return end(tracker.fail(FailureCode.agentUnavailable, `${reason}; nothing was started`, { message: reason, file: gateFilePath, field: 'review.panel' }));
  }
  state.gate = inspected.gate.gate;
  state.environment = inspected.environment?.declaration;
  if (placement.environment) state.placedEnvironment = placement.environment;
  state.base = inspected.targetSha;
  return go('prepare');
}

/** prepare: the host's mirror and the run's workspace at the target. */
export async function prepare({ runId, request, tracker }: LandingContext, state: LandingState): Promise<Next> {
  tracker.enter('prepare');
  const host = state.host!;
  if (!state.placement)
    await tracker.step('capsule.prepareRun', 'capsule', () => host['capsule.prepareRun']({ runId, repo: request.repo, targetSha: state.base }));
  return go('rebase');
}
