import { scenarioNameProblem, splitScriptModel } from './script-scenario';

/**
 * Dispatch validation: is a `harness#model` known to the registry? Pure, so the
 * same check runs in the API, in recipes and in activities before any container.
 */
export interface HarnessModelRegistry {
  /** `adapter` "script": the model may name a scenario of the worker's (`script#fixer:<scenario>`, core/script-scenario.ts). */
  [harness: string]: { models: readonly string[]; adapter?: string };
}

/** `model` is the registry's model (a script model without its scenario); `scenario` the one named, if any. */
type HarnessModelCheck = { ok: true; harness: string; model: string; scenario?: string } | { ok: false; message: string; nearest: string[] };

/** Levenshtein distance, for "did you mean" suggestions. */
export function editDistance(a: string, b: string): number {
  const previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i += 1) {
    let diagonal = previous[0]!;
    previous[0] = i;
    for (let j = 1; j <= b.length; j += 1) {
      const above = previous[j]!;
      previous[j] = Math.min(above + 1, previous[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return previous[b.length]!;
}

/** The known names closest to `name` (at most three, nearest first). */
function nearestNames(name: string, known: readonly string[]): string[] {
  return [...known]
    .map((candidate) => ({ candidate, distance: editDistance(name.toLowerCase(), candidate.toLowerCase()) }))
    .sort((a, b) => a.distance - b.distance || a.candidate.localeCompare(b.candidate))
    .slice(0, 3)
    .map(({ candidate }) => candidate);
}

export function splitHarnessModel(spec: string): { harness: string; model: string } | undefined {
  const index = spec.indexOf('#');
  if (index <= 0 || index === spec.length - 1) return undefined;
  return { harness: spec.slice(0, index), model: spec.slice(index + 1) };
}

export function checkHarnessModel(spec: string, registry: HarnessModelRegistry): HarnessModelCheck {
  const parts = splitHarnessModel(spec);
  const all = Object.entries(registry).flatMap(([harness, { models }]) => models.map((model) => `${harness}#${model}`));
  if (!parts) {
    const nearest = nearestNames(spec, all);
    return { ok: false, nearest, message: `"${spec}" is not of the form harness#model (nearest known: ${nearest.join(', ')})` };
  }
  const harness = registry[parts.harness];
  if (!harness) {
    const nearest = nearestNames(parts.harness, Object.keys(registry));
    return { ok: false, nearest, message: `unknown harness "${parts.harness}" in "${spec}" (known harnesses nearest first: ${nearest.join(', ')})` };
  }
  const { behaviour: model, scenario } = harness.adapter === 'script' ? splitScriptModel(parts.model) : { behaviour: parts.model, scenario: undefined };
  if (!harness.models.includes(model)) {
    const nearest = nearestNames(model, harness.models).map((known) => `${parts.harness}#${known}`);
    return { ok: false, nearest, message: `unknown model "${model}" of harness "${parts.harness}" (nearest known: ${nearest.join(', ')})` };
  }
  if (scenario !== undefined) {
    const problem = scenarioNameProblem(scenario);
    if (problem) return { ok: false, nearest: [`${parts.harness}#${model}`], message: `${problem} in "${spec}"` };
    return { ok: true, harness: parts.harness, model, scenario };
  }
  return { ok: true, harness: parts.harness, model };
}

/** The name the registry and the workers' availability reports know a spec by: a script model without its scenario. */
export function registeredHarnessModel(spec: string, registry: HarnessModelRegistry): string {
  const check = checkHarnessModel(spec, registry);
  return check.ok ? `${check.harness}#${check.model}` : spec;
}
