/**
 * The model ladder: harness#model entries, weakest first. Escalation moves exactly
 * one index, in array order; nothing else (tiers, names) decides the order.
 */
export function ladderIndex(ladder: readonly string[], harnessModel: string): number {
  return ladder.indexOf(harnessModel);
}

/** The next rung above `harnessModel`, or undefined at the top or off the ladder. */
export function nextRung(ladder: readonly string[], harnessModel: string): { harnessModel: string; index: number } | undefined {
  const index = ladderIndex(ladder, harnessModel);
  if (index < 0 || index + 1 >= ladder.length) return undefined;
  return { harnessModel: ladder[index + 1]!, index: index + 1 };
}
