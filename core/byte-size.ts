/**
 * Sizes as a person reads them, in binary units (what `du` and Docker mean by MiB and GiB): the CLI
 * and the dashboard show an environment's size with it. Pure: the dashboard bundles it.
 */
const units = ['KiB', 'MiB', 'GiB', 'TiB'] as const;

/** `512 B`, `1.5 KiB`, `340 MiB`, `2.1 GiB`: one decimal below 10, none from there; `?` for what is not a size. */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) return '?';
  if (bytes < 1024) return `${Math.round(bytes)} B`;
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  // 1023.96 KiB rounds to "1024 KiB"; say the next unit instead.
  if (Math.round(value) >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value < 9.95 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}
