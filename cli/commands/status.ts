import { ExitCode } from '../errors';
import { statusLines } from '../render';
import { parseCommand, positionals, writeLines, type CliContext } from '../context';

/** `tarmac status <id> [--json]`: the landing as the API sees it now. */
export async function statusCommand(args: string[], context: CliContext): Promise<ExitCode> {
  const parsed = parseCommand('status', args, { json: { type: 'boolean' } });
  const [id] = positionals('status', parsed.positionals, ['id']);
  const view = await context.client().landing(id!);
  if (parsed.values.json) context.stdout.write(`${JSON.stringify(view, null, 2)}\n`);
  else writeLines(context.stdout, statusLines(view));
  return ExitCode.ok;
}
