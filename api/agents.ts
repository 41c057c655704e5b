import type { Client } from '@temporalio/client';
import {
  agentsReportEveryMs,
  defaultsNotice,
  namedAgentAvailability,
  panelReadiness,
  type AgentAvailability,
  type HostAgents,
  type Missing,
} from '../core/agent-availability';
import { FailureCode } from '../core/failures';
import { registeredHarnessModel, type HarnessModelRegistry } from '../core/harness-models';
import type { Panel, RecipeSnapshot } from '../core/recipe-schemas';
import { agentRegistryId, agentsQuery } from '../workflows/agent-registry';
import { ApiError, assertKnownHarnessModels } from './errors';

/** A report older than this is not evidence of anything (its worker may be gone or changed). */
const freshMs = 3 * agentsReportEveryMs;

/** What the workers last reported; none when the registry does not exist yet (no worker has started). */
export async function workerReports(client: Client): Promise<HostAgents[]> {
  try {
    return await client.workflow.getHandle(agentRegistryId).query(agentsQuery);
  } catch {
    return [];
  }
}

/**
 * Dispatch validation at the door for the agents a request names: each must be in the
 * registry (400 TARMAC_UNKNOWN_MODEL) and runnable by some worker, as the workers last
 * reported (400 TARMAC_AGENT_UNAVAILABLE naming the field and the missing image or key).
 * Nothing is started on either. When no worker has reported recently nothing is known, and
 * the request goes on: its agent step will say what is missing if it reaches one.
 */
export async function assertAgentsRunnable(
  specs: { field: string; spec: string | undefined }[],
  registry: HarnessModelRegistry,
  client: Client,
): Promise<void> {
  assertKnownHarnessModels(specs, registry);
  const named = specs.filter((entry): entry is { field: string; spec: string } => entry.spec !== undefined);
  if (named.length === 0) return;
  const reports = await workerReports(client);
  const now = Date.now();
  for (const { field, spec } of named) {
    // Workers report the registry's models; a script model's scenario is looked for by the worker that runs it.
    const answer = namedAgentAvailability(registeredHarnessModel(spec, registry), reports, now, freshMs);
    if (!answer.ok) throw new ApiError(FailureCode.agentUnavailable, `${field} ${answer.reason}`, { field, missing: answer.missing });
  }
}

/**
 * A panel a request names (POST /v1/reviews) must be able to give a verdict on some worker, as the
 * workers last reported: every reviewer counts, unless the panel says `"unavailable": "skip"` (then
 * the quorum must still be reachable). Refused with 400 TARMAC_AGENT_UNAVAILABLE naming the panel, the
 * reviewer and the missing key or image; nothing is started. Nothing known (no fresh report): it goes on.
 */
export async function assertPanelRunnable(
  name: string,
  panel: Pick<Panel, 'reviewers' | 'quorum' | 'unavailable'>,
  quorum: number | undefined,
  registry: HarnessModelRegistry,
  client: Client,
): Promise<void> {
  const reports = await workerReports(client);
  const now = Date.now();
  const readiness = panelReadiness(name, panel, (spec) => namedAgentAvailability(registeredHarnessModel(spec, registry), reports, now, freshMs), quorum);
  if (!readiness.ok)
    throw new ApiError(FailureCode.agentUnavailable, readiness.reason, { field: 'panel', unavailable: readiness.unavailable, missing: readiness.missing });
}

/** One harness#model as GET /v1/agents shows it for a worker. */
interface AgentRow {
  harnessModel: string;
  runnable: boolean;
  reason?: string;
  missing?: Missing[];
  usedBy: string[];
}

/** Where the recipes name each harness#model (by the name workers report it under). */
function usesOf(recipes: Pick<RecipeSnapshot, 'harnesses' | 'ladder' | 'panels'>): Map<string, string[]> {
  const uses = new Map<string, string[]>();
  const add = (spec: string, use: string) => {
    const name = registeredHarnessModel(spec, recipes.harnesses);
    uses.set(name, [...(uses.get(name) ?? []), use]);
  };
  for (const [harness, { models }] of Object.entries(recipes.harnesses)) for (const model of models) add(`${harness}#${model}`, `harnesses.${harness}`);
  recipes.ladder.forEach((spec, index) => add(spec, `ladder[${index}]`));
  for (const [panel, { reviewers }] of Object.entries(recipes.panels)) for (const spec of reviewers) add(spec, `panels.${panel}`);
  return uses;
}

/**
 * GET /v1/agents: per worker that reported, each harness#model of the recipes in force (harness
 * model lists, ladder, panels) with whether that worker can run it and, if not, what is missing;
 * and the one line that says when the shipped defaults (the `default` panel, the ladder) cannot run there.
 */
export function agentsView(recipes: Pick<RecipeSnapshot, 'harnesses' | 'ladder' | 'panels'>, reports: readonly HostAgents[], now: number) {
  const uses = usesOf(recipes);
  return {
    freshForMs: freshMs,
    workers: reports.map((report) => {
      const availability = (spec: string): AgentAvailability =>
        report.agents[registeredHarnessModel(spec, recipes.harnesses)] ?? {
          ok: false,
          missing: [],
          reason: `${spec} is not in this worker's report (its recipes differ from the API's)`,
        };
      const agents: AgentRow[] = [...uses.entries()].map(([harnessModel, usedBy]) => {
        const answer = availability(harnessModel);
        return { harnessModel, runnable: answer.ok, ...(answer.ok ? {} : { reason: answer.reason, missing: answer.missing }), usedBy };
      });
      const notice = defaultsNotice(recipes, availability);
      return { hostId: report.hostId, at: report.at, fresh: now - Date.parse(report.at) <= freshMs, agents, ...(notice ? { notice } : {}) };
    }),
  };
}
