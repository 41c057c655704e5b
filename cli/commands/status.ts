import { ExitCode } from '../errors';
import { batchOutcomeLines, fixOutcomeLines, isBatchOutcome, isFixOutcome, isPanelVerdict, statusLines, verdictLines } from '../render';
import { parseCommand, positionals, writeLines, type CliContext } from '../context';

/**
 * `tarmac status <id> [--json]`: a run as the API sees it now. A landing shows its whole view
 * (GET /v1/landings/:id); a review panel its verdict, a fix loop its outcome, a merge batch its
 * members' results, gate rounds and fast-forwards; any other run its workflow status.
 */
export async function statusCommand(args: string[], context: CliContext): Promise<ExitCode> {
  const parsed = parseCommand('status', args, { json: { type: 'boolean' } });
  const [id] = positionals('status', parsed.positionals, ['id']);
  const client = context.client();
  // What kind of run it is: a landing's own view has more than any run's status.
  const run = await client.run(id!);
  if (run.type === 'landing') {
    const view = await client.landing(id!);
    if (parsed.values.json) context.stdout.write(`${JSON.stringify(view, null, 2)}\n`);
    else writeLines(context.stdout, statusLines(view));
    return ExitCode.ok;
  }
  if (parsed.values.json) {
    context.stdout.write(`${JSON.stringify(run, null, 2)}\n`);
    return ExitCode.ok;
  }
  const what =
    { fixLoop: 'fix loop', reviewPanel: 'review panel', landing: 'landing', nightly: 'nightly', agentSession: 'agent session', mergeBatch: 'merge batch' }[
      run.type
    ] ?? run.type;
  const lines = [`${run.id}  ${run.workflowStatus}  ${what}`];
  if (isFixOutcome(run.result)) lines.push(...fixOutcomeLines(run.result));
  else if (isPanelVerdict(run.result)) lines.push(...verdictLines(run.result));
  else if (isBatchOutcome(run.result)) lines.push(...batchOutcomeLines(run.result));
  // A batch keeps no journal: its status query says what it does; its target's queue shows the line behind it.
  else if (run.workflowStatus === 'RUNNING' && run.type === 'mergeBatch') {
    const status = run.status as { state?: string; rounds?: unknown[]; members?: string[] } | null;
    const now = status?.state ? `: ${status.state}, ${status.rounds?.length ?? 0} round(s) gated, ${status.members?.length ?? 0} member(s)` : '';
    lines.push(`  in flight${now}; \`tarmac queue <repo> <target>\` shows the line behind it`);
  } else if (run.workflowStatus === 'RUNNING') lines.push(`  follow it with: tarmac watch ${run.id}`);
  writeLines(context.stdout, lines);
  return ExitCode.ok;
}
