/**
 * Scenarios of the `script` harness: what a scripted agent does beyond its behaviour — the files it
 * edits, how long it waits, the usage it reports, the command it re-runs, the attempts it crashes. A scenario is the worker's
 * data, a JSON file `<name>.json` in the directory `TARMAC_SCRIPT_SCENARIOS` names (a setting for
 * development and tests), and the model names it: `script#fixer:write-fixed` is the `fixer`
 * behaviour in scenario `write-fixed`. Requests carry no script switches of their own, so production
 * request types and the API schema stay free of test-only fields. Pure: the worker reads the file
 * (activities/sessions/script-scenarios.ts); this module names, parses and checks.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Value, ValueErrorType } from '@sinclair/typebox/value';
import { fieldName } from './gate-file';

/** A scenario's name: a file name of the scenarios directory without `.json`, never a path. */
const scenarioNamePattern = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** Separates a script model's behaviour from its scenario: `fixer:write-fixed`. */
const scenarioSeparator = ':';

/** A script model split into the behaviour (what `images/agent-script` runs) and the scenario it names, if any. */
export function splitScriptModel(model: string): { behaviour: string; scenario?: string } {
  const index = model.indexOf(scenarioSeparator);
  return index < 0 ? { behaviour: model } : { behaviour: model.slice(0, index), scenario: model.slice(index + 1) };
}

/** Why a scenario name is refused, or undefined when it is a good one. */
export function scenarioNameProblem(name: string): string | undefined {
  return scenarioNamePattern.test(name)
    ? undefined
    : `scenario "${name}" must be lowercase letters, digits and "-" (at most 63, starting with a letter or digit)`;
}

const EditSchema = Type.Object(
  { file: Type.String({ minLength: 1 }), find: Type.Optional(Type.String()), replace: Type.String() },
  { additionalProperties: false },
);

/**
 * A scenario file. Its fields are exactly the fields of `/tarmac/task.json` the scripted agents read
 * (images/agent-script/agents/main.js), so the worker merges it into the task as it is.
 */
export const ScriptScenarioSchema = Type.Object(
  {
    edits: Type.Optional(
      Type.Array(EditSchema, {
        maxItems: 50,
        description: 'literal edits (find → replace, or the whole file) the fixers commit; a resolver takes the file for a conflicted path',
      }),
    ),
    slowMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 3_600_000, description: 'how long `slow` and `slow-fixer` wait before they deliver' })),
    reportUsage: Type.Optional(
      Type.Object(
        { inputTokens: Type.Integer({ minimum: 0 }), outputTokens: Type.Integer({ minimum: 0 }), costUsd: Type.Number({ minimum: 0 }) },
        { additionalProperties: false, description: 'the usage the agent reports in its result (budget tests)' },
      ),
    ),
    command: Type.Optional(Type.String({ minLength: 1, maxLength: 2000, description: 'the command `gateway-repeater` runs through the tool gateway' })),
    ask: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 4000 }), {
        minItems: 1,
        maxItems: 20,
        description:
          "questions the agent asks before it works; it works once its prompt carries the answers, and an edit's `{{answer}}` becomes the first answer",
      }),
    ),
    pauseMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 3_600_000, description: "`gateway-repeater`'s pause before its last try" })),
    crashAttempts: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 100,
        description: 'any behaviour crashes after its first turn (exit 1, no result) on its first N attempts of a session, then does its work',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ScriptScenario = Static<typeof ScriptScenarioSchema>;

/** Parses and checks a scenario file's text; the problem names the field. */
export function parseScriptScenario(text: string): { ok: true; scenario: ScriptScenario } | { ok: false; problem: string } {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    return { ok: false, problem: `is not valid JSON: ${(error as Error).message}` };
  }
  const first = Value.Errors(ScriptScenarioSchema, data).First();
  if (!first) return { ok: true, scenario: data as ScriptScenario };
  const field = fieldName(first.path);
  if (first.type === ValueErrorType.ObjectAdditionalProperties) {
    const valid = Object.keys((first.schema as { properties?: object }).properties ?? {});
    return { ok: false, problem: `${field} is not a known field (valid fields: ${valid.join(', ')})` };
  }
  if (first.type === ValueErrorType.ObjectRequiredProperty) return { ok: false, problem: `${field} is required` };
  return { ok: false, problem: `${field} ${first.message.toLowerCase()}` };
}
