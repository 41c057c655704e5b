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
      Type.Integer({
        minimum: -100,
        maximum: 100,
        description: 'priority lane in the target queue: higher lanes are admitted first (default 0); a batch in flight is never reordered',
      }),
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

export type LandingCreated = Static<typeof LandingCreatedSchema>;

export const LandingRetriedSchema = Type.Object({
  ...LandingCreatedSchema.properties,
  retryOf: Type.String({ description: 'the run this one retries (it keeps its id and its history)' }),
  attempt: Type.Integer({ minimum: 2, description: 'which attempt at these heads this run is (the first run is attempt 1)' }),
});
export type LandingRetried = Static<typeof LandingRetriedSchema>;

export const LandingIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9._:-]+$' }) });

/**
 * Objects a workflow returns as they are: a field a newer worker adds passes through (fastify's
 * serializer drops properties a closed schema does not name).
 */
const open = { additionalProperties: true } as const;

export const GateResultSchema = Type.Object(
  {
    suiteId: Type.String(),
    treeSha: Type.String(),
    status: Type.Union([Type.Literal('passed'), Type.Literal('failed'), Type.Literal('timed-out')]),
    exitCode: Type.Union([Type.Integer(), Type.Null()]),
    logRef: Type.String(),
    durationMs: Type.Number(),
    reattached: Type.Boolean(),
    round: Type.Optional(
      Type.Integer({ minimum: 1, description: 'gate round: 1 for the first gate, then one per fixup round or re-gate after the target moved' }),
    ),
    cache: Type.Optional(
      Type.Union([Type.Literal('hit'), Type.Literal('miss')], {
        description:
          "GATE_CACHE: hit = reused from the gate cache (a sealed result of the same tree, suite definition and runner image; no container ran, logRef is a copy of the sealed log, durationMs the sealed run's); miss = the suite ran. Absent in runs recorded before the cache.",
      }),
    ),
    settled: Type.Optional(
      Type.Union([Type.Literal('flaky'), Type.Literal('pre-existing'), Type.Literal('failed')], {
        description:
          'a red result settled by evidence: flaky (green when run again on the same tree), pre-existing (red on the base too), failed (red again, green on the base)',
      }),
    ),
    evidence: Type.Optional(
      Type.Array(
        Type.Object({
          on: Type.Union([Type.Literal('same-tree'), Type.Literal('base')]),
          commitSha: Type.String(),
          treeSha: Type.String(),
          status: Type.Union([Type.Literal('passed'), Type.Literal('failed'), Type.Literal('timed-out')]),
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
        {
          by: Type.Union([Type.Literal('retry'), Type.Literal('quarantine'), Type.Literal('pre-existing')]),
          until: Type.Optional(Type.String({ description: "the quarantine's end" })),
        },
        { description: "a red result that does not block the landing, and why (the recipe's limits.gate)" },
      ),
    ),
  },
  open,
);

/** One connection an environment's setup made (or tried) through the egress gateway. */
export const EgressEntrySchema = Type.Object({
  host: Type.String(),
  port: Type.Integer({ description: '0 when the request named no port' }),
  allowed: Type.Boolean({ description: 'false: refused by the gateway (off the allow-list, an IP literal, a private range, another port)' }),
  bytesUp: Type.Number(),
  bytesDown: Type.Number(),
  reason: Type.Optional(Type.String({ description: 'why it was refused' })),
  error: Type.Optional(Type.String({ description: 'why an allowed connection failed (the name did not resolve, the host was unreachable)' })),
});

/** A landing's use of its repository's environment on one tree (core/types.ts EnvironmentUse). */
export const EnvironmentUseSchema = Type.Object({
  commitSha: Type.String({ description: 'the commit whose inputs keyed it' }),
  treeSha: Type.Optional(Type.String({ description: 'the tree gated in it (absent for the base of a settling run)' })),
  key: Type.String({ description: 'sha256:<hex> of the declaration, the base image ID and the inputs (GET /v1/environments)' }),
  cache: Type.Union([Type.Literal('hit'), Type.Literal('miss')], { description: "ENV_CACHE: hit = this host had it, miss = this landing's step built it" }),
  buildMs: Type.Number({ description: 'how long its build took (the build itself, also for a hit)' }),
  egress: Type.Array(EgressEntrySchema, { description: "every connection the build's setup made through the egress gateway" }),
  failed: Type.Optional(Type.String({ description: 'set when the build failed: why, in one line' })),
});

export const StepSchema = Type.Object({
  name: Type.String(),
  status: Type.Union([Type.Literal('running'), Type.Literal('done'), Type.Literal('failed'), Type.Literal('skipped'), Type.Literal('agent-unavailable')]),
  startedAt: Type.String(),
  endedAt: Type.Optional(Type.String()),
  detail: Type.Optional(Type.String()),
});

export const MetersSchema = Type.Object({
  capsulesRun: Type.Number(),
  containersRun: Type.Number(),
  agentSessions: Type.Number(),
  inputTokens: Type.Number(),
  outputTokens: Type.Number(),
  costUsd: Type.Number(),
  wallTimeMs: Type.Number(),
});

const cacheStatus = Type.Union([Type.Literal('hit'), Type.Literal('partial'), Type.Literal('miss')], { description: 'REVIEW_CACHE' });

/** One review panel of a landing (core/types.ts ReviewRecord). */
export const ReviewSchema = Type.Object(
  {
    treeSha: Type.String(),
    status: Type.String({ description: 'the verdict: approved, blocked, incomplete, …' }),
    summary: Type.String(),
    cache: cacheStatus,
    restored: Type.Array(Type.String(), { description: 'reviewers answered from the findings cache' }),
    sessionsStarted: Type.Number(),
    missing: Type.Array(Type.String()),
    blocking: Type.Array(
      Type.Object(
        { file: Type.String(), line: Type.Optional(Type.Number()), severity: Type.String(), message: Type.String(), votes: Type.Array(Type.String()) },
        open,
      ),
    ),
    reviewers: Type.Array(
      Type.Object(
        {
          harnessModel: Type.String(),
          source: Type.Union([Type.Literal('cache'), Type.Literal('session')]),
          status: Type.Union([Type.Literal('delivered'), Type.Literal('errored'), Type.Literal('unavailable')]),
          sessionStatus: Type.Optional(Type.String()),
          attempts: Type.Optional(Type.Number()),
          respawns: Type.Optional(Type.Number()),
          reason: Type.Optional(Type.String({ description: 'why it has no verdict' })),
        },
        open,
      ),
    ),
    skipped: Type.Optional(
      Type.Array(Type.Object({ harnessModel: Type.String(), reason: Type.String() }, open), {
        description: 'reviewers left out of the quorum because they cannot run here (the panel says "unavailable": "skip"), each with why',
      }),
    ),
    meters: Type.Object(
      { sessionsSpawned: Type.Number(), respawns: Type.Number(), inputTokens: Type.Number(), outputTokens: Type.Number(), costUsd: Type.Number() },
      { ...open, description: "what the panel's sessions spent (in the landing's meters too)" },
    ),
  },
  open,
);

/** A question a run asks (its own or its agents'), with its answer once there is one. */
const QuestionSchema = Type.Object({
  id: Type.String(),
  question: Type.String(),
  from: Type.Optional(Type.String({ description: 'who asked: the landing itself, or an agent session (`resolver-1 (resolver, harness#model)`)' })),
  why: Type.Optional(Type.String({ description: 'what the run was doing when the question came' })),
  owner: Type.Optional(Type.String({ description: 'the child workflow that waits for the answer (a fix loop)' })),
  answer: Type.Optional(Type.String({ description: 'empty: a decision not to go on' })),
  withdrawn: Type.Optional(Type.Boolean({ description: 'the child that asked ended before an answer came' })),
});

const BudgetViewSchema = Type.Object(
  {
    tokens: Type.Number(),
    costUsd: Type.Number(),
    sessions: Type.Number(),
    wallMs: Type.Number(),
    onExhausted: Type.Union([Type.Literal('pause'), Type.Literal('stop')]),
  },
  { description: "the landing's budget, shared by its sessions (as extended so far)" },
);

/** How a landing ended (core/types.ts LandingOutcome); fields a newer worker adds pass through. */
export const LandingOutcomeSchema = Type.Object(
  {
    status: Type.String({ description: 'landed, gate-failed, needs-rebase, … (core/types.ts LandingStatus)' }),
    summary: Type.String(),
    runId: Type.String(),
    repo: Type.String(),
    target: Type.String(),
    heads: Type.Array(HeadSchema),
    endedInPhase: Type.String(),
    targetSha: Type.Optional(Type.String()),
    headSha: Type.Optional(Type.String()),
    treeSha: Type.Optional(Type.String()),
    mergedSha: Type.Optional(Type.String()),
    gates: Type.Array(GateResultSchema),
    provenance: Type.Optional(
      Type.Array(
        Type.Object(
          { branch: Type.String(), original: Type.String(), subject: Type.String(), rebased: Type.Union([Type.String(), Type.Null()]), how: Type.String() },
          open,
        ),
        {
          description: 'original commit → rebased commit, per branch',
        },
      ),
    ),
    batch: Type.Optional(
      Type.Object(
        { id: Type.String(), members: Type.Array(Type.String()), round: Type.Integer(), treeSha: Type.String(), stackedSha: Type.String() },
        { ...open, description: 'the speculative batch this landing merged in' },
      ),
    ),
    queue: Type.Optional(
      Type.Object({ waitedMs: Type.Number(), turns: Type.Number() }, { ...open, description: 'time in the target queue, every turn added up' }),
    ),
    culpritIn: Type.Optional(
      Type.Array(Type.Object({ batchId: Type.String(), round: Type.Integer(), treeSha: Type.String(), failing: Type.Array(Type.String()) }, open), {
        description: 'batches that named this landing their culprit',
      }),
    ),
    supersedes: Type.Optional(
      Type.Array(
        Type.Object(
          {
            suiteId: Type.String(),
            red: Type.Object({ treeSha: Type.String(), round: Type.Integer(), status: Type.String() }),
            supersededBy: Type.Object({ treeSha: Type.String(), round: Type.Integer() }),
          },
          open,
        ),
        { description: 'red gate results retired by later green ones (both kept in `gates`)' },
      ),
    ),
    reviews: Type.Optional(Type.Array(ReviewSchema)),
    questions: Type.Optional(Type.Array(QuestionSchema)),
    fixLoops: Type.Optional(
      Type.Array(
        Type.Object(
          {
            id: Type.String(),
            outcome: Type.String(),
            summary: Type.String(),
            playbookUsed: Type.Union([Type.String(), Type.Null()]),
            repairAttempts: Type.Number(),
            filesChanged: Type.Array(Type.String()),
          },
          open,
        ),
      ),
    ),
    sessions: Type.Optional(
      Type.Array(
        Type.Object({ sessionId: Type.String(), role: Type.String(), status: Type.String(), harnessModel: Type.String(), attempts: Type.Number() }, open),
      ),
    ),
    failure: Type.Optional(
      Type.Object({ type: Type.String(), message: Type.String(), field: Type.Optional(Type.String()), file: Type.Optional(Type.String()) }, open),
    ),
    environments: Type.Optional(
      Type.Array(EnvironmentUseSchema, { description: "the repository's environments the gates ran in, one per tree gated (issue 24)" }),
    ),
    meters: MetersSchema,
  },
  { ...open, description: "the landing's outcome (core/types.ts LandingOutcome)" },
);

export const LandingViewSchema = Type.Object({
  id: Type.String(),
  workflowStatus: Type.String({ description: 'Temporal execution status: RUNNING, COMPLETED, …' }),
  phase: Type.String(),
  steps: Type.Array(StepSchema),
  gates: Type.Array(GateResultSchema),
  meters: Type.Partial(MetersSchema, { additionalProperties: Type.Number() }),
  pendingQuestions: Type.Array(Type.Pick(QuestionSchema, ['id', 'question', 'from', 'why']), {
    description: "questions the run waits on (its own and its agents'): answer with POST /v1/landings/:id/answers; nothing more runs until then",
  }),
  reviews: Type.Array(ReviewSchema, {
    description:
      "review panels: verdict, REVIEW_CACHE status, restored reviewers, each reviewer's attempts, respawns and why it has no verdict, and the panel's meters (in the landing's meters too)",
  }),
  budget: Type.Optional(BudgetViewSchema),
  pausedFor: Type.Optional(Type.String({ description: 'set while the landing waits for POST /v1/runs/:id/budget: the limit that was crossed' })),
  statusUnavailable: Type.Optional(
    Type.String({
      description:
        'set when the landing runs but no worker answered its status query (all down, or its host lost): steps and meters are empty, the phase is the last one visibility recorded',
    }),
  ),
  outcome: Type.Optional(LandingOutcomeSchema),
});
export type LandingView = Static<typeof LandingViewSchema>;
export type LandingOutcomeView = Static<typeof LandingOutcomeSchema>;
export type GateResult = Static<typeof GateResultSchema>;
export type Step = Static<typeof StepSchema>;
export type Review = Static<typeof ReviewSchema>;
export type EgressEntry = Static<typeof EgressEntrySchema>;
export type EnvironmentUse = Static<typeof EnvironmentUseSchema>;
export type WireMeters = Static<typeof MetersSchema>;

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

/** What a listing says of one run (Temporal visibility: search attributes and memo). */
export const RunSummaryBaseSchema = Type.Object({
  id: Type.String(),
  workflowStatus: Type.String(),
  startTime: Type.String(),
  closeTime: Type.Optional(Type.String()),
  repo: Type.Optional(Type.String()),
  target: Type.Optional(Type.String()),
  branches: Type.Optional(Type.Array(Type.String())),
  phase: Type.Optional(Type.String()),
  outcome: Type.Optional(Type.String()),
});

export const LandingListSchema = Type.Object({
  landings: Type.Array(
    Type.Object({
      ...RunSummaryBaseSchema.properties,
      queuedMs: Type.Optional(Type.Integer({ description: 'time it waited in its target queue so far (every turn added up); absent before it queued' })),
    }),
  ),
});

export const EnvironmentListQuery = Type.Object(
  { repo: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'Repository as given to POST /v1/landings (path or git URL)' })) },
  { additionalProperties: false },
);

