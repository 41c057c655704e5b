/**
 * Grounding gates: boot/build commands are refused until one of the grounding files
 * has been read in the session, and an edit is refused for a file not read first.
 * Pure; the lists come from recipes.
 */
export interface GroundingRules {
  /** Command prefixes that need grounding first (e.g. "make start-all", "npm run dev"). */
  groundedCommands: string[];
  /** Files of which at least one must have been read (e.g. "Makefile", "package.json"). */
  groundingFiles: string[];
}

export function commandGroundingRefusal(rules: GroundingRules, filesRead: readonly string[], command: string): string | undefined {
  const normalised = command.trim().replace(/\s+/g, ' ');
  const gated = rules.groundedCommands.some((prefix) => normalised === prefix || normalised.startsWith(`${prefix} `));
  if (!gated) return undefined;
  if (rules.groundingFiles.some((file) => filesRead.includes(file))) return undefined;
  return `grounding: read ${rules.groundingFiles.join(' or ')} before running "${normalised}"`;
}

export function editGroundingRefusal(filesRead: readonly string[], file: string, exists: boolean): string | undefined {
  if (!exists) return undefined; // creating a new file needs nothing to be read first
  if (filesRead.includes(file)) return undefined;
  return `grounding: read ${file} before editing it`;
}
