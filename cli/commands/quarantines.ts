import type { QuarantineView } from '../client';
import { ExitCode, UsageError } from '../errors';
import { parseCommand, positionals, writeLines, type CliContext } from '../context';
import { repoArgument } from './land';

/** One line per quarantine: the suite, where, until when, why and which landing's evidence. */
function quarantineLines(quarantines: readonly QuarantineView[]): string[] {
  if (quarantines.length === 0) return ['no suite is quarantined'];
  return quarantines.map(
    (entry) =>
      `${entry.suiteId}  ${entry.target} of ${entry.repo}  until ${entry.until}  ${entry.settled} (tree ${entry.treeSha.slice(0, 12)}, ${entry.landingId})`,
  );
}

/** `tarmac quarantines [--repo] [--target] [--json]` and `tarmac quarantines lift <suite> --repo --target` (/v1/quarantines). */
export async function quarantinesCommand(args: string[], context: CliContext): Promise<ExitCode> {
  if (args[0] === 'lift') {
    const parsed = parseCommand('quarantines lift', args.slice(1), { repo: { type: 'string' }, target: { type: 'string' } });
    const [suiteId] = positionals('quarantines lift', parsed.positionals, ['suite']);
    const { repo, target } = parsed.values;
    if (repo === undefined) throw new UsageError('quarantines lift: --repo is required');
    if (target === undefined) throw new UsageError('quarantines lift: --target is required');
    const lifted = await context.client().liftQuarantine(suiteId!, repoArgument(repo, context.cwd), target);
    writeLines(context.stdout, [`quarantine of ${lifted.suiteId} on ${lifted.target} lifted: its red blocks landings again`]);
    return ExitCode.ok;
  }
  const parsed = parseCommand('quarantines', args, { repo: { type: 'string' }, target: { type: 'string' }, json: { type: 'boolean' } });
  positionals('quarantines', parsed.positionals, []);
  const { repo, target, json } = parsed.values;
  const quarantines = await context
    .client()
    .quarantines({ ...(repo !== undefined ? { repo: repoArgument(repo, context.cwd) } : {}), ...(target !== undefined ? { target } : {}) });
  if (json) context.stdout.write(`${JSON.stringify({ quarantines }, null, 2)}\n`);
  else writeLines(context.stdout, quarantineLines(quarantines));
  return ExitCode.ok;
}