/** One environment of the API's host (activities/environments/environments.ts EnvironmentRecord, read from its data dir). */
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
    Type.Object({
      path: Type.String(),
      oid: Type.Optional(Type.String({ description: 'the blob or tree in the tree that keyed it' })),
      absent: Type.Optional(Type.Literal(true, { description: 'the tree had nothing at this path' })),
    }),
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
export type EnvironmentView = Static<typeof EnvironmentSchema>;

const journal = { seq: Type.Integer({ description: "the event's number in the run" }), at: Type.String() };
const sessionEventType = Type.Union(
  (['spawned', 'reattached', 'first-turn', 'classified', 'respawned', 'escalated', 'delivered', 'ended'] as const).map((type) => Type.Literal(type)),
);

/**
 * One journal event of a run (core/events.ts): the `data` of each event of GET /v1/runs/:id/events
 * whose event name is its `kind`. The stream is written as it is, not through a serializer.
 */
export const RunEventSchema = Type.Union([
  Type.Object({ kind: Type.Literal('phase'), phase: Type.String(), ...journal }),
  Type.Object({
    kind: Type.Literal('step'),
    name: Type.String(),
    status: Type.Union([Type.Literal('started'), Type.Literal('done'), Type.Literal('failed')]),
    detail: Type.Optional(Type.String()),
    ...journal,
  }),
  Type.Object({
    kind: Type.Literal('gate'),
    suiteId: Type.String(),
    status: Type.String(),
    exitCode: Type.Union([Type.Integer(), Type.Null()]),
    treeSha: Type.String(),
    round: Type.Integer(),
    logRef: Type.String(),
    durationMs: Type.Number(),
    cache: Type.Optional(Type.Union([Type.Literal('hit'), Type.Literal('miss')])),
    evidence: Type.Optional(Type.Union([Type.Literal('same-tree'), Type.Literal('base')])),
    ...journal,
  }),
  Type.Object({
    kind: Type.Literal('session'),
    sessionId: Type.String(),
    type: sessionEventType,
    role: Type.Optional(Type.String()),
    attempt: Type.Optional(Type.Integer()),
    harnessModel: Type.Optional(Type.String()),
    class: Type.Optional(Type.String({ description: "the attempt's class (`delivered`, `crashed`, `oom`…) on `classified`" })),
    detail: Type.Optional(Type.String()),
    ...journal,
  }),
  Type.Object({ kind: Type.Literal('cache'), treeSha: Type.String(), cache: cacheStatus, restored: Type.Array(Type.String()), ...journal }),
  Type.Object({ kind: Type.Literal('meters'), meters: MetersSchema, ...journal }),
  Type.Object({ kind: Type.Literal('question'), ...Type.Omit(QuestionSchema, ['owner']).properties, ...journal }),
  Type.Object({
    kind: Type.Literal('budget'),
    state: Type.Union([Type.Literal('paused'), Type.Literal('extended'), Type.Literal('stopped')]),
    reason: Type.String(),
    ...journal,
  }),
  Type.Object({ kind: Type.Literal('host'), state: Type.Literal('lost'), hostId: Type.String(), reason: Type.String(), ...journal }),
  Type.Object({ kind: Type.Literal('outcome'), status: Type.String(), summary: Type.String(), ...journal }),
  Type.Object({ kind: Type.Literal('trimmed'), dropped: Type.Integer(), throughSeq: Type.Integer(), reason: Type.String(), ...journal }),
]);
export type RunEvent = Static<typeof RunEventSchema>;

