/**
 * Which harness#model a worker can run, from what it has: the harness's image, and for a CLI
 * harness a way to its provider's model (the worker's key for it, or an upstream of the
 * operator's own that may need none). Pure: the facts are gathered by the worker
 * (activities/sessions/agent-availability.ts); the API, the dispatch and the session decide from them.
 */
import type { Harness, Panel } from './recipe-schemas';
import { modelProviderOf } from './harnesses';
import type { ModelProvider } from './model-pricing';

/** The worker's variable holding each provider's key. */
export const providerKeys: Record<ModelProvider, string> = { anthropic: 'ANTHROPIC_API_KEY', openai: 'OPENAI_API_KEY' };

export interface AvailabilityFacts {
  /** Images present on the worker's Docker engine. */
  images: ReadonlySet<string>;
  /** Providers the worker's model gateway can reach: its key is set, or its upstream is the operator's own. */
  providers: ReadonlySet<ModelProvider>;
}

export type Missing = { kind: 'image'; name: string } | { kind: 'key'; name: string };

export type AgentAvailability = { ok: true } | { ok: false; missing: Missing[]; reason: string };

const describeMissing = (missing: Missing): string => (missing.kind === 'image' ? `image ${missing.name} is not built` : `key ${missing.name} is not set`);

/** Can this harness#model run here? A spec not in the registry is not this module's question (dispatch refuses it). */
export function agentAvailability(
  harnessModel: string,
  harnesses: Record<string, Pick<Harness, 'image' | 'adapter'>>,
  facts: AvailabilityFacts,
): AgentAvailability {
  const index = harnessModel.indexOf('#');
  const harness = harnesses[harnessModel.slice(0, index)];
  if (index <= 0 || !harness) return { ok: false, missing: [], reason: `${harnessModel} is not a known harness#model` };
  const missing: Missing[] = [];
  if (!facts.images.has(harness.image)) missing.push({ kind: 'image', name: harness.image });
  const provider = modelProviderOf(harness.adapter, harnessModel.slice(index + 1));
  if (provider && !facts.providers.has(provider)) missing.push({ kind: 'key', name: providerKeys[provider] });
  if (missing.length === 0) return { ok: true };
  return { ok: false, missing, reason: `${harnessModel} cannot run: ${missing.map(describeMissing).join(' and ')}` };
}

/** Every harness#model of the registry, with whether it can run here. */
export function availabilityReport(
  harnesses: Record<string, Pick<Harness, 'image' | 'adapter' | 'models'>>,
  facts: AvailabilityFacts,
): Record<string, AgentAvailability> {
  const report: Record<string, AgentAvailability> = {};
  for (const [name, harness] of Object.entries(harnesses)) {
    for (const model of harness.models) report[`${name}#${model}`] = agentAvailability(`${name}#${model}`, harnesses, facts);
  }
  return report;
}

/** How often a worker tells the registry which agents it can run (images come and go, keys change with a restart). */
export const agentsReportEveryMs = 60_000;

/** A worker's report, as the API keeps it. */
export interface HostAgents {
  hostId: string;
  /** When the worker looked (ISO). */
  at: string;
  agents: Record<string, AgentAvailability>;
}

/**
 * May a request name this harness#model? Yes when some host reported it runnable, or when no
 * host reported recently (nothing is known: the session will find out and say so). No, with the
 * reasons of every host, when every recent report says it cannot run.
 */
export function namedAgentAvailability(harnessModel: string, reports: readonly HostAgents[], now: number, freshMs: number): AgentAvailability {
  const fresh = reports.filter((report) => now - Date.parse(report.at) <= freshMs);
  if (fresh.length === 0) return { ok: true };
  const answers = fresh.map((report) => ({ hostId: report.hostId, answer: report.agents[harnessModel] }));
  if (answers.some(({ answer }) => answer?.ok)) return { ok: true };
  const missing = answers.flatMap(({ answer }) => (answer && !answer.ok ? answer.missing : []));
  const unique = missing.filter((entry, index) => missing.findIndex((other) => other.kind === entry.kind && other.name === entry.name) === index);
  const hosts = answers.map(({ hostId }) => hostId).join(', ');
  const reason =
    unique.length > 0
      ? `${harnessModel} cannot run on any worker (${hosts}): ${unique.map(describeMissing).join(' and ')}`
      : `${harnessModel} is not offered by any worker (${hosts})`;
  return { ok: false, missing: unique, reason };
}

