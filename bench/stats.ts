/** The upper median (index ⌊n/2⌋ of the sorted values), as the ratio has always reported it. */
export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

/** The median proper: the middle value, or the mean of the two middle ones (of 2 runs, their mean rather than the larger). */
export function middleOf(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const half = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return 0;
  return sorted.length % 2 === 1 ? sorted[half]! : (sorted[half - 1]! + sorted[half]!) / 2;
}

/** Nearest-rank percentile (p in 0–100): the smallest value with at least p % of the values at or below it. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

/** Bytes as MiB with one decimal. */
export const mib = (bytes: number) => Number((bytes / 1024 / 1024).toFixed(1));