/** The kinds of run an operator starts or schedules (sessions are listed under their run). */
export const listedRunKinds = ['landing', 'review-panel', 'fix-loop', 'nightly'] as const;

export const RunListQuery = Type.Object(
  {
    kind: Type.Optional(
      Type.Union(
        [...listedRunKinds, 'agent-session', 'merge-batch'].map((kind) => Type.Literal(kind)),
        {
          description:
            "One kind of run; default landings, review panels, fix loops and nightlies (a landing's sessions and a target queue's speculative batches only when asked for)",
        },
      ),
    ),
    ...LandingListQuery.properties,
  },
  { additionalProperties: false },
);

// The same fields as a landing's, with its kind second (as the API has always written them).
const { id: runIdField, ...runSummaryRest } = RunSummaryBaseSchema.properties;
export const RunSummarySchema = Type.Object({
  id: runIdField,
  kind: Type.String({ description: 'landing, review-panel, fix-loop, nightly, agent-session or merge-batch' }),
  ...runSummaryRest,
  parent: Type.Optional(Type.String({ description: "the run that started this one (a landing's panel or fix loop, a batch's target queue)" })),
});
export type RunSummary = Static<typeof RunSummarySchema>;

export const RunListSchema = Type.Object({ runs: Type.Array(RunSummarySchema) });

