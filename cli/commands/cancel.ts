import { ExitCode } from '../errors';
import { parseCommand, positionals, writeLines, type CliContext } from '../context';

/** `tarmac cancel <id>`: the run's containers stop, cleanup runs, the outcome is `cancelled`. */
export async function cancelCommand(args: string[], context: CliContext): Promise<ExitCode> {
  const parsed = parseCommand('cancel', args, {});
  const [id] = positionals('cancel', parsed.positionals, ['id']);
  await context.client().cancel(id!);
  writeLines(context.stdout, [
    `cancel requested for ${id}: its containers stop, cleanup runs, and the outcome will be cancelled`,
    `  see it with: tarmac status ${id}`,
  ]);
  return ExitCode.ok;
}
