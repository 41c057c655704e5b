/**
 * Near misses: the one defined name a missing name was meant to be. Playbooks use this to tell a
 * typo (`start-all` for `start_all`, `biuld` for `build`, `./lib/formater` for `./lib/formatter`)
 * from a name that is simply absent. Pure.
 */

/** Case and `-`/`_` do not count: `Start_All` and `start-all` are the same name spelled twice. */
const normalisedName = (name: string): string => name.toLowerCase().replace(/_/g, '-');

/**
 * Edit distance with adjacent transpositions (optimal string alignment): insertions, deletions,
 * substitutions and swaps of two neighbours each cost one, so `biuld` is one from `build`.
 */
export function typoDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i += 1) {
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}

/**
 * How many typos a name of this length may carry and still be a near miss: none for names of up to
 * three characters (`up` is not a typo of `ps`), one up to five, two beyond.
 */
function typosAllowed(name: string): number {
  return name.length <= 3 ? 0 : name.length <= 5 ? 1 : 2;
}

/**
 * How far `name` is from `candidate` as a near miss: 0 when only case or `-`/`_` differ, the typo
 * distance when it is within what the name's length allows, undefined otherwise (and for the same
 * name: a name that is defined is no miss).
 */
function nearness(name: string, candidate: string): number | undefined {
  if (name === candidate) return undefined;
  const a = normalisedName(name);
  const b = normalisedName(candidate);
  if (a === b) return 0;
  const distance = typoDistance(a, b);
  return distance <= Math.min(typosAllowed(a), typosAllowed(b)) ? distance : undefined;
}

/**
 * The one candidate `name` is a near miss of, or undefined: when none is near, and when two are
 * equally near (a guess between two names is not a repair).
 */
export function nearMiss(name: string, candidates: readonly string[]): { candidate: string; distance: number } | undefined {
  const scored = [...new Set(candidates)].flatMap((candidate) => {
    const distance = nearness(name, candidate);
    return distance === undefined ? [] : [{ candidate, distance }];
  });
  const best = Math.min(...scored.map(({ distance }) => distance));
  const nearest = scored.filter(({ distance }) => distance === best);
  return nearest.length === 1 ? nearest[0] : undefined;
}

/**
 * A near miss between two paths: the same number of segments, the differing segments each a near
 * miss of the other, two typos at most in all. Returns the summed distance, or undefined.
 */
export function pathNearness(path: string, candidate: string): number | undefined {
  const a = path.split('/');
  const b = candidate.split('/');
  if (a.length !== b.length || path === candidate) return undefined;
  let total = 0;
  for (let index = 0; index < a.length; index += 1) {
    if (a[index] === b[index]) continue;
    const distance = nearness(a[index]!, b[index]!);
    if (distance === undefined) return undefined;
    total += distance;
  }
  return total <= 2 ? total : undefined;
}
