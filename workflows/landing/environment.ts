import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import type { EnvironmentDeclaration } from '../../core/environment';
import type { EgressEntry, EnvironmentFailure, EnvironmentRef } from '../../core/environment-types';
import { defaultRunnerImage, type GateFile } from '../../core/gate-file';
import { hostQueue } from '../../core/queues';
import { environmentBuild } from '../activity-options';
import type { LandingStepContext } from './steps';

export type ReadyEnvironment = { environment?: EnvironmentRef } | { failed: EnvironmentFailure };

/**
 * The repository's environment for one tree (issue 24): reused when the host has its key
 * (ENV_CACHE=hit), else built by a setup with audited egress (ENV_CACHE=miss). No declaration: no
 * environment, and the gate runs on its image as before. Recorded in the landing's outcome with
 * every host the setup reached; a failed build is data, for the phase to decide on.
 */
export async function readyEnvironment(ctx: LandingStepContext, pinned: string, declaration: EnvironmentDeclaration | undefined, gate: GateFile, commitSha: string, treeSha: string | undefined, baseSha: string): Promise<ReadyEnvironment> {
  if (!declaration) return {};
  const { runId, request, tracker } = ctx;
  const builder = proxyActivities<Activities>({ ...environmentBuild(declaration.timeoutMs), taskQueue: hostQueue(pinned), ...(ctx.hostLostAfterMs ? { scheduleToStartTimeout: ctx.hostLostAfterMs } : {}) });
  const result = await tracker.step(
    `environment.prepare:${(treeSha ?? commitSha).slice(0, 12)}`,
    'container',
    () => builder['environment.prepare']({ runId, repo: request.repo, commitSha, baseSha, declaration, fallbackImage: gate.image ?? defaultRunnerImage }),
    (value) => (value.ok ? `ENV_CACHE=${value.environment.cache} ${value.environment.key.slice(7, 19)}; ${value.environment.products.length} path(s)${egressText(value.environment.egress)}` : `failed: ${value.failure.why}${egressText(value.failure.egress)}`),
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

/** The one-line summary and the message of a failed environment, quoting the setup's own error. */
export function environmentFailureText(failure: EnvironmentFailure): { summary: string; message: string } {
  const refused = failure.refused.length ? `; egress refused: ${failure.refused.join(', ')}` : '';
  const declared = failure.refusedDeclared?.length ? `; the declaration's egress hosts not allowed by the operator (TARMAC_EGRESS_ALLOW): ${failure.refusedDeclared.join(', ')}` : '';
  const tail = failure.logTail.split('\n').slice(-8).join('\n');
  return {
    summary: `environment ${failure.key.slice(7, 19)}: ${failure.why}${refused}${declared}; log: ${failure.logRef}`,
    message: `${failure.why}${refused}${declared}\n${tail}`,
  };
}

/** The hosts a setup reached (or was refused), for the step's line in the live stream. */
function egressText(egress: EgressEntry[]): string {
  if (egress.length === 0) return '';
  const hosts = new Map<string, string>();
  for (const entry of egress) hosts.set(`${entry.host}:${entry.port}`, entry.allowed ? (entry.error ? `failed: ${entry.error}` : 'allowed') : 'refused');
  return `; egress: ${[...hosts].map(([host, how]) => `${host} ${how}`).join(', ')}`;
}
