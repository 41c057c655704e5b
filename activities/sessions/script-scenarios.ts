import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseScriptScenario, scenarioNameProblem, splitScriptModel, type ScriptScenario } from '../../core/script-scenario';

type ScenarioLoad = { ok: true; scenario: ScriptScenario } | { ok: false; reason: string };

/**
 * The scenario a script model names (`fixer:<name>`), read from the worker's scenarios directory
 * (config `scriptScenariosDir`, `TARMAC_SCRIPT_SCENARIOS`). A model without one has the empty
 * scenario. The name is checked again here, so only `<dir>/<name>.json` is ever read: a name is
 * never a path. Every problem names the file (or the missing setting) for the session's outcome.
 */
export async function loadScriptScenario(dir: string | undefined, model: string): Promise<ScenarioLoad> {
  const { scenario: name } = splitScriptModel(model);
  if (name === undefined) return { ok: true, scenario: {} };
  const problem = scenarioNameProblem(name);
  if (problem) return { ok: false, reason: problem };
  if (!dir)
    return {
      ok: false,
      reason: `scenario "${name}" needs a scenarios directory, and this worker has none (TARMAC_SCRIPT_SCENARIOS is not set; it is a development and test setting)`,
    };
  const file = join(dir, `${name}.json`);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { ok: false, reason: code === 'ENOENT' ? `scenario file ${file} is missing` : `scenario file ${file} cannot be read: ${(error as Error).message}` };
  }
  const parsed = parseScriptScenario(text);
  return parsed.ok ? parsed : { ok: false, reason: `scenario file ${file}: ${parsed.problem}` };
}
