/**
 * The one closed failure table. Every `TARMAC_*` code a run records, an activity throws or the
 * API answers with has one row here: how it is raised, how a run of each kind ends on it,
 * whether an activity failing with it is retried, and the HTTP status of the API's answer.
 * Workflows end runs through `endsAs`, activities (and workflow code that unwinds) throw through
 * `failure`, the API answers through `httpStatus`: a row without its columns does not compile,
 * and neither does a code used anywhere without a row.
 *
 * Pure and sandbox-safe (`ApplicationFailure` of `@temporalio/common` is): workflows, activities,
 * the API and the tests import it.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { FixOutcome } from './fix-types';
import type { NightlyStatus } from './nightly-types';
import type { SessionOutcome } from './session-types';
import type { LandingStatus } from './types';

/** The status a run of each kind ends with when this failure ends it. */
export interface Ends {
  readonly landing: LandingStatus;
  readonly session: SessionOutcome['status'];
  readonly nightly: NightlyStatus;
}

interface BaseRow {
  /** The string on the wire: `ApplicationFailure.type`, an outcome's `failure.type`, the API's `error.code`. */
  readonly code: `TARMAC_${string}`;
  /** What the code means, for the reader and the docs; messages name the particulars. */
  readonly description: string;
  /** The HTTP status when the API answers with this code. */
  readonly http?: number;
}

/**
 * Travels as an `ApplicationFailure` of this type: thrown by an activity, or by workflow code
 * that unwinds to its finale. `retryable: false` → thrown with `nonRetryable: true` and listed
 * in the activity presets' `nonRetryableErrorTypes`.
 */
interface ThrownRow extends BaseRow {
  readonly raised: 'thrown';
  readonly retryable: boolean;
  readonly ends: Ends;
}

/** Decided by workflow code and written into the outcome's `failure`; never thrown. */
interface RecordedRow extends BaseRow {
  readonly raised: 'recorded';
  readonly ends: Ends;
}

/** Only ever an answer of the API: `{ error: { code, message, details? } }`. */
interface AnsweredRow extends BaseRow {
  readonly raised: 'answered';
  readonly http: number;
}

type FailureRow = ThrownRow | RecordedRow | AnsweredRow;

/** Ends a run of any kind as `failed`: a failure that has no status of its own there. */
const failed = { landing: 'failed', session: 'failed', nightly: 'failed' } as const satisfies Ends;

