import { Type, type Static } from '@sinclair/typebox';
import { durationPattern } from './duration';
import type { PricingTable } from './model-pricing';

/** Harness adapters Tarmac knows how to drive; each has a command builder and an output parser. */
export const adapterNames = ['script', 'claude-code', 'opencode', 'codex', 'aider'] as const;
export type AdapterName = (typeof adapterNames)[number];

const HarnessSchema = Type.Object(
  {
    description: Type.Optional(Type.String()),
    image: Type.String({ minLength: 1 }),
    adapter: Type.Union(adapterNames.map((name) => Type.Literal(name))),
    models: Type.Array(Type.String({ minLength: 1, pattern: '^[A-Za-z0-9._/:-]+$' }), { minItems: 1 }),
    secrets: Type.Array(Type.String({ pattern: '^[A-Z_][A-Z0-9_]*$', description: 'environment variable names' })),
  },
  { additionalProperties: false },
);

export const HarnessesRecipeSchema = Type.Object(
  { version: Type.Literal(1), harnesses: Type.Record(Type.String({ pattern: '^[a-z][a-z0-9-]*$' }), HarnessSchema) },
  { additionalProperties: false },
);

export const LadderRecipeSchema = Type.Object(
  {
    version: Type.Literal(1),
    description: Type.Optional(Type.String()),
    ladder: Type.Array(Type.String({ pattern: '^[a-z][a-z0-9-]*#.+$', description: 'harness#model' }), { minItems: 1 }),
  },
  { additionalProperties: false },
);

export const SessionLimitsSchema = Type.Object(
  {
    timeout: Type.String({ pattern: durationPattern, description: 'e.g. "30m"' }),
    memoryMb: Type.Integer({ minimum: 16, maximum: 65536 }),
    cpus: Type.Number({ exclusiveMinimum: 0, maximum: 64 }),
    pids: Type.Integer({ minimum: 16, maximum: 65536 }),
    // Only `none`: the host network reaches the Temporal frontend and the API on loopback
    // (an agent could answer its own approval question). A session that needs to reach
    // anything gets a unix socket served by the worker, never a route.
    network: Type.Literal('none', { description: 'always "none": sessions never get a network' }),
    maxRespawns: Type.Integer({ minimum: 0, maximum: 10, description: 'respawns of one harness#model before escalating' }),
    maxAttempts: Type.Integer({ minimum: 1, maximum: 50, description: 'containers per session in all' }),
    hostLostAfter: Type.Optional(
      Type.String({ pattern: durationPattern, description: 'an attempt no worker of its host picks up for this long is lost-host (default "5m")' }),
    ),
  },
  { additionalProperties: false },
);

export const BudgetSchema = Type.Object(
  {
    tokens: Type.Integer({ minimum: 0 }),
    costUsd: Type.Number({ minimum: 0 }),
    wall: Type.String({ pattern: durationPattern }),
    sessions: Type.Integer({ minimum: 1 }),
    onExhausted: Type.Union([Type.Literal('pause'), Type.Literal('stop')]),
  },
  { additionalProperties: false },
);

/** What follows a red gate suite settled by evidence (policies/flake.ts); each field has a default there. */
const flakyActions = ['retry', 'quarantine', 'fail'] as const;
const preExistingActions = ['allow', 'quarantine', 'fail'] as const;
export const GateLimitsSchema = Type.Object(
  {
    flaky: Type.Optional(
      Type.Union(
        flakyActions.map((action) => Type.Literal(action)),
        {
          description:
            'red, then green on the identical tree: "retry" counts the green re-run for this landing (default), "quarantine" also quarantines the suite on the target, "fail" blocks as any red',
        },
      ),
    ),
    preExisting: Type.Optional(
      Type.Union(
        preExistingActions.map((action) => Type.Literal(action)),
        {
          description:
            'red on the identical tree and on the base too: "allow" lets this landing go on (the next landing checks the base again), "quarantine" quarantines the suite on the target, "fail" blocks as any red (default)',
        },
      ),
    ),
    quarantineFor: Type.Optional(Type.String({ pattern: durationPattern, description: 'how long a quarantine lasts, at least 1s (default "168h")' })),
  },
  { additionalProperties: false },
);

