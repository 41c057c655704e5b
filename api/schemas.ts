import { Type, type Static } from '@sinclair/typebox';
import { executionStatuses } from '../core/visibility-query';
import { LandingPhase, LandingStatus } from '../core/types';
import { BudgetSchema } from '../core/recipe-schemas';

export const ErrorSchema = Type.Object(
  {
    error: Type.Object({
      code: Type.String({ description: 'stable TARMAC_* code' }),
      message: Type.String(),
      details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    }),
  },
  { $id: 'Error' },
);

export const LandingCreateSchema = Type.Object(
  {
    repo: Type.String({ minLength: 1, maxLength: 4096, description: 'git URL or a path on the API host' }),
    branches: Type.Array(Type.String({ minLength: 1, maxLength: 255 }), {
      minItems: 1,
      maxItems: 20,
      description: 'source branches in landing order; the last one is the aggregate head',
    }),
    target: Type.String({ minLength: 1, maxLength: 255, description: 'branch the landing fast-forwards' }),
    agents: Type.Optional(
      Type.Object(
        {
          resolver: Type.Optional(Type.String({ minLength: 3, maxLength: 200, description: 'harness#model resolving rebase conflicts' })),
          fixer: Type.Optional(Type.String({ minLength: 3, maxLength: 200, description: 'harness#model of the fixup round' })),
          ladder: Type.Optional(Type.Array(Type.String({ minLength: 3, maxLength: 200 }), { minItems: 1, maxItems: 20 })),
        },
        { additionalProperties: false },
      ),
    ),
    budget: Type.Optional(
      Type.Partial(BudgetSchema, {
        additionalProperties: false,
        description: "the landing's budget, shared by all its agent sessions; each field defaults to recipes/limits.json budget",
      }),
    ),
    priority: Type.Optional(
      Type.Integer({ minimum: -100, maximum: 100, description: 'priority lane in the target queue: higher lanes are admitted first (default 0); a batch in flight is never reordered' }),
    ),
  },
  { additionalProperties: false },
);
export type LandingCreate = Static<typeof LandingCreateSchema>;

const HeadSchema = Type.Object({ branch: Type.String(), sha: Type.String() });

export const LandingCreatedSchema = Type.Object({
  id: Type.String({ description: 'workflow id, derived from repo, target and branch heads' }),
  duplicate: Type.Boolean({ description: 'true when the same request already has a run; that run is returned' }),
  repo: Type.String(),
  target: Type.String(),
  targetSha: Type.String(),
  heads: Type.Array(HeadSchema),
  links: Type.Object({ self: Type.String() }),
});

export const LandingIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9._:-]+$' }) });

const GateResultSchema = Type.Object({
  suiteId: Type.String(),
  treeSha: Type.String(),
  status: Type.String(),
  exitCode: Type.Union([Type.Integer(), Type.Null()]),
  logRef: Type.String(),
  durationMs: Type.Number(),
  reattached: Type.Boolean(),
  round: Type.Optional(Type.Integer({ minimum: 1, description: 'gate round: 1 for the first gate, then one per fixup round or re-gate after the target moved' })),
  cache: Type.Optional(
    Type.Union([Type.Literal('hit'), Type.Literal('miss')], {
      description: 'GATE_CACHE: hit = reused from the gate cache (a sealed result of the same tree, suite definition and runner image; no container ran, logRef is a copy of the sealed log, durationMs the sealed run\'s); miss = the suite ran. Absent in runs recorded before the cache.',
    }),
  ),
  settled: Type.Optional(
    Type.Union([Type.Literal('flaky'), Type.Literal('pre-existing'), Type.Literal('failed')], {
      description: 'a red result settled by evidence: flaky (green when run again on the same tree), pre-existing (red on the base too), failed (red again, green on the base)',
    }),
  ),
  evidence: Type.Optional(
    Type.Array(
      Type.Object({
        on: Type.Union([Type.Literal('same-tree'), Type.Literal('base')]),
        commitSha: Type.String(),
        treeSha: Type.String(),
        status: Type.String(),
        exitCode: Type.Union([Type.Integer(), Type.Null()]),
        logRef: Type.String(),
        durationMs: Type.Number(),
        cache: Type.Optional(Type.Union([Type.Literal('hit'), Type.Literal('miss')])),
      }),
      { description: 'the runs that settled a red result (again on the same tree, on the base), each with its log' },
    ),
  ),
  excused: Type.Optional(
    Type.Object(
      { by: Type.Union([Type.Literal('retry'), Type.Literal('quarantine'), Type.Literal('pre-existing')]), until: Type.Optional(Type.String({ description: "the quarantine's end" })) },
      { description: "a red result that does not block the landing, and why (the recipe's limits.gate)" },
    ),
  ),
});

