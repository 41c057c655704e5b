import { resolve } from 'node:path';
import { isLocalPathText, parseRepoLocation } from '../../core/repo-location';
import { ExitCode, UsageError } from '../errors';
import { parseCommand, positionals, writeLines, type CliContext } from '../context';
import { watchRun } from './watch';

/**
 * A local path means a path on this machine: the API gets it absolute (it may run in another
 * directory). Then the API's own rules (core/repo-location.ts), so a refused location (a URL
 * with credentials above all) is refused here and never sent.
 */
export function repoArgument(repo: string, cwd: string): string {
  const parsed = parseRepoLocation(isLocalPathText(repo) ? resolve(cwd, repo) : repo);
  if (!parsed.ok) throw new UsageError(`repo ${parsed.problem}`);
  return parsed.canonical;
}

/** `--priority <n>`: a whole number -100..100 (the API's range), or a usage error naming the option. */
export function priorityArgument(text: string): number {
  if (!/^[+-]?(0|[1-9][0-9]{0,2})$/.test(text) || Math.abs(Number(text)) > 100)
    throw new UsageError(`land: --priority must be a whole number from -100 to 100, not "${text}"`);
  return Number(text);
}

/** `tarmac land <repo> <branch...> --onto <target> [--priority <n>] [--watch]` */
export async function landCommand(args: string[], context: CliContext): Promise<ExitCode> {
  const parsed = parseCommand('land', args, {
    onto: { type: 'string' },
    watch: { type: 'boolean' },
    logs: { type: 'boolean' },
    plain: { type: 'boolean' },
    json: { type: 'boolean' },
    fixer: { type: 'string' },
    resolver: { type: 'string' },
    priority: { type: 'string' },
  });
  const [repo, ...branches] = positionals('land', parsed.positionals, ['repo', 'branch'], true);
  const { onto, watch, json, fixer, resolver } = parsed.values;
  if (!onto) throw new UsageError('land: --onto <target> is required (the branch the landing fast-forwards)');
  const priority = parsed.values.priority === undefined ? undefined : priorityArgument(parsed.values.priority);
  if (json && watch) throw new UsageError('land: --json and --watch do not go together');
  if (!watch && (parsed.values.logs || parsed.values.plain)) throw new UsageError('land: --logs and --plain go with --watch');
  const client = context.client();
  const agents = { ...(fixer ? { fixer } : {}), ...(resolver ? { resolver } : {}) };
  const created = await client.createLanding({
    repo: repoArgument(repo!, context.cwd),
    branches,
    target: onto,
    ...(fixer || resolver ? { agents } : {}),
    ...(priority ? { priority } : {}),
  });
  if (json) {
    context.stdout.write(`${JSON.stringify(created, null, 2)}\n`);
    return ExitCode.ok;
  }
  const heads = created.heads.map((head) => `${head.branch}@${head.sha.slice(0, 7)}`).join(', ');
  writeLines(context.stdout, [
    created.duplicate
      ? `landing ${created.id} already exists for these heads (${heads} onto ${created.target}); not started again`
      : `landing ${created.id} started: ${heads} onto ${created.target}@${created.targetSha.slice(0, 7)}`,
    `  ${client.url(created.links.self)}`,
    ...(watch ? [] : [`  follow it with: tarmac watch ${created.id}`]),
    ...(created.duplicate ? [`  if it did not land, start it again with: tarmac retry ${created.id}`] : []),
  ]);
  if (!watch) return ExitCode.ok;
  return watchRun(context, created.id, 'landing', { logs: parsed.values.logs === true, plain: parsed.values.plain === true });
}
