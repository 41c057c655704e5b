import type { Client } from '@temporalio/client';
import type { Config } from '../../core/node/config';
import { landingId, retryLandingId } from '../../core/node/landing-id';
import { loadRecipes } from '../../core/node/recipes';
import type { Budget } from '../../core/recipe-schemas';
import { landingRecord } from '../../core/search-attributes';
import type { BranchHead, LandingAgents, LandingRequest } from '../../core/types';
import { assertAgentsRunnable } from '../agents';
import { normaliseRepo, resolveHeads } from '../repo';
import { startRun } from '../start-run';

/** What a landing is asked for: by POST /v1/landings, or again by POST /v1/landings/:id/retry. */
interface LandingStart {
  /** As the request names it; made canonical (and allow-listed) here. */
  repo: string;
  target: string;
  /** Branches to pin now (a new landing), or the heads an earlier run pinned and the run it retries. */
  source: { branches: string[] } | { heads: BranchHead[]; retryOf: string };
  agents?: LandingAgents;
  /** The run's budget from the recipes' budget in force now (a new landing's overrides, or the retried run's own). */
  budget: (recipeBudget: Budget) => Budget | undefined;
  priority?: number;
}

interface LandingStarted {
  id: string;
  duplicate: boolean;
  repo: string;
  target: string;
  targetSha: string;
  heads: BranchHead[];
  /** Set for a retry: the run it retries and which attempt at these heads this one is. */
  retry?: { retryOf: string; attempt: number };
}

/**
 * The one way a landing starts: its recipes resolved once (the run and its children keep this
 * snapshot to the end), the agents it names checked as runnable, the repository checked against
 * the allow-list, the target (and a new landing's branches) resolved, then the run started under
 * its business-key id, so the same request again finds the run it started.
 */
export async function startLanding(client: Client, config: Config, start: LandingStart): Promise<LandingStarted> {
  const recipes = loadRecipes(config.recipesDir);
  const { agents, target, priority } = start;
  if (agents) {
    await assertAgentsRunnable(
      [
        { field: 'agents.resolver', spec: agents.resolver },
        { field: 'agents.fixer', spec: agents.fixer },
        ...(agents.ladder ?? []).map((spec, index) => ({ field: `agents.ladder[${index}]`, spec })),
      ],
      recipes.harnesses,
      client,
    );
  }
  const repo = await normaliseRepo(start.repo, config.repoAllow);
  const resolved = await resolveHeads(repo, target, 'branches' in start.source ? start.source.branches : []);
  const heads = 'heads' in start.source ? start.source.heads : resolved.heads;
  const retry = 'retryOf' in start.source ? { retryOf: start.source.retryOf, ...retryLandingId(start.source.retryOf) } : undefined;
  const id = retry?.id ?? landingId(repo, target, heads);
  const budget = start.budget(recipes.limits.budget);
  const landing: LandingRequest = {
    repo,
    target,
    heads,
    requestedTargetSha: resolved.targetSha,
    ...(agents ? { agents } : {}),
    ...(budget ? { budget } : {}),
    recipes,
    ...(priority ? { priority } : {}),
  };
  const { duplicate } = await startRun(client, 'landing', {
    workflowId: id,
    taskQueue: config.taskQueue,
    args: [landing],
    ...landingRecord(landing, {
      recipeVersion: recipes.version,
      ...(retry ? { retryOf: retry.retryOf, attempt: retry.attempt } : {}),
      ...(agents ? { agents: { resolver: agents.resolver, fixer: agents.fixer } } : {}),
    }),
  });
  return { id, duplicate, repo, target, targetSha: resolved.targetSha, heads, ...(retry ? { retry: { retryOf: retry.retryOf, attempt: retry.attempt } } : {}) };
}
