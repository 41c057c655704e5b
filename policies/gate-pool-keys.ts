/**
 * Which repository environments the host's warm gate pool keeps a container for
 * (activities/containers/gate-pool.ts, `TARMAC_GATE_POOL_ENVIRONMENTS`): the keys landings used most recently,
 * at most `bound` of them. A container made for a key is only ever claimed by a suite of that key,
 * so a key that falls off the list loses its waiting container (`dropped`): it would serve no one.
 * Pure: the pool calls it each time a landing uses an environment.
 */
export function warmEnvironmentKeys({ keys, used, bound }: { keys: readonly string[]; used: string; bound: number }): { keys: string[]; dropped: string[] } {
  const ordered = [used, ...keys.filter((key) => key !== used)];
  const kept = Math.max(0, Math.floor(bound));
  return { keys: ordered.slice(0, kept), dropped: ordered.slice(kept) };
}
