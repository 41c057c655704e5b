const unitMs = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;

export const durationPattern = '^[0-9]+(ms|s|m|h)$';

/** Parses `"10m"`, `"30s"`, `"1h"`, `"500ms"` into milliseconds; undefined when malformed. */
export function parseDuration(text: string): number | undefined {
  const match = /^([0-9]+)(ms|s|m|h)$/.exec(text);
  if (!match) return undefined;
  const [, amount, unit] = match as unknown as [string, string, keyof typeof unitMs];
  return Number(amount) * unitMs[unit];
}
