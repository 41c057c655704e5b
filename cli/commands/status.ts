import { ExitCode } from '../errors';
import { statusLines } from '../render';
import { parseCommand, positionals, writeLines, type CliContext } from '../context';
import { fixOutcomeLines, isFixOutcome } from './fix';

/** `tarmac status <id> [--json]`: a landing as the API sees it now; also a fix loop (the id `tarmac fix` printed). */
export async function statusCommand(args: string[], context: CliContext): Promise<ExitCode> {
  const parsed = parseCommand('status', args, { json: { type: 'boolean' } });
  const [id] = positionals('status', parsed.positionals, ['id']);
  const client = context.client();
  if (id!.startsWith('fix.')) {
    const run = await client.run(id!);
    if (parsed.values.json) context.stdout.write(`${JSON.stringify(run, null, 2)}\n`);
    else writeLines(context.stdout, [`${run.id}  ${run.workflowStatus}  fix loop`, ...(isFixOutcome(run.result) ? fixOutcomeLines(run.result) : [])]);
    return ExitCode.ok;
  }
  const view = await client.landing(id!);
  if (parsed.values.json) context.stdout.write(`${JSON.stringify(view, null, 2)}\n`);
  else writeLines(context.stdout, statusLines(view));
  return ExitCode.ok;
}
