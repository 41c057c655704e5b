import { ExitCode, UsageError } from '../errors';
import { goodFixOutcomes, isFixOutcome } from '../render';
import { parseCommand, positionals, writeLines, type CliContext } from '../context';
import { repoArgument } from './land';
import { followRun, watchRun } from './watch';

/** `tarmac fix <repo> <branch> "<request>"`: a fix loop whose fixes land on a run-owned branch. */
export async function fixCommand(args: string[], context: CliContext): Promise<ExitCode> {
  const parsed = parseCommand('fix', args, {
    repro: { type: 'string' },
    'max-repairs': { type: 'string' },
    implementer: { type: 'string' },
    architect: { type: 'string' },
    wait: { type: 'boolean' },
    logs: { type: 'boolean' },
    plain: { type: 'boolean' },
    json: { type: 'boolean' },
  });
  const [repoText, branch, request] = positionals('fix', parsed.positionals, ['repo', 'branch', 'request']);
  const { repro, implementer, architect, wait, json } = parsed.values;
  const maxRepairsText = parsed.values['max-repairs'];
  if (maxRepairsText !== undefined && !/^(0|[1-9][0-9]?)$/.test(maxRepairsText))
    throw new UsageError(`fix: --max-repairs must be a whole number 0-10, not "${maxRepairsText}"`);
  if (!wait && (parsed.values.logs || parsed.values.plain)) throw new UsageError('fix: --logs and --plain go with --wait');
  const client = context.client();
  const repo = repoArgument(repoText!, context.cwd);
  const agents = { ...(implementer ? { implementer } : {}), ...(architect ? { architect } : {}) };
  const created = await client.createFixLoop({
    repo,
    branch: branch!,
    request: request!,
    ...(repro ? { reproCommand: repro } : {}),
    ...(maxRepairsText !== undefined ? { maxRepairs: Number(maxRepairsText) } : {}),
    ...(implementer || architect ? { agents } : {}),
  });
  if (!wait) {
    if (json) context.stdout.write(`${JSON.stringify(created, null, 2)}\n`);
    else {
      writeLines(context.stdout, [
        created.duplicate
          ? `fix loop ${created.id} already exists for this branch head and request; not started again`
          : `fix loop ${created.id} started on ${branch}`,
        `  ${client.url(created.links.self)}`,
        `  follow it with: tarmac watch ${created.id}`,
      ]);
    }
    return ExitCode.ok;
  }
  // Waiting is following the run's event stream to its end (no polling).
  if (json) {
    await followRun(context, created.id, { silent: true });
    const run = await client.run(created.id);
    context.stdout.write(`${JSON.stringify(run, null, 2)}\n`);
    return isFixOutcome(run.result) && goodFixOutcomes.includes(run.result.outcome) ? ExitCode.ok : ExitCode.failed;
  }
  writeLines(context.stdout, [`fix loop ${created.id}${created.duplicate ? ' (already running or done)' : ' started'}; waiting for its outcome`]);
  return watchRun(context, created.id, 'fix-loop', {
    logs: parsed.values.logs === true,
    plain: parsed.values.plain === true,
    landOnto: { repo: repoText!, branch: branch! },
  });
}