/** One connection an environment's setup made (or tried) through the egress gateway. */
const EgressEntrySchema = Type.Object({
  host: Type.String(),
  port: Type.Integer({ description: '0 when the request named no port' }),
  allowed: Type.Boolean({ description: "false: refused by the gateway (off the allow-list, an IP literal, a private range, another port)" }),
  bytesUp: Type.Number(),
  bytesDown: Type.Number(),
  reason: Type.Optional(Type.String({ description: 'why it was refused' })),
});

/** A landing's use of its repository's environment on one tree (core/types.ts EnvironmentUse). */
const EnvironmentUseSchema = Type.Object({
  commitSha: Type.String({ description: 'the commit whose inputs keyed it' }),
  treeSha: Type.Optional(Type.String({ description: 'the tree gated in it (absent for the base of a settling run)' })),
  key: Type.String({ description: 'sha256:<hex> of the declaration, the base image ID and the inputs (GET /v1/environments)' }),
  cache: Type.Union([Type.Literal('hit'), Type.Literal('miss')], { description: "ENV_CACHE: hit = this host had it, miss = this landing's step built it" }),
  buildMs: Type.Number({ description: 'how long its build took (the build itself, also for a hit)' }),
  egress: Type.Array(EgressEntrySchema, { description: "every connection the build's setup made through the egress gateway" }),
  failed: Type.Optional(Type.String({ description: 'set when the build failed: why, in one line' })),
});

const StepSchema = Type.Object({
  name: Type.String(),
  status: Type.String(),
  startedAt: Type.String(),
  endedAt: Type.Optional(Type.String()),
  detail: Type.Optional(Type.String()),
});

export const LandingViewSchema = Type.Object({
  id: Type.String(),
  workflowStatus: Type.String({ description: 'Temporal execution status: RUNNING, COMPLETED, …' }),
  phase: Type.String(),
  steps: Type.Array(StepSchema),
  gates: Type.Array(GateResultSchema),
  meters: Type.Record(Type.String(), Type.Number()),
  pendingQuestions: Type.Array(
    Type.Object({
      id: Type.String(),
      question: Type.String(),
      from: Type.Optional(Type.String({ description: 'who asked: the landing itself, or an agent session (`resolver-1 (resolver, harness#model)`)' })),
      why: Type.Optional(Type.String({ description: 'what the run was doing when the question came' })),
    }),
    { description: 'questions the run waits on (its own and its agents\'): answer with POST /v1/landings/:id/answers; nothing more runs until then' },
  ),
  reviews: Type.Array(Type.Record(Type.String(), Type.Unknown()), {
    description: "review panels: verdict, REVIEW_CACHE status, restored reviewers, each reviewer's attempts, respawns and why it has no verdict, and the panel's meters (in the landing's meters too)",
  }),
  budget: Type.Optional(
    Type.Object(
      { tokens: Type.Number(), costUsd: Type.Number(), sessions: Type.Number(), wallMs: Type.Number(), onExhausted: Type.String() },
      { description: "the landing's budget, shared by its sessions (as extended so far)" },
    ),
  ),
  pausedFor: Type.Optional(Type.String({ description: 'set while the landing waits for POST /v1/runs/:id/budget: the limit that was crossed' })),
  statusUnavailable: Type.Optional(
    Type.String({ description: 'set when the landing runs but no worker answered its status query (all down, or its host lost): steps and meters are empty, the phase is the last one visibility recorded' }),
  ),
  outcome: Type.Optional(
    Type.Object(
      { environments: Type.Optional(Type.Array(EnvironmentUseSchema, { description: "the repository's environments the gates ran in, one per tree gated (issue 24)" })) },
      { additionalProperties: true, description: "the landing's outcome (core/types.ts LandingOutcome): status, summary, gates, reviews, …" },
    ),
  ),
});