export const failureTable = {
  // Thrown: activities (and the landing's budget check) raise these as ApplicationFailures.
  repoUnreachable: {
    code: 'TARMAC_REPO_UNREACHABLE',
    raised: 'thrown',
    retryable: false,
    ends: failed,
    description: 'The repository could not be read (missing path, unreachable URL, a location the allow-list refuses).',
  },
  refNotFound: {
    code: 'TARMAC_REF_NOT_FOUND',
    raised: 'thrown',
    retryable: false,
    ends: failed,
    description: 'A branch, target or recorded SHA does not exist in the repository.',
  },
  imageMissing: {
    code: 'TARMAC_IMAGE_MISSING',
    raised: 'thrown',
    retryable: false,
    ends: failed,
    description: 'A gate or agent image is not present on the Docker host.',
  },
  targetMoved: {
    code: 'TARMAC_TARGET_MOVED',
    raised: 'thrown',
    retryable: false,
    ends: { ...failed, landing: 'target-moved' },
    description: 'The target branch moved since the landing was verified (the merge refuses; the landing retargets, or gives up after its tries).',
  },
  pushRefused: {
    code: 'TARMAC_PUSH_REFUSED',
    raised: 'thrown',
    retryable: false,
    ends: failed,
    description:
      'The origin refused the fast-forward push itself (a pre-receive hook, a protected branch): nothing was pushed; the reason git reported is named.',
  },
  notFastForward: {
    code: 'TARMAC_NOT_FAST_FORWARD',
    raised: 'thrown',
    retryable: false,
    ends: failed,
    description: 'The head is not a descendant of the target head: nothing was pushed.',
  },
  unknownModel: {
    code: 'TARMAC_UNKNOWN_MODEL',
    raised: 'thrown',
    retryable: false,
    http: 400,
    ends: { ...failed, session: 'invalid-request' },
    description: 'A harness#model is not in the registry (the message names the nearest known ones).',
  },
  invalidRequest: {
    code: 'TARMAC_INVALID_REQUEST',
    raised: 'thrown',
    retryable: false,
    ends: { ...failed, session: 'invalid-request' },
    description: 'A request (session, limits, budget, panel, network) is invalid; the message names the field.',
  },
  manifestInvalid: {
    code: 'TARMAC_MANIFEST_INVALID',
    raised: 'thrown',
    retryable: false,
    ends: failed,
    description: "The run's manifest is missing or unreadable.",
  },
  wrongHost: {
    code: 'TARMAC_WRONG_HOST',
    raised: 'thrown',
    retryable: false,
    ends: failed,
    description:
      "A host-bound capsule tried as a local activity on a worker that is not the run's host: the step goes through the host's task queue instead (never a run's outcome).",
  },
  budgetExhausted: {
    code: 'TARMAC_BUDGET_EXHAUSTED',
    raised: 'thrown',
    retryable: false,
    ends: { ...failed, landing: 'budget-exhausted', session: 'budget-exhausted' },
    description: "The run's budget is spent and it was told to stop (recipe `onExhausted: stop`, or an operator).",
  },

  // Recorded: the workflow decides these and writes them into the outcome.
  invalidGateFile: {
    code: 'TARMAC_INVALID_GATE_FILE',
    raised: 'recorded',
    ends: { ...failed, landing: 'invalid-gate-file', nightly: 'invalid-gate-file' },
    description: "The target's `.config/tarmac/land-gate.json` is missing or invalid (the message names the field).",
  },
  invalidEnvironment: {
    code: 'TARMAC_INVALID_ENVIRONMENT',
    raised: 'recorded',
    ends: { ...failed, landing: 'invalid-environment', nightly: 'invalid-gate-file' },
    description:
      "The target's environment declaration (the gate file's `environment`, or `.devcontainer/devcontainer.json`) is invalid: the message names the file and the field; nothing was built.",
  },
  environmentFailed: {
    code: 'TARMAC_ENVIRONMENT_FAILED',
    raised: 'recorded',
    ends: { ...failed, landing: 'environment-failed' },
    description:
      "The repository's environment could not be built: the failing setup command, its exit code, the log's tail and any egress host refused are named; no gate or agent ran in it.",
  },
  agentUnavailable: {
    code: 'TARMAC_AGENT_UNAVAILABLE',
    raised: 'recorded',
    http: 400,
    ends: { ...failed, landing: 'agent-unavailable', session: 'agent-unavailable' },
    description: "A harness#model no worker can run: its image is not built or its provider's key is not set (named).",
  },
  droppedCommits: {
    code: 'TARMAC_DROPPED_COMMITS',
    raised: 'recorded',
    ends: { ...failed, landing: 'dropped-commits' },
    description: "The rebased result is missing an original commit's patch that nobody declared dropped.",
  },
  conflictUnresolved: {
    code: 'TARMAC_CONFLICT_UNRESOLVED',
    raised: 'recorded',
    ends: { ...failed, landing: 'conflict-unresolved' },
    description: 'The rebase still conflicts after the resolver sessions a landing may start.',
  },
  needsDecision: {
    code: 'TARMAC_NEEDS_DECISION',
    raised: 'recorded',
    ends: { ...failed, landing: 'needs-decision' },
    description:
      "A question got no decision to go on: the landing edits the gate file and the answer did not approve it, or an agent's question was answered empty (or not within the recipe's limits.questions.wait).",
  },
  gateFailed: {
    code: 'TARMAC_GATE_FAILED',
    raised: 'recorded',
    ends: { ...failed, landing: 'gate-failed' },
    description: "A gate suite is red on the landing's tree and no fixup round is left (or the re-gate after a moved target is red).",
  },
  fixupFailed: {
    code: 'TARMAC_FIXUP_FAILED',
    raised: 'recorded',
    ends: { ...failed, landing: 'fixup-failed' },
    description: 'The gate is still red after the fixup rounds, or a fixup round added no commit.',
  },
  reviewIncomplete: {
    code: 'TARMAC_REVIEW_INCOMPLETE',
    raised: 'recorded',
    ends: { ...failed, landing: 'review-incomplete' },
    description: 'A reviewer ran and has no verdict (errored, whatever the quorum), or fewer reviewers delivered than the quorum needs; each named with why.',
  },
  reviewBlocked: {
    code: 'TARMAC_REVIEW_BLOCKED',
    raised: 'recorded',
    ends: { ...failed, landing: 'review-blocked' },
    description: 'The panel found blocking findings and no fixup round is left.',
  },
  verifyFailed: {
    code: 'TARMAC_VERIFY_FAILED',
    raised: 'recorded',
    ends: { ...failed, landing: 'verify-failed' },
    description: 'Verification refused the merge (commit count, diff, dropped patches, gate or quorum on this exact tree).',
  },
  lostHost: {
    code: 'TARMAC_LOST_HOST',
    raised: 'recorded',
    ends: failed,
    description: "No worker of the session's host picked up the attempt, and the session's workspace lives there.",
  },
  repairFailed: {
    code: 'TARMAC_REPAIR_FAILED',
    raised: 'recorded',
    ends: { ...failed, nightly: 'repair-failed' },
    description: 'The nightly gate is red and the fix loop did not make it pass: nothing to land.',
  },
  landingFailed: {
    code: 'TARMAC_LANDING_FAILED',
    raised: 'recorded',
    ends: { ...failed, nightly: 'landing-failed' },
    description: "The nightly's repair landing ended otherwise than landed (its own failure code is recorded when it has one).",
  },
  internal: {
    code: 'TARMAC_INTERNAL',
    raised: 'recorded',
    http: 500,
    ends: failed,
    description: "A failure the run or the API did not expect; a run records the cause's own type when it has one, the API's 500 carries no internals.",
  },

  // Answered: the API's own codes.
  validation: {
    code: 'TARMAC_VALIDATION',
    raised: 'answered',
    http: 400,
    description:
      "The request does not match the route's schema (the message names the field); Node's and Fastify's own refusals of a malformed request keep their 4xx.",
  },
  unauthorized: { code: 'TARMAC_UNAUTHORIZED', raised: 'answered', http: 401, description: 'No valid bearer token on a /v1 route.' },
  notFound: { code: 'TARMAC_NOT_FOUND', raised: 'answered', http: 404, description: 'No such run, schedule or route.' },
  methodNotAllowed: {
    code: 'TARMAC_METHOD_NOT_ALLOWED',
    raised: 'answered',
    http: 405,
    description: 'The path exists but not with this method (`Allow` names the ones it has).',
  },
  conflict: {
    code: 'TARMAC_CONFLICT',
    raised: 'answered',
    http: 409,
    description:
      'The run is not running (answer, cancel, budget), a landing to retry is still running or landed, or a schedule exists or has a run in progress.',
  },
  rateLimited: {
    code: 'TARMAC_RATE_LIMITED',
    raised: 'answered',
    http: 429,
    description: 'Too many requests on an unauthenticated path, or too many open event streams for a token.',
  },
  recipesInvalid: {
    code: 'TARMAC_RECIPES_INVALID',
    raised: 'answered',
    http: 500,
    description: "The API's recipe files (TARMAC_RECIPES_DIR) do not load: the message names the file and the field; nothing was started.",
  },
  unavailable: {
    code: 'TARMAC_UNAVAILABLE',
    raised: 'answered',
    http: 503,
    description: 'Temporal is unreachable: nothing was started or changed; retry after `Retry-After`.',
  },
} as const satisfies Record<string, FailureRow>;

