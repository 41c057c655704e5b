import type { EgressEntry, EnvironmentFailure, EnvironmentRef } from '../core/environment-types';

/**
 * How environments read in a landing's record: the step's line, a failure's summary and message.
 * Pure (the workflows, the placement and the nightly share it).
 */

/** The step's line for a ready environment: `ENV_CACHE=miss 3f2a…; 1 path(s); egress: host:443 allowed` (a hit reached nothing: no egress). */
export function environmentDetail(environment: EnvironmentRef): string {
  return `ENV_CACHE=${environment.cache} ${environment.key.slice(7, 19)}; ${environment.products.length} path(s)${environment.cache === 'miss' ? egressText(environment.egress) : ''}`;
}

/** The one-line summary and the message of a failed environment, quoting the setup's own error. */
export function environmentFailureText(failure: EnvironmentFailure): { summary: string; message: string } {
  // The operator's list decides what a setup reaches: a refusal says where to allow the host.
  const refused = failure.refused.length ? `; egress refused: ${failure.refused.join(', ')} (not in the worker's TARMAC_EGRESS_ALLOW)` : '';
  const declared = failure.refusedDeclared?.length
    ? `; the declaration's egress hosts not allowed by the operator (TARMAC_EGRESS_ALLOW): ${failure.refusedDeclared.join(', ')}`
    : '';
  const tail = failure.logTail.split('\n').slice(-8).join('\n');
  return {
    summary: `environment ${failure.key.slice(7, 19)}: ${failure.why}${refused}${declared}; log: ${failure.logRef}`,
    message: `${failure.why}${refused}${declared}\n${tail}`,
  };
}

/** The hosts a setup reached (or was refused), for the step's line in the live stream. */
export function egressText(egress: EgressEntry[]): string {
  if (egress.length === 0) return '';
  const hosts = new Map<string, string>();
  for (const entry of egress) hosts.set(`${entry.host}:${entry.port}`, entry.allowed ? (entry.error ? `failed: ${entry.error}` : 'allowed') : 'refused');
  return `; egress: ${[...hosts].map(([host, how]) => `${host} ${how}`).join(', ')}`;
}
