import { ExitCode } from '../errors';
import { queueLines, queueListLines } from '../render';
import { parseCommand, positionals, writeLines, type CliContext } from '../context';
import { repoArgument } from './land';

/**
 * `tarmac queue [<repo> <target>] [--json]`: one target's queue (GET /v1/queues/:repo/:target) —
 * who holds the target, the batch in flight, the waiting line with lanes and ETAs — or, without
 * arguments, every target queue that runs (GET /v1/queues).
 */
export async function queueCommand(args: string[], context: CliContext): Promise<ExitCode> {
  const parsed = parseCommand('queue', args, { json: { type: 'boolean' } });
  const json = parsed.values.json === true;
  const client = context.client();
  if (parsed.positionals.length === 0) {
    const queues = await client.queues();
    if (json) context.stdout.write(`${JSON.stringify({ queues }, null, 2)}\n`);
    else writeLines(context.stdout, queueListLines(queues));
    return ExitCode.ok;
  }
  const [repo, target] = positionals('queue', parsed.positionals, ['repo', 'target']);
  const view = await client.queue(repoArgument(repo!, context.cwd), target!);
  if (json) context.stdout.write(`${JSON.stringify(view, null, 2)}\n`);
  else writeLines(context.stdout, queueLines(view));
  return ExitCode.ok;
}