type Table = typeof failureTable;
type AnyRow = Table[keyof Table];

type FailureName = keyof Table;
/** Every code of the table. */
export type FailureCode = AnyRow['code'];
/** Codes that travel as an ApplicationFailure (`failure(...)` throws only these). */
type ThrownFailureCode = Extract<AnyRow, { raised: 'thrown' }>['code'];
/** Codes a run can end on (its outcome's `failure.type`), each with a status per run kind. */
export type RunFailureCode = Extract<AnyRow, { ends: Ends }>['code'];
/** Codes of the API's error shape, each with its HTTP status. */
export type ApiErrorCode = Extract<AnyRow, { http: number }>['code'];

/** Name → code: `FailureCode.gateFailed` is `'TARMAC_GATE_FAILED'`. */
export const FailureCode = Object.fromEntries(Object.entries(failureTable).map(([name, row]) => [name, row.code])) as {
  readonly [Name in FailureName]: Table[Name]['code'];
};

const rowByCode = new Map<string, FailureRow>(Object.values(failureTable).map((row) => [row.code, row]));

export function isFailureCode(value: unknown): value is FailureCode {
  return typeof value === 'string' && rowByCode.has(value);
}

export function failureRow(code: FailureCode): FailureRow {
  return rowByCode.get(code)!;
}

