import { ExitCode, UsageError } from '../errors';
import { parseCommand, positionals, writeLines, type CliContext } from '../context';
import { watchRun } from './watch';

/** `tarmac retry <id> [--watch]`: a landing that did not land, started again on the same heads under a new id. */
export async function retryCommand(args: string[], context: CliContext): Promise<ExitCode> {
  const parsed = parseCommand('retry', args, { watch: { type: 'boolean' }, logs: { type: 'boolean' }, plain: { type: 'boolean' }, json: { type: 'boolean' } });
  const [id] = positionals('retry', parsed.positionals, ['id']);
  if (parsed.values.json && parsed.values.watch) throw new UsageError('retry: --json and --watch do not go together');
  if (!parsed.values.watch && (parsed.values.logs || parsed.values.plain)) throw new UsageError('retry: --logs and --plain go with --watch');
  const client = context.client();
  const retried = await client.retry(id!);
  if (parsed.values.json) {
    context.stdout.write(`${JSON.stringify(retried, null, 2)}\n`);
    return ExitCode.ok;
  }
  const heads = retried.heads.map((head) => `${head.branch}@${head.sha.slice(0, 7)}`).join(', ');
  writeLines(context.stdout, [
    retried.duplicate
      ? `retry ${retried.id} of ${retried.retryOf} already exists (attempt ${retried.attempt}); not started again (if it did not land either: tarmac retry ${retried.id})`
      : `landing ${retried.id} started: attempt ${retried.attempt} of ${heads} onto ${retried.target}@${retried.targetSha.slice(0, 7)} (retries ${retried.retryOf}, which keeps its history)`,
    `  ${client.url(retried.links.self)}`,
    ...(parsed.values.watch ? [] : [`  follow it with: tarmac watch ${retried.id}`]),
  ]);
  if (!parsed.values.watch) return ExitCode.ok;
  return watchRun(context, retried.id, 'landing', { logs: parsed.values.logs === true, plain: parsed.values.plain === true });
}
