import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import type { EnvironmentDeclaration } from '../../core/environment';
import type { EnvironmentFailure, EnvironmentRef } from '../../core/environment-types';
import { egressText, environmentDetail } from '../../policies/environment-text';
import { defaultRunnerImage, type GateFile } from '../../core/gate-file';
import { hostQueue } from '../../core/queues';
import { environmentBuild } from '../activity-options';
import type { LandingStepContext } from './step-context';

type ReadyEnvironment = { environment?: EnvironmentRef } | { failed: EnvironmentFailure };

/**
 * The repository's environment for one tree (issue 24): reused when the host has its key
 * (ENV_CACHE=hit), else built by a setup with audited egress (ENV_CACHE=miss). No declaration: no
 * environment, and the gate runs on its image as before. Recorded in the landing's outcome with
 * every host the setup reached; a failed build is data, for the phase to decide on.
 */
export async function readyEnvironment(
  ctx: LandingStepContext,
  pinned: string,
  declaration: EnvironmentDeclaration | undefined,
  gate: GateFile,
  commitSha: string,
  treeSha: string | undefined,
  baseSha: string,
): Promise<ReadyEnvironment> {
  if (!declaration) return {};
  const { runId, request, tracker } = ctx;
  const builder = proxyActivities<Activities>({
    ...environmentBuild(declaration.timeoutMs),
    taskQueue: hostQueue(pinned),
    ...(ctx.hostLostAfterMs ? { scheduleToStartTimeout: ctx.hostLostAfterMs } : {}),
  });
  const result = await tracker.step(
    `environment.prepare:${(treeSha ?? commitSha).slice(0, 12)}`,
    'container',
    () => builder['environment.prepare']({ runId, repo: request.repo, commitSha, baseSha, declaration, fallbackImage: gate.image ?? defaultRunnerImage }),
    (value) => (value.ok ? environmentDetail(value.environment) : `failed: ${value.failure.why}${egressText(value.failure.egress)}`),
    (value) => (value.ok ? 'done' : 'failed'),
  );
  if (result.ok) {
    const { key, cache, buildMs, egress } = result.environment;
    // A hit ran no container.
    if (cache === 'hit') tracker.meters.containersRun -= 1;
    tracker.environments.push({ commitSha, ...(treeSha ? { treeSha } : {}), key, cache, buildMs, egress });
    return { environment: result.environment };
  }
  const { key, egress, why } = result.failure;
  tracker.environments.push({ commitSha, ...(treeSha ? { treeSha } : {}), key, cache: 'miss', buildMs: 0, egress, failed: why });
  return { failed: result.failure };
}

/**
 * The environment the landing's placement found for the head it rebased (a hit, looked up beside the
 * rebase): taken for the first gate round of that very head instead of a trip of its own. The
 * placement's step list already shows it.
 */
export function placedEnvironment(
  ctx: LandingStepContext,
  placed: { commitSha: string; environment: EnvironmentRef } | undefined,
  commitSha: string,
  treeSha: string,
): EnvironmentRef | undefined {
  if (!placed || placed.commitSha !== commitSha) return undefined;
  const { key, cache, buildMs, egress } = placed.environment;
  ctx.tracker.environments.push({ commitSha, treeSha, key, cache, buildMs, egress });
  return placed.environment;
}