export const RunViewSchema = Type.Object({
  id: Type.String(),
  type: Type.String({ description: 'the workflow type: landing, reviewPanel, fixLoop, nightly, agentSession…' }),
  workflowStatus: Type.String(),
  status: Type.Unknown({ description: "the workflow's `status` query (null when it did not answer)" }),
  result: Type.Optional(Type.Unknown({ description: "the workflow's result, once it completed" })),
});
export type RunView = Static<typeof RunViewSchema>;

export const RunCreatedSchema = Type.Object({ id: Type.String(), duplicate: Type.Boolean(), links: Type.Object({ self: Type.String() }) });
export type RunCreated = Static<typeof RunCreatedSchema>;

export const BudgetCommandSchema = Type.Union([
  Type.Object(
    {
      action: Type.Literal('extend'),
      tokens: Type.Optional(Type.Integer({ minimum: 1 })),
      // Not `exclusiveMinimum: 0`: OpenAPI 3.0 (our /docs/json) only knows the boolean form, so that schema was invalid there.
      costUsd: Type.Optional(Type.Number({ minimum: 0.01, description: 'US dollars to add, at least one cent' })),
      sessions: Type.Optional(Type.Integer({ minimum: 1 })),
      wallMs: Type.Optional(Type.Integer({ minimum: 1 })),
    },
    { additionalProperties: false },
  ),
  Type.Object({ action: Type.Literal('stop') }, { additionalProperties: false }),
]);
export type BudgetCommand = Static<typeof BudgetCommandSchema>;

