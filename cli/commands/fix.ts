import type { FixOutcome } from '../../core/fix-types';
import { ExitCode, UsageError } from '../errors';
import { metersLine } from '../render';
import { parseCommand, positionals, writeLines, type CliContext } from '../context';
import { repoArgument } from './land';

/** Fix-loop outcomes that leave the branch in a good state (or answered the question). */
const goodOutcomes: readonly string[] = ['fixed', 'nothing-to-fix', 'answered'];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function isFixOutcome(value: unknown): value is FixOutcome {
  const record = value as Partial<FixOutcome> | null;
  return typeof record === 'object' && record !== null && typeof record.outcome === 'string' && typeof record.summary === 'string';
}

/** What a finished fix loop comes to; with the repo and branch, how to land its fixes. */
export function fixOutcomeLines(outcome: FixOutcome, landOnto?: { repo: string; branch: string }): string[] {
  const lines = [`outcome: ${outcome.outcome} — ${outcome.summary}`];
  if (outcome.fixBranch) lines.push(`fix branch: ${outcome.fixBranch}${landOnto ? `  (land it: tarmac land ${landOnto.repo} ${outcome.fixBranch} --onto ${landOnto.branch})` : ''}`);
  if (outcome.filesChanged?.length) lines.push(`files changed: ${outcome.filesChanged.join(', ')}`);
  if (outcome.reproCommand) {
    lines.push(`repro: ${outcome.reproCommand} → exit ${outcome.reproExitCode ?? 'none'}; repairs ${outcome.repairAttempts}${outcome.playbookUsed ? `; playbook ${outcome.playbookUsed}` : ''}`);
  }
  // Why this repro (or why none), and what was read to decide.
  if (outcome.reproReason) lines.push(`repro chosen${outcome.reproSource ? ` (from the ${outcome.reproSource === 'explicit' ? 'request\'s --repro' : outcome.reproSource === 'request' ? 'request\'s words' : 'repository'})` : ''}: ${outcome.reproReason}`);
  if (outcome.groundingFiles?.length) lines.push(`grounding files read: ${outcome.groundingFiles.join(', ')}`);
  if (outcome.meters) lines.push(`meters: ${metersLine(outcome.meters)}`);
  return lines;
}

/** `tarmac fix <repo> <branch> "<request>"`: a fix loop whose fixes land on a run-owned branch. */
export async function fixCommand(args: string[], context: CliContext): Promise<ExitCode> {
  const parsed = parseCommand('fix', args, {
    repro: { type: 'string' },
    'max-repairs': { type: 'string' },
    implementer: { type: 'string' },
    architect: { type: 'string' },
    wait: { type: 'boolean' },
    json: { type: 'boolean' },
  });
  const [repoText, branch, request] = positionals('fix', parsed.positionals, ['repo', 'branch', 'request']);
  const { repro, implementer, architect, wait, json } = parsed.values;
  const maxRepairsText = parsed.values['max-repairs'];
  if (maxRepairsText !== undefined && !/^(0|[1-9][0-9]?)$/.test(maxRepairsText)) throw new UsageError(`fix: --max-repairs must be a whole number 0-10, not "${maxRepairsText}"`);
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
        created.duplicate ? `fix loop ${created.id} already exists for this branch head and request; not started again` : `fix loop ${created.id} started on ${branch}`,
        `  ${client.url(created.links.self)}`,
      ]);
    }
    return ExitCode.ok;
  }
  if (!json) writeLines(context.stdout, [`fix loop ${created.id}${created.duplicate ? ' (already running or done)' : ' started'}; waiting for its outcome`]);
  for (;;) {
    const run = await client.run(created.id);
    if (run.workflowStatus !== 'RUNNING') {
      if (json) context.stdout.write(`${JSON.stringify(run, null, 2)}\n`);
      if (!isFixOutcome(run.result)) {
        if (!json) writeLines(context.stdout, [`outcome: none recorded (workflow ${run.workflowStatus})`]);
        return ExitCode.failed;
      }
      if (!json) writeLines(context.stdout, fixOutcomeLines(run.result, { repo: repoText!, branch: branch! }));
      return goodOutcomes.includes(run.result.outcome) ? ExitCode.ok : ExitCode.failed;
    }
    await sleep(1000);
  }
}
