import { ExitCode, UsageError } from '../errors';
import { parseCommand, positionals, writeLines, type CliContext } from '../context';
import { repoArgument } from './land';
import { watchRun } from './watch';

/** `tarmac review <repo> <head> --base <branch> --panel <name>`: a review panel on its own (POST /v1/reviews). */
export async function reviewCommand(args: string[], context: CliContext): Promise<ExitCode> {
  const parsed = parseCommand('review', args, {
    base: { type: 'string' },
    panel: { type: 'string' },
    quorum: { type: 'string' },
    watch: { type: 'boolean' },
    logs: { type: 'boolean' },
    plain: { type: 'boolean' },
    json: { type: 'boolean' },
  });
  const [repo, head] = positionals('review', parsed.positionals, ['repo', 'head']);
  const { base, panel, quorum, watch, json } = parsed.values;
  if (!base) throw new UsageError('review: --base <branch> is required (the branch the change is reviewed against)');
  if (!panel) throw new UsageError('review: --panel <name> is required (a panel of recipes/panels.json; GET /v1/recipes lists them)');
  if (quorum !== undefined && !/^[1-9][0-9]?$/.test(quorum)) throw new UsageError(`review: --quorum must be a whole number 1-12, not "${quorum}"`);
  if (json && watch) throw new UsageError('review: --json and --watch do not go together');
  if (!watch && (parsed.values.logs || parsed.values.plain)) throw new UsageError('review: --logs and --plain go with --watch');
  const client = context.client();
  const created = await client.createReview({
    repo: repoArgument(repo!, context.cwd),
    base,
    head: head!,
    panel,
    ...(quorum !== undefined ? { quorum: Number(quorum) } : {}),
  });
  if (json) {
    context.stdout.write(`${JSON.stringify(created, null, 2)}\n`);
    return ExitCode.ok;
  }
  writeLines(context.stdout, [
    created.duplicate
      ? `review panel ${created.id} already exists for this tree and panel; not started again`
      : `review panel ${created.id} started: ${head} against ${base}, panel ${panel}`,
    `  ${client.url(created.links.self)}`,
    ...(watch ? [] : [`  follow it with: tarmac watch ${created.id}`]),
  ]);
  if (!watch) return ExitCode.ok;
  return watchRun(context, created.id, 'review-panel', { logs: parsed.values.logs === true, plain: parsed.values.plain === true });
}
