/**
 * How the CLI fails: every error carries the exit code the user's shell sees.
 * 2 = the command line or the request was wrong (fix the input); 1 = anything else.
 */
export const ExitCode = { ok: 0, failed: 1, usage: 2 } as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode = ExitCode.failed,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** A bad command line: the message, then the usage text. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, ExitCode.usage);
    this.name = 'UsageError';
  }
}

/** An error answer of the API: `{ error: { code, message, details? } }` with its HTTP status. */
export class ApiCallError extends CliError {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    // 4xx means the request was wrong (unknown id, bad branch, not running): the user fixes the input.
    super(`${code}: ${message}`, status >= 400 && status < 500 ? ExitCode.usage : ExitCode.failed);
    this.name = 'ApiCallError';
  }
}
