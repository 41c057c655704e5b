import { endsAs, fixOutcomeOf, FailureCode, type Ends, type FixFailureType, type RunFailureCode } from '../core/failures';
import type { FixOutcome } from '../core/fix-types';
import type { Meters } from '../core/types';

/**
 * The protocol every run's record implements (landing, fix loop, nightly, agent session): the
 * phase it is in (`enter`), how it ends (`finish` with a status, `fail` with a failure of the
 * table), and what the status query shows. Each kind keeps what is its own (a landing's steps and
 * gates, a session's attempts and budget) in its record; this file is the one place that maps a
 * failure to the status a run ends with (core/failures.ts is the table).
 */

/** The status each kind of run ends with; a fix loop's comes from its own table (`fixFailureTable`). */
interface RunEnds extends Ends {
  readonly fix: FixOutcome['outcome'];
}
type RunKind = keyof RunEnds;

/** The failure codes of each kind's vocabulary. */
type FailureCodeOf<Kind extends RunKind> = Kind extends 'fix' ? FixFailureType : RunFailureCode;

/** The status a run of `kind` ends with when `code` ends it: the failure table's row. */
export function outcomeOf<Kind extends RunKind>(kind: Kind, code: FailureCodeOf<Kind>): RunEnds[Kind] {
  const status = kind === 'fix' ? fixOutcomeOf(code as FixFailureType) : endsAs(kind, code as RunFailureCode);
  return status as RunEnds[Kind];
}

/** Where in a file a failure points (a landing's gate file or environment), when it does. */
interface FailureDetail {
  field?: string;
  file?: string;
}

/** A run's meters before its first step (a landing's, a nightly's; a session counts its own). */
export function emptyMeters(): Meters {
  return { capsulesRun: 0, containersRun: 0, agentSessions: 0, inputTokens: 0, outputTokens: 0, costUsd: 0, wallTimeMs: 0 };
}

/** What failed, as an outcome records it: the failure type and its message. */
export interface RunFailure extends FailureDetail {
  type: string;
  message: string;
}

/**
 * The failure type and message of an error, read from its cause — or from the error itself when
 * it has no cause: a local activity's failure arrives as the ApplicationFailure the activity
 * threw, not wrapped in an ActivityFailure; a child workflow's as a ChildWorkflowFailure whose
 * cause is the child's own failure.
 */
export function causeOf(error: unknown): { type?: string; message: string } {
  const cause = (error as { cause?: { type?: string; message?: string } }).cause;
  const message = cause?.message ?? (error instanceof Error ? error.message : String(error));
  const type = cause ? cause.type : (error as { type?: string }).type;
  return { ...(type ? { type } : {}), message };
}

/** `causeOf`, with a type always: the cause's own, or `fallback` (by default TARMAC_INTERNAL). */
export function typedCauseOf(error: unknown, fallback: string = FailureCode.internal): RunFailure {
  const { type = fallback, message } = causeOf(error);
  return { type, message };
}

/**
 * A run's record: its phase and how it ends. `Kind` picks the failure vocabulary and the status
 * the table gives; `Extra` is what a kind's outcome takes beside its failure (a session's partial
 * outcome, a landing's failure fields).
 */
export abstract class RunRecord<Kind extends RunKind, Phase extends string, Outcome, Extra = never> {
  constructor(
    private readonly kind: Kind,
    public phase: Phase,
  ) {}

  /** Enters a phase: the record's phase, then whatever the kind announces (journal, search attribute, log, metric). */
  enter(phase: Phase): void {
    const from = this.phase;
    this.phase = phase;
    this.entered(phase, from);
  }

  /**
   * Ends the run on a failure of its vocabulary, with the status the failure table gives it. The
   * recorded type is `code`, or the cause's own (`cause.type`: a child's or an activity's) when it has one.
   */
  fail(code: FailureCodeOf<Kind>, summary: string, cause: { type?: string; message?: string } & FailureDetail = {}, extra?: Extra): Outcome {
    const { type = code, message = summary, ...detail } = cause;
    return this.finish(outcomeOf(this.kind, code), summary, { type, message, ...detail }, extra);
  }

  /** Ends the run with `status`: builds the outcome from the record. */
  abstract finish(status: RunEnds[Kind], summary: string, failure?: RunFailure, extra?: Extra): Outcome;

  /** What entering a phase announces beyond the record; nothing by default. */
  protected entered(_phase: Phase, _from: Phase): void {}
}
