import type { ApplicationFailure } from '@temporalio/activity';
import { Value } from '@sinclair/typebox/value';
import { failure, FailureCode } from '../../core/failures';
import { fieldName } from '../../core/gate-file';
import { checkHarnessModel, splitHarnessModel } from '../../core/harness-models';
import { BudgetSchema, SessionLimitsSchema, type Budget, type Harness, type RecipeSnapshot, type SessionLimits } from '../../core/recipe-schemas';
import { runRecipes } from '../../core/node/recipes';
import type { ResolvedPanel } from '../../core/review-types';
import type { SessionAttemptReport } from '../../core/session-types';
import { runAttempt, type RunSessionInput, type SessionActivityDeps } from './attempt';

export type { RunSessionInput } from './attempt';
import { defaultModelUpstreams } from '../gateways/model-protocol';
import { availabilityFacts } from './agent-availability';
import { agentAvailability, panelReadiness, runnableLadder, type PanelReadiness } from '../../core/agent-availability';

interface ValidateDispatchInput {
  /** harness#model of the first attempt; empty → the ladder's first rung. */
  harnessModel: string;
  ladder?: string[];
  limits?: Partial<SessionLimits>;
  budget?: Partial<Budget>;
  /** The run's recipe snapshot (SessionRequest.recipes). */
  recipes?: RecipeSnapshot;
}

export interface DispatchPlan {
  recipeVersion: string;
  /** The first attempt's harness#model (the request's, or the ladder's first rung). */
  harnessModel: string;
  ladder: string[];
  limits: SessionLimits;
  budget: Budget;
  /** Only the harnesses this session may use (first model and ladder), without secrets. */
  harnesses: Record<string, Pick<Harness, 'image' | 'adapter' | 'secrets'>>;
  /**
   * Set when the request left the agent to the defaults and no rung of the recipe ladder can run
   * on this worker (the ladder is then empty): what each rung lacks, the missing image or key named.
   */
  unavailable?: string;
}

/** A conversation's UUID, the same on every retry of the attempt (attempt.ts). */
export { conversationUuid } from './attempt';

function invalidRequest(message: string): ApplicationFailure {
  return failure(FailureCode.invalidRequest, message);
}

export function createSessionActivities({
  dataDir,
  hostId,
  docker,
  recipesDir,
  secrets = process.env,
  modelUpstreams = defaultModelUpstreams,
  scriptScenariosDir,
}: SessionActivityDeps) {
  return {
    /**
     * Dispatch validation: every harness#model (the first and the whole ladder) is
     * checked against the registry, and the limits and budget against their schemas,
     * before any container starts. Unknown models fail with the nearest known names.
     */
    validateDispatch: async (input: ValidateDispatchInput): Promise<DispatchPlan> => {
      const recipes = runRecipes(input.recipes, recipesDir);
      const names = [
        ...(input.harnessModel ? [{ field: 'harnessModel', spec: input.harnessModel }] : []),
        ...(input.ladder ?? recipes.ladder).map((spec, index) => ({ field: `ladder[${index}]`, spec })),
      ];
      for (const { field, spec } of names) {
        const check = checkHarnessModel(spec, recipes.harnesses);
        if (!check.ok) {
          throw failure(FailureCode.unknownModel, `${field}: ${check.message}`, { field, nearest: check.nearest });
        }
      }
      const limits = { ...recipes.limits.session, ...(input.limits ?? {}) };
      const limitError = Value.Errors(SessionLimitsSchema, limits).First();
      if (limitError) throw invalidRequest(`limits.${fieldName(limitError.path)} ${limitError.message.toLowerCase()}`);
      const budget = { ...recipes.limits.budget, ...(input.budget ?? {}) };
      const budgetError = Value.Errors(BudgetSchema, budget).First();
      if (budgetError) throw invalidRequest(`budget.${fieldName(budgetError.path)} ${budgetError.message.toLowerCase()}`);
      // The default ladder is the recipe's, whole, when this worker can run some rung of it: a rung it
      // cannot run is passed over by the session with one agent-unavailable attempt (no container) that
      // names the rung it moved to. When it can run none the session ends at once, naming what each
      // lacks. A ladder the request names is taken as it is (the API refused what no worker can run).
      let ladder = input.ladder ?? recipes.ladder;
      let unavailable: string | undefined;
      if (!input.ladder) {
        const facts = await availabilityFacts({ docker, secrets, modelUpstreams }, recipes.harnesses);
        const runnable = runnableLadder(ladder, (spec) => agentAvailability(spec, recipes.harnesses, facts));
        if (runnable.ladder.length === 0) ({ ladder, reason: unavailable } = runnable);
      }
      const harnessModel = input.harnessModel || ladder[0] || '';
      const harnesses: DispatchPlan['harnesses'] = {};
      for (const spec of [harnessModel, ...ladder].filter(Boolean)) {
        const name = splitHarnessModel(spec)!.harness;
        const { image, adapter, secrets: secretNames } = recipes.harnesses[name]!;
        harnesses[name] = { image, adapter, secrets: secretNames };
      }
      return {
        recipeVersion: recipes.version,
        harnessModel,
        ladder,
        limits,
        budget,
        harnesses,
        ...(harnessModel ? {} : { unavailable: unavailable ?? 'no agent is configured' }),
      };
    },

    /**
     * Can the gate file's panel give a verdict on this worker (core/agent-availability.ts
     * panelReadiness)? Undefined for a panel the recipes do not name: the review phase refuses it.
     */
    panelReadiness: async (review: { panel: string; quorum?: number }, snapshot: RecipeSnapshot | undefined): Promise<PanelReadiness | undefined> => {
      const recipes = runRecipes(snapshot, recipesDir);
      const panel = recipes.panels[review.panel];
      if (!panel) return undefined;
      const facts = await availabilityFacts({ docker, secrets, modelUpstreams }, recipes.harnesses);
      return panelReadiness(review.panel, panel, (spec) => agentAvailability(spec, recipes.harnesses, facts), review.quorum);
    },

    /** A recipe panel by name, its reviewers checked against the registry. */
    resolvePanel: async ({ name, quorum, recipes: snapshot }: { name: string; quorum?: number; recipes?: RecipeSnapshot }): Promise<ResolvedPanel> => {
      const recipes = runRecipes(snapshot, recipesDir);
      const panel = recipes.panels[name];
      if (!panel) {
        throw failure(FailureCode.invalidRequest, `review.panel: unknown panel "${name}" (known: ${Object.keys(recipes.panels).join(', ')})`);
      }
      const effective = quorum ?? panel.quorum;
      if (effective > panel.reviewers.length)
        throw invalidRequest(`review.quorum: ${effective} is more than the ${panel.reviewers.length} reviewer(s) of panel "${name}"`);
      return { ...panel, quorum: effective, name };
    },

    /**
     * Runs one attempt of an agent session in its container, or reattaches to it,
     * and reports everything observable (attempt.ts: find or reattach → prepare the
     * copy → gateways → run → collect). It judges nothing; the workflow classifies.
     */
    runSession: async (input: RunSessionInput): Promise<SessionAttemptReport> =>
      await runAttempt({ dataDir, hostId, docker, secrets, modelUpstreams, recipesDir, scriptScenariosDir }, input),
  };
}
