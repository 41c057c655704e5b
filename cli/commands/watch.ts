import type { Meters } from '../../core/types';
import { ExitCode } from '../errors';
import { LineDisplay, TtyDisplay, type Display } from '../display';
import { outcomeLines } from '../render';
import { streamRunEvents } from '../sse';
import { applyEvent, decodeEvent, initialWatchState, isReplay } from '../watch-state';
import { parseCommand, positionals, writeLines, type CliContext } from '../context';

export interface WatchOptions {
  /** Plain lines also on a terminal. */
  plain?: boolean;
  /** Print runner log lines in plain mode too. */
  logs?: boolean;
}

/**
 * Follows a landing's event stream to its end and prints the outcome.
 * Exit 0 only when it landed; 1 with the outcome summary for any other end.
 */
export async function watchLanding(context: CliContext, id: string, options: WatchOptions = {}): Promise<ExitCode> {
  const client = context.client();
  const display: Display =
    context.stdout.isTTY && !options.plain ? new TtyDisplay(context.stdout) : new LineDisplay(context.stdout, context.stderr, { logs: options.logs ?? false });
  let state = initialWatchState(id);
  const tty = display instanceof TtyDisplay;
  // Plain output without --logs prints no log line: the server need not send them.
  const path = `/v1/landings/${encodeURIComponent(id)}/events${tty || options.logs ? '' : '?logs=false'}`;
  await streamRunEvents(client, path, {
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
  let outcome = state.outcome;
  // The latest meters event counts the finale too (the outcome's meters are taken just before it).
  let meters: Partial<Meters> | undefined = state.meters ?? state.outcome?.meters;
  let workflowStatus = state.end?.workflowStatus;
  if (!state.end?.outcome) {
    // An end without an outcome (a run that failed or was terminated): ask the landing's record.
    const view = await client.landing(id).catch(() => undefined);
    if (view?.outcome) outcome = view.outcome;
    meters ??= view?.meters;
    workflowStatus ??= view?.workflowStatus;
  }
  writeLines(context.stdout, outcomeLines(outcome, meters, workflowStatus));
  return outcome?.status === 'landed' ? ExitCode.ok : ExitCode.failed;
}

export async function watchCommand(args: string[], context: CliContext): Promise<ExitCode> {
  const parsed = parseCommand('watch', args, { logs: { type: 'boolean' }, plain: { type: 'boolean' } });
  const [id] = positionals('watch', parsed.positionals, ['id']);
  return watchLanding(context, id!, { logs: parsed.values.logs === true, plain: parsed.values.plain === true });
}
