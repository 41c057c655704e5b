/**
 * How many fixup rounds a landing allows. Pure.
 *
 * The gate file's `fixup.maxRounds` is the repository's choice (0–5, checked by its schema) and wins
 * when it says; a gate file that does not say gets the operator's default, the recipe's
 * `limits.landing.maxFixupRounds`, from the run's recipe snapshot. The recipe is a default, not a
 * cap: what an operator bounds is spend, and the landing's budget (tokens, cost, sessions, wall
 * time) already stops every round that would exceed it.
 */

/** The default of a landing started before runs carried their recipes (what every landing used then). */
const legacyFixupRounds = 1;

export function fixupRoundsAllowed(gateFileRounds: number | undefined, recipeRounds: number | undefined): number {
  return gateFileRounds ?? recipeRounds ?? legacyFixupRounds;
}
