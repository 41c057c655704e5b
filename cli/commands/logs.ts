import { ExitCode } from '../errors';
import { streamRunEvents } from '../sse';
import { decodeEvent } from '../watch-state';
import { parseCommand, positionals, writeLines, type CliContext } from '../context';

/**
 * `tarmac logs <id>`: the run's runner log lines (its gates' and agents' containers), from the
 * start, following them until the run ends. They come from the run's event stream (its `log`
 * events; GET /v1/runs/:id/events), so a dropped connection resumes with no line lost or repeated.
 */
export async function logsCommand(args: string[], context: CliContext): Promise<ExitCode> {
  const parsed = parseCommand('logs', args, {});
  const [id] = positionals('logs', parsed.positionals, ['id']);
  await streamRunEvents(context.client(), `/v1/runs/${encodeURIComponent(id!)}/events`, {
    onMessage(message) {
      if (message.event !== 'log') return;
      const event = decodeEvent(message);
      if (event?.kind === 'log') writeLines(context.stdout, [`${event.file}: ${event.line}`]);
    },
    onReconnect(attempt, lastEventId, reason) {
      context.stderr.write(
        `tarmac: event stream interrupted (${reason}); reconnecting, attempt ${attempt}${lastEventId ? `, after event ${lastEventId}` : ''}\n`,
      );
    },
  });
  return ExitCode.ok;
}