/** The status a run of `kind` ends with when `code` ends it. */
export function endsAs<Kind extends keyof Ends>(kind: Kind, code: RunFailureCode): Ends[Kind] {
  return (failureRow(code) as ThrownRow | RecordedRow).ends[kind];
}

/** The HTTP status the API answers `code` with. */
export function httpStatus(code: ApiErrorCode): number {
  return failureRow(code).http!;
}

/** Whether Temporal may retry an activity that failed with `code`. */
function isRetryable(code: ThrownFailureCode): boolean {
  return (failureRow(code) as ThrownRow).retryable;
}

/** Codes no retry can fix: the activity presets' `nonRetryableErrorTypes`. */
export const nonRetryableCodes: readonly ThrownFailureCode[] = Object.values(failureTable).flatMap((row: FailureRow) =>
  row.raised === 'thrown' && !row.retryable ? [row.code as ThrownFailureCode] : [],
);

/**
 * The ApplicationFailure for `code`, non-retryable as the table says; `details` (one object,
 * e.g. the field and the nearest names) travels as the failure's first detail.
 */
export function failure(code: ThrownFailureCode, message: string, details?: Record<string, unknown>): ApplicationFailure {
  return ApplicationFailure.create({ type: code, message, nonRetryable: !isRetryable(code), details: details ? [details] : [] });
}

/**
 * The fix loop's own failure vocabulary (`FixOutcome.failureType`, a contract older than the
 * codes above), each type with the outcome it ends the loop with.
 */
export const fixFailureTable = {
  budgetExhausted: { type: 'budget-exhausted', outcome: 'exhausted', description: "The loop's budget is spent before another agent round." },
  repairsExhausted: { type: 'repairs-exhausted', outcome: 'exhausted', description: 'The repro still fails after the last repair the loop may make.' },
  thrashing: { type: 'thrashing', outcome: 'thrashing', description: 'Two agent rounds changed nothing on disk.' },
  commandThrashing: {
    type: 'command-thrashing',
    outcome: 'thrashing',
    description: 'The same command failed the same way twice and no playbook applies to that failure: another agent round would repeat the last one.',
  },
  noRepro: {
    type: 'no-grounded-repro',
    outcome: 'no-repro',
    description:
      'No repro is grounded: the request pastes no error and names no command the repository defines, and the repository defines none for its intent. Nothing was run.',
  },
  agentUnavailable: {
    type: 'agent-unavailable',
    outcome: 'agent-unavailable',
    description: 'The loop needed an agent and none could start (the missing image or key named).',
  },
  needsDecision: {
    type: 'needs-decision',
    outcome: 'needs-decision',
    description: "An agent's question got an empty answer (a decision not to go on), or none within the recipe's limits.questions.wait.",
  },
  agentFailed: { type: 'agent-failed', outcome: 'failed', description: "The architect's session did not deliver an answer." },
  error: { type: 'error', outcome: 'failed', description: 'A failure the loop did not expect (the summary names it).' },
  cancelled: { type: 'cancelled', outcome: 'cancelled', description: 'The loop was cancelled.' },
} as const satisfies Record<string, { type: string; outcome: FixOutcome['outcome']; description: string }>;

type FixTable = typeof fixFailureTable;
export type FixFailureType = FixTable[keyof FixTable]['type'];

/** Name → type: `FixFailure.thrashing` is `'thrashing'`. */
export const FixFailure = Object.fromEntries(Object.entries(fixFailureTable).map(([name, row]) => [name, row.type])) as {
  readonly [Name in keyof FixTable]: FixTable[Name]['type'];
};

const fixRowByType = new Map<string, FixTable[keyof FixTable]>(Object.values(fixFailureTable).map((row) => [row.type, row]));

/** The outcome a fix loop ends with on `type`. */
export function fixOutcomeOf(type: FixFailureType): FixOutcome['outcome'] {
  return fixRowByType.get(type)!.outcome;
}
