import { devcontainerPath, fromGateFile, parseDevcontainer, type EnvironmentDeclaration } from './environment';
import { gateFilePath, type GateFileParse } from './gate-file';

/**
 * Where a target declares its environment (issue 24): the gate file's `environment`, else the
 * repository's `.devcontainer/devcontainer.json`, else none (the gate runs on its image as before).
 * Invalid: the file, the field and why — the landing ends `invalid-environment` before anything is built.
 */
export type EnvironmentParse = { ok: true; declaration?: EnvironmentDeclaration } | { ok: false; file: string; field: string; message: string };

/** The target's environment from its gate file (parsed) and its devcontainer file's text (absent: none). Pure. */
export function environmentOf(gate: GateFileParse, devcontainerText: string | undefined): EnvironmentParse {
  if (!gate.ok) return gate.field.startsWith('environment') ? { ok: false, file: gateFilePath, field: gate.field, message: gate.message } : { ok: true };
  const declared = fromGateFile(gate.gate);
  if (declared) return { ok: true, declaration: declared };
  if (devcontainerText === undefined) return { ok: true };
  const parsed = parseDevcontainer(devcontainerText);
  return parsed.ok ? { ok: true, declaration: parsed.declaration } : { ok: false, file: devcontainerPath, field: parsed.field, message: parsed.message };
}