/**
 * The default ladder of this install: the recipe's rungs that can run here, in order. When none
 * can, the reason names what each rung lacks (what to set or build).
 */
export function runnableLadder(ladder: readonly string[], availability: (spec: string) => AgentAvailability): { ladder: string[]; reason?: string } {
  const runnable = ladder.filter((spec) => availability(spec).ok);
  if (runnable.length > 0) return { ladder: runnable };
  const reasons = ladder.map((spec) => availability(spec)).flatMap((answer) => (answer.ok ? [] : [answer.reason]));
  return { ladder: [], reason: `no agent of the ladder can run on this worker: ${reasons.join('; ')}` };
}

/** What a harness#model lacks, as an operator sets it: the key's name, or the image to build. */
function needs(spec: string, answer: Extract<AgentAvailability, { ok: false }>): string {
  if (answer.missing.length === 0) return answer.reason;
  return `${spec} needs ${answer.missing.map((missing) => (missing.kind === 'key' ? missing.name : `image ${missing.name}`)).join(' and ')}`;
}

function uniqueMissing(missing: readonly Missing[]): Missing[] {
  return missing.filter((entry, index) => missing.findIndex((other) => other.kind === entry.kind && other.name === entry.name) === index);
}

/** Whether a review panel can run here: it runs (with the reviewers it skips), or it cannot, and why in one line. */
export type PanelReadiness =
  { ok: true; skipped: { harnessModel: string; reason: string }[] } | { ok: false; missing: Missing[]; reason: string; unavailable: string[] };

/**
 * Can this panel give a verdict here, before anything starts? Every reviewer counts (the panel's
 * `unavailable` rule, default `incomplete`): one that cannot run makes it unable to, naming what to
 * set. Under `"unavailable": "skip"` those are left out, unless the quorum (the gate file's, else
 * the panel's) is more than the reviewers left.
 */
export function panelReadiness(
  name: string,
  panel: Pick<Panel, 'reviewers' | 'quorum' | 'unavailable'>,
  availability: (spec: string) => AgentAvailability,
  quorum: number = panel.quorum,
): PanelReadiness {
  const cannot = panel.reviewers.flatMap((spec) => {
    const answer = availability(spec);
    return answer.ok ? [] : [{ spec, answer }];
  });
  if (cannot.length === 0) return { ok: true, skipped: [] };
  const what = cannot.map(({ spec, answer }) => needs(spec, answer)).join(', ');
  const missing = uniqueMissing(cannot.flatMap(({ answer }) => answer.missing));
  const unavailable = cannot.map(({ spec }) => spec);
  if (panel.unavailable !== 'skip')
    return {
      ok: false,
      missing,
      unavailable,
      reason: `the ${name} panel cannot run here: ${what}; set what is missing, or mark the panel "unavailable": "skip" in recipes/panels.json`,
    };
  const left = panel.reviewers.length - cannot.length;
  if (quorum > left)
    return {
      ok: false,
      missing,
      unavailable,
      reason: `the ${name} panel cannot run here: its quorum is ${quorum} but only ${left} of its ${panel.reviewers.length} reviewers can run (${what})`,
    };
  return { ok: true, skipped: cannot.map(({ spec, answer }) => ({ harnessModel: spec, reason: answer.reason })) };
}

/**
 * The one line `tarmac dev` prints when the shipped defaults cannot run on this machine: the
 * `default` panel (as panelReadiness says) and the default ladder (no rung can run). Undefined
 * when both can.
 */
export function defaultsNotice(
  recipes: { ladder: readonly string[]; panels: Record<string, Pick<Panel, 'reviewers' | 'quorum' | 'unavailable'>> },
  availability: (spec: string) => AgentAvailability,
): string | undefined {
  const problems: string[] = [];
  const panel = recipes.panels.default;
  const readiness = panel ? panelReadiness('default', panel, availability) : undefined;
  if (readiness && !readiness.ok) problems.push(readiness.reason);
  if (runnableLadder(recipes.ladder, availability).ladder.length === 0) {
    const what = recipes.ladder.flatMap((spec) => {
      const answer = availability(spec);
      return answer.ok ? [] : [needs(spec, answer)];
    });
    problems.push(`the default ladder cannot run here: ${what.join(', ')}; set a provider's key`);
  }
  return problems.length > 0 ? problems.join('. And ') : undefined;
}