export const LimitsRecipeSchema = Type.Object(
  {
    version: Type.Literal(1),
    session: SessionLimitsSchema,
    budget: BudgetSchema,
    landing: Type.Object(
      {
        maxFixupRounds: Type.Integer({ minimum: 0, maximum: 5 }),
        historyEvents: Type.Optional(
          Type.Integer({
            minimum: 20,
            maximum: 40_000,
            description:
              "a landing whose Temporal history has this many events continues as new at its next phase boundary (default 10000, Temporal's warning level; its hard limit is 50000)",
          }),
        ),
      },
      { additionalProperties: false },
    ),
    questions: Type.Optional(
      Type.Object(
        {
          wait: Type.Optional(
            Type.String({
              pattern: durationPattern,
              description: 'how long a run waits for the answer to a question before it ends needs-decision (none: as long as it takes)',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    gate: Type.Optional(GateLimitsSchema),
  },
  { additionalProperties: false },
);

const severities = ['blocking', 'major', 'minor', 'info'] as const;

/** What a panel does with a reviewer that cannot run here (policies/quorum.ts); default `incomplete`. */
export const panelUnavailableRules = ['incomplete', 'skip'] as const;
export type PanelUnavailableRule = (typeof panelUnavailableRules)[number];

const PanelSchema = Type.Object(
  {
    description: Type.Optional(Type.String()),
    reviewers: Type.Array(Type.String({ pattern: '^[a-z][a-z0-9-]*#.+$', description: 'harness#model' }), { minItems: 1, maxItems: 12 }),
    quorum: Type.Integer({ minimum: 1 }),
    blockingSeverities: Type.Array(Type.Union(severities.map((severity) => Type.Literal(severity)))),
    promptVersion: Type.String({ minLength: 1, maxLength: 40, pattern: '^[A-Za-z0-9._-]+$' }),
    prompt: Type.String({ minLength: 1 }),
    unavailable: Type.Optional(
      Type.Union(
        panelUnavailableRules.map((rule) => Type.Literal(rule)),
        {
          description:
            'a reviewer that cannot run here (its image not built, its key not set): "incomplete" (default) counts it, so the panel is review-incomplete naming what is missing (and a landing is refused before it starts); "skip" leaves it out of the quorum and the verdict lists it with why (a quorum the rest cannot meet is still incomplete)',
        },
      ),
    ),
  },
  { additionalProperties: false },
);

export const PanelsRecipeSchema = Type.Object(
  { version: Type.Literal(1), panels: Type.Record(Type.String({ pattern: '^[a-z][a-z0-9-]*$' }), PanelSchema) },
  { additionalProperties: false },
);
export type Panel = Static<typeof PanelSchema>;

export type HarnessesRecipe = Static<typeof HarnessesRecipeSchema>;
export type Harness = HarnessesRecipe['harnesses'][string];
export type SessionLimits = Static<typeof SessionLimitsSchema>;
export type Budget = Static<typeof BudgetSchema>;
export type LimitsRecipe = Static<typeof LimitsRecipeSchema>;
export type GateLimits = Static<typeof GateLimitsSchema>;

/**
 * recipes/playbooks.json as a snapshot carries it: the parsed file, its envelope checked here (the
 * tool gateway's grounding rules and the fix loop's limits, which the session activity and the fix
 * loop read). The playbooks' kinds and matchers are the fix loop's to check where it uses them
 * (activities/fix/fix.ts); more fields are kept as they are.
 */
export const PlaybooksSnapshotSchema = Type.Object({
  version: Type.Literal(1),
  playbooks: Type.Array(
    Type.Object({
      id: Type.String({ minLength: 1 }),
      description: Type.Optional(Type.String()),
      signature: Type.String({ minLength: 1 }),
      kind: Type.String({ minLength: 1 }),
    }),
  ),
  grounding: Type.Object({ groundedCommands: Type.Array(Type.String()), groundingFiles: Type.Array(Type.String()) }),
  limits: Type.Object({
    maxRepairs: Type.Integer({ minimum: 0, maximum: 10 }),
    maxToolIterations: Type.Integer({ minimum: 1 }),
    sessionTimeout: Type.String({ pattern: durationPattern }),
  }),
});
export type PlaybooksSnapshot = Static<typeof PlaybooksSnapshotSchema>;

/**
 * Every recipe, validated, as one run carries it from its start to its end: the API resolves it when
 * it starts a run (`loadRecipes`), puts it in the workflow's input and its version in the memo, and
 * workflows hand it to their children and to the activities that read recipe data — so an operator's
 * edit of a recipe file changes the runs started after it, never one under way. `version` is a hash
 * of every recipe file. Descriptions (text for people) are left out.
 */
export interface RecipeSnapshot {
  version: string;
  harnesses: HarnessesRecipe['harnesses'];
  ladder: string[];
  limits: LimitsRecipe;
  panels: Record<string, Panel>;
  /** recipes/pricing.json: what the model gateway prices tokens at. */
  pricing: PricingTable;
  /** recipes/playbooks.json, parsed (see PlaybooksSnapshotSchema). */
  playbooks: PlaybooksSnapshot;
}

/** All recipes, validated, with the content hash that goes into every run's memo (one snapshot). */
export type Recipes = RecipeSnapshot;

export { RecipeError } from './recipe-error';
