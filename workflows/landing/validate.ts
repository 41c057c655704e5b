import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { hostQueue } from '../../core/queues';
import { capsule } from '../activity-options';
import { end, go, type LandingContext, type LandingState, type Next } from './context';
import { invalidGateFile } from './steps';

/** validate: the target's head and gate file, and the host the run is pinned to from here on. */
export async function validate(ctx: LandingContext, state: LandingState): Promise<Next> {
  const { runId, request, tracker, shared } = ctx;
  tracker.enter('validate');
  const inspected = await tracker.step(
    'capsule.inspectTarget',
    'capsule',
    () => shared['capsule.inspectTarget']({ runId, repo: request.repo, target: request.target, heads: request.heads }),
    (value) => `target at ${value.targetSha.slice(0, 12)} on host ${value.hostId}`,
  );
  tracker.facts.targetSha = inspected.targetSha;
  // Everything after this touches the host's mirror, workspace or Docker daemon: pin to that host.
  state.hostId = inspected.hostId;
  state.host = proxyActivities<Activities>({ ...capsule, taskQueue: hostQueue(inspected.hostId) });
  if (!inspected.gate.ok) return end(invalidGateFile(ctx, inspected.gate));
  state.gate = inspected.gate.gate;
  state.base = inspected.targetSha;
  return go('prepare');
}

/** prepare: the host's mirror and the run's workspace at the target. */
export async function prepare({ runId, request, tracker }: LandingContext, state: LandingState): Promise<Next> {
  tracker.enter('prepare');
  const host = state.host!;
  await tracker.step('capsule.prepareRun', 'capsule', () => host['capsule.prepareRun']({ runId, repo: request.repo, targetSha: state.base }));
  return go('rebase');
}
