import type { Meters } from '../../core/types';
import type { TarmacClient } from '../client';
import { CliError, ExitCode } from '../errors';
import { LineDisplay, SilentDisplay, TtyDisplay, type Display } from '../display';
import { fixOutcomeLines, goodFixOutcomes, isFixOutcome, isPanelVerdict, outcomeLines, verdictLines } from '../render';
import { streamRunEvents } from '../sse';
import { applyEvent, decodeEvent, initialWatchState, isReplay, type WatchState } from '../watch-state';
import { parseCommand, positionals, writeLines, type CliContext } from '../context';

interface WatchOptions {
  /** Plain lines also on a terminal. */
  plain?: boolean;
  /** Print runner log lines in plain mode too. */
  logs?: boolean;
  /** Show nothing while following (`--json`: only the record at the end). */
  silent?: boolean;
}

/** The runs with an event stream, by what the API calls their workflow type. */
type WatchedKind = 'landing' | 'review-panel' | 'fix-loop';
const kindOfWorkflowType: Record<string, WatchedKind> = { landing: 'landing', reviewPanel: 'review-panel', fixLoop: 'fix-loop' };

/** What kind of run `id` is (one request); a run without an event stream is refused, naming what it is. */
async function watchedKind(client: TarmacClient, id: string): Promise<WatchedKind> {
  const run = await client.run(id);
  const kind = kindOfWorkflowType[run.type];
  if (!kind)
    throw new CliError(
      `run ${id} is a ${run.type} run, which has no event stream (landings, review panels and fix loops do); see it with: tarmac status ${id}`,
      ExitCode.usage,
    );
  return kind;
}

/**
 * Follows a run's event stream (GET /v1/runs/:id/events) to its `end`, showing it as it goes:
 * redrawn in place on a terminal, one line per event elsewhere. A dropped connection resumes
 * after the last event received. Returns what the events came to.
 */
export async function followRun(context: CliContext, id: string, options: WatchOptions = {}): Promise<WatchState> {
  const client = context.client();
  const display: Display = options.silent
    ? new SilentDisplay()
    : context.stdout.isTTY && !options.plain
      ? new TtyDisplay(context.stdout)
      : new LineDisplay(context.stdout, context.stderr, { logs: options.logs ?? false });
  let state = initialWatchState(id);
  // Plain output without --logs prints no log line: the server need not send them.
  const wantsLogs = display instanceof TtyDisplay || options.logs === true;
  await streamRunEvents(client, `/v1/runs/${encodeURIComponent(id)}/events${wantsLogs ? '' : '?logs=false'}`, {
    onMessage(message) {
      const event = decodeEvent(message);
      if (!event || isReplay(state, event)) return;
      state = applyEvent(state, event);
      display.update(state, event);
    },
    onReconnect(attempt, lastEventId, reason) {
      display.note(`event stream interrupted (${reason}); reconnecting, attempt ${attempt}${lastEventId ? `, after event ${lastEventId}` : ''}`);
    },
  });
  display.finish(state);
  return state;
}

interface WatchRunOptions extends WatchOptions {
  /** A fix loop's repo and branch, to print how to land its fix branch. */
  landOnto?: { repo: string; branch: string };
}

/**
 * Follows a run to its end and prints what it came to. Exit 0 when a landing landed, a panel
 * approved, a fix loop fixed (or found nothing to fix, or answered); 1 for any other end.
 */
export async function watchRun(context: CliContext, id: string, kind: WatchedKind, options: WatchRunOptions = {}): Promise<ExitCode> {
  const state = await followRun(context, id, options);
  const client = context.client();
  if (kind === 'landing') return await landingEnd(context, id, state);
  // A panel's and a fix loop's whole record is their result.
  const run = await client.run(id);
  if (kind === 'review-panel') {
    if (!isPanelVerdict(run.result)) return noOutcome(context, run.workflowStatus);
    writeLines(context.stdout, verdictLines(run.result));
    return run.result.status === 'approved' ? ExitCode.ok : ExitCode.failed;
  }
  if (!isFixOutcome(run.result)) return noOutcome(context, run.workflowStatus);
  writeLines(context.stdout, fixOutcomeLines(run.result, options.landOnto));
  return goodFixOutcomes.includes(run.result.outcome) ? ExitCode.ok : ExitCode.failed;
}

function noOutcome(context: CliContext, workflowStatus: string): ExitCode {
  writeLines(context.stdout, [`outcome: none recorded (workflow ${workflowStatus})`]);
  return ExitCode.failed;
}

async function landingEnd(context: CliContext, id: string, state: WatchState): Promise<ExitCode> {
  let outcome = state.outcome;
  // The latest meters event counts the finale too (the outcome's meters are taken just before it).
  let meters: Partial<Meters> | undefined = state.meters ?? state.outcome?.meters;
  let workflowStatus = state.end?.workflowStatus;
  if (!state.end?.outcome) {
    // An end without an outcome (a run that failed or was terminated): ask the landing's record.
    const view = await context
      .client()
      .landing(id)
      .catch(() => undefined);
    if (view?.outcome) outcome = view.outcome;
    meters ??= view?.meters;
    workflowStatus ??= view?.workflowStatus;
  }
  writeLines(context.stdout, outcomeLines(outcome, meters, workflowStatus));
  return outcome?.status === 'landed' ? ExitCode.ok : ExitCode.failed;
}

/** `tarmac watch <id>`: any run with an event stream, to its end. */
export async function watchCommand(args: string[], context: CliContext): Promise<ExitCode> {
  const parsed = parseCommand('watch', args, { logs: { type: 'boolean' }, plain: { type: 'boolean' } });
  const [id] = positionals('watch', parsed.positionals, ['id']);
  const kind = await watchedKind(context.client(), id!);
  return watchRun(context, id!, kind, { logs: parsed.values.logs === true, plain: parsed.values.plain === true });
}
