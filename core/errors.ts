/**
 * The closed vocabulary of failures. Activities wrap these in
 * `ApplicationFailure.create({ type, nonRetryable })`; workflows branch on `type`
 * in an exhaustive switch; the API maps its own subset onto HTTP status codes.
 */
export const FailureType = {
  /** The target's `.config/tarmac/land-gate.json` is missing or invalid. */
  invalidGateFile: 'TARMAC_INVALID_GATE_FILE',
  /** The repository could not be read (missing path, unreachable URL). */
  repoUnreachable: 'TARMAC_REPO_UNREACHABLE',
  /** A branch, target or recorded SHA does not exist in the repository. */
  refNotFound: 'TARMAC_REF_NOT_FOUND',
  /** A gate or agent image is not present on the Docker host. */
  imageMissing: 'TARMAC_IMAGE_MISSING',
  /** The target branch moved since the landing was gated. */
  targetMoved: 'TARMAC_TARGET_MOVED',
  /** The branch is not a descendant of the target head (rebase needed). */
  notFastForward: 'TARMAC_NOT_FAST_FORWARD',
  /** A harness#model is not in the registry (the message names the nearest known ones). */
  unknownModel: 'TARMAC_UNKNOWN_MODEL',
  /** A harness#model no worker can run: its image is not built or its provider's key is not set (named). */
  agentUnavailable: 'TARMAC_AGENT_UNAVAILABLE',
  /** A request (session, limits, budget) is invalid; the message names the field. */
  invalidRequest: 'TARMAC_INVALID_REQUEST',
  /** The run's manifest is missing or unreadable. */
  manifestInvalid: 'TARMAC_MANIFEST_INVALID',
  /** The run's budget is spent and it was told to stop (recipe `onExhausted: stop`, or an operator). */
  budgetExhausted: 'TARMAC_BUDGET_EXHAUSTED',
} as const;

export type FailureType = (typeof FailureType)[keyof typeof FailureType];

export function isFailureType(value: unknown): value is FailureType {
  return typeof value === 'string' && (Object.values(FailureType) as string[]).includes(value);
}

/** Codes of the HTTP error shape `{ error: { code, message, details? } }`. */
export const ApiErrorCode = {
  validation: 'TARMAC_VALIDATION',
  unknownModel: 'TARMAC_UNKNOWN_MODEL',
  agentUnavailable: 'TARMAC_AGENT_UNAVAILABLE',
  unauthorized: 'TARMAC_UNAUTHORIZED',
  notFound: 'TARMAC_NOT_FOUND',
  methodNotAllowed: 'TARMAC_METHOD_NOT_ALLOWED',
  conflict: 'TARMAC_CONFLICT',
  rateLimited: 'TARMAC_RATE_LIMITED',
  unavailable: 'TARMAC_UNAVAILABLE',
  internal: 'TARMAC_INTERNAL',
} as const;

export type ApiErrorCode = (typeof ApiErrorCode)[keyof typeof ApiErrorCode];