const literals = (values: readonly string[]) => Type.Union(values.map((value) => Type.Literal(value)));

export const LandingListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
    repo: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'Repository as given to POST /v1/landings (path or git URL)' })),
    target: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    branch: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Landings that include this source branch' })),
    phase: Type.Optional(literals(Object.values(LandingPhase))),
    outcome: Type.Optional(literals(Object.values(LandingStatus))),
    status: Type.Optional(literals(executionStatuses)),
  },
  { additionalProperties: false },
);

export const LandingListSchema = Type.Object({
  landings: Type.Array(
    Type.Object({
      id: Type.String(),
      workflowStatus: Type.String(),
      startTime: Type.String(),
      closeTime: Type.Optional(Type.String()),
      repo: Type.Optional(Type.String()),
      target: Type.Optional(Type.String()),
      branches: Type.Optional(Type.Array(Type.String())),
      phase: Type.Optional(Type.String()),
      outcome: Type.Optional(Type.String()),
      queuedMs: Type.Optional(Type.Integer({ description: 'time it waited in its target queue so far (every turn added up); absent before it queued' })),
    }),
  ),
});

export const EnvironmentListQuery = Type.Object(
  { repo: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'Repository as given to POST /v1/landings (path or git URL)' })) },
  { additionalProperties: false },
);

/** One environment of the API's host (activities/environments.ts EnvironmentRecord, read from its data dir). */
export const EnvironmentSchema = Type.Object({
  key: Type.String({ description: 'sha256:<hex> of the declaration, the base image ID and the content of the inputs' }),
  repo: Type.String(),
  baseImage: Type.String({ description: 'the image its setup ran on and its gates run on' }),
  sizeBytes: Type.Number({ description: "disk use of the setup's files" }),
  builtAt: Type.String(),
  lastUsedAt: Type.String({ description: 'when a landing last built or reused it (the collection removes the least recently used first)' }),
  buildMs: Type.Number(),
  usedBy: Type.Array(Type.String(), { description: 'runs whose directory on this host still holds it: the collection keeps it for them' }),
  builtBy: Type.Object({ runId: Type.String() }),
  inputs: Type.Array(
    Type.Object({ path: Type.String(), oid: Type.Optional(Type.String({ description: "the blob or tree in the tree that keyed it" })), absent: Type.Optional(Type.Literal(true, { description: 'the tree had nothing at this path' })) }),
    { description: 'the declared inputs as read from the tree that keyed it' },
  ),
  products: Type.Array(Type.String(), { description: 'paths the setup produced (linked into a gated tree where it has nothing)' }),
  egress: Type.Array(EgressEntrySchema, { description: 'every connection its setup made through the egress gateway' }),
  declaration: Type.Object({
    source: Type.Union([Type.Literal('gate-file'), Type.Literal('devcontainer')]),
    file: Type.String(),
    image: Type.Optional(Type.String()),
    dockerfile: Type.Optional(Type.Object({ path: Type.String(), context: Type.String() })),
    setup: Type.Array(Type.String()),
    inputs: Type.Array(Type.String()),
    egress: Type.Optional(Type.Array(Type.String())),
    envNames: Type.Array(Type.String(), { description: "names of the declaration's environment entries (never their values)" }),
  }),
});