export const BudgetAnswerSchema = Type.Object({ accepted: Type.Boolean(), budget: Type.Optional(Type.Record(Type.String(), Type.Unknown())) });
export type BudgetAnswer = Static<typeof BudgetAnswerSchema>;

export const AnswerSchema = Type.Object(
  { text: Type.String({ maxLength: 10_000 }), questionId: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })) },
  { additionalProperties: false },
);
export const AnswerAcceptedSchema = Type.Object({ accepted: Type.Boolean(), questionId: Type.String() });
export type AnswerAccepted = Static<typeof AnswerAcceptedSchema>;
export const CancelRequestedSchema = Type.Object({ id: Type.String(), cancelRequested: Type.Boolean() });
export type CancelRequested = Static<typeof CancelRequestedSchema>;

const harnessModel = Type.String({ minLength: 3, maxLength: 200, description: 'harness#model' });

export const FixCreateSchema = Type.Object(
  {
    repo: Type.String({ minLength: 1, maxLength: 4096 }),
    branch: Type.String({ minLength: 1, maxLength: 255 }),
    request: Type.String({ minLength: 3, maxLength: 20_000, description: 'what is wrong, in words; routes the loop' }),
    reproCommand: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2000,
        description:
          'run with `sh -c` in the runner image; without it the loop grounds its repro in the request and what the repository defines (or ends no-repro)',
      }),
    ),
    maxRepairs: Type.Optional(Type.Integer({ minimum: 0, maximum: 10 })),
    agents: Type.Optional(
      Type.Object(
        {
          implementer: Type.Optional(harnessModel),
          architect: Type.Optional(harnessModel),
          ladder: Type.Optional(Type.Array(harnessModel, { minItems: 1, maxItems: 20 })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type FixCreate = Static<typeof FixCreateSchema>;

export const ReviewCreateSchema = Type.Object(
  {
    repo: Type.String({ minLength: 1, maxLength: 4096 }),
    base: Type.String({ minLength: 1, maxLength: 255, description: 'branch the change is reviewed against' }),
    head: Type.String({ minLength: 1, maxLength: 255, description: 'branch whose tree is reviewed' }),
    panel: Type.String({ minLength: 1, maxLength: 100, description: 'a panel of recipes/panels.json' }),
    quorum: Type.Optional(Type.Integer({ minimum: 1, maximum: 12 })),
  },
  { additionalProperties: false },
);
export type ReviewCreate = Static<typeof ReviewCreateSchema>;

export const QuarantineSchema = Type.Object({
  repo: Type.String(),
  target: Type.String(),
  suiteId: Type.String(),
  since: Type.String({ description: 'when the suite was first quarantined (of this quarantine)' }),
  until: Type.String({ description: 'when it ends by itself' }),
  settled: Type.Union([Type.Literal('flaky'), Type.Literal('pre-existing')], {
    description: 'what the evidence showed: green when run again on the same tree, or red on the base too',
  }),
  landingId: Type.String({ description: 'the landing whose evidence put it here (the latest, when quarantined again)' }),
  treeSha: Type.String({ description: 'the tree it was red on' }),
  logRefs: Type.Array(Type.String(), { description: 'logs of the red run and its evidence runs (relative to the data dir of the host that ran them)' }),
  links: Type.Object({ landing: Type.String() }),
});
export type QuarantineView = Static<typeof QuarantineSchema>;

export const QuarantineLiftedSchema = Type.Object({ lifted: Type.Literal(true), repo: Type.String(), target: Type.String(), suiteId: Type.String() });
export type QuarantineLifted = Static<typeof QuarantineLiftedSchema>;

const QueueEntrySchema = Type.Object({
  landingId: Type.String(),
  position: Type.Integer({ description: '0: next to go' }),
  lane: Type.Integer({ description: 'priority lane (higher first)' }),
  seq: Type.Integer({ description: 'arrival order; a landing that comes back (a batch culprit after its fixup round) keeps it' }),
  batchable: Type.Boolean({ description: 'may be tested in a speculative batch (the gate file asks for batches, its gate file unchanged)' }),
  etaMs: Type.Optional(Type.Integer({ description: 'expected time until its turn is over, from the queue’s recent turns (absent until the queue timed one)' })),
  links: Type.Object({ landing: Type.String() }),
});

export const QueueViewSchema = Type.Object({
  repo: Type.String(),
  target: Type.String(),
  queueId: Type.String(),
  running: Type.Boolean({ description: 'false when no queue runs for this target (nothing has asked to merge to it, or it is gone)' }),
  current: Type.Optional(Type.String({ description: 'the landing that holds the target now (it merges itself)' })),
  batch: Type.Optional(
    Type.Object(
      { id: Type.String(), members: Type.Array(Type.String()), links: Type.Object({ self: Type.String() }) },
      { description: 'the speculative batch in flight' },
    ),
  ),
  waiting: Type.Array(QueueEntrySchema),
  admitted: Type.Integer({ description: 'landings admitted so far (alone or in batches)' }),
  batches: Type.Integer({ description: 'batches run so far' }),
  turnInFlightMs: Type.Optional(Type.Integer({ description: 'how long the turn in flight has run' })),
  recentTurnMs: Type.Array(Type.Integer(), { description: 'durations of recent turns (a landing’s hold, or a whole batch), newest last' }),
});
export type QueueView = Static<typeof QueueViewSchema>;

const MissingSchema = Type.Object({ kind: Type.Union([Type.Literal('image'), Type.Literal('key')]), name: Type.String() });

/** GET /v1/agents: per worker, each harness#model of the recipes in force, runnable or not and why. */
export const AgentsViewSchema = Type.Object({
  freshForMs: Type.Integer({ description: 'a report older than this is not evidence (its worker may be gone or changed); the API then refuses nothing on it' }),
  workers: Type.Array(
    Type.Object({
      hostId: Type.String(),
      at: Type.String({ description: 'when the worker looked (it reports at start and every minute)' }),
      fresh: Type.Boolean(),
      agents: Type.Array(
        Type.Object({
          harnessModel: Type.String(),
          runnable: Type.Boolean(),
          reason: Type.Optional(Type.String({ description: 'why it cannot run here: the image not built, the key not set' })),
          missing: Type.Optional(Type.Array(MissingSchema)),
          usedBy: Type.Array(Type.String(), { description: 'where the recipes name it: harnesses.<name>, ladder[<i>], panels.<name>' }),
        }),
      ),
      notice: Type.Optional(
        Type.String({ description: 'one line when the shipped defaults (the `default` panel, the default ladder) cannot run on this worker, and what to set' }),
      ),
    }),
  ),
});
export type AgentsView = Static<typeof AgentsViewSchema>;
