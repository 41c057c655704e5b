import { executionStatuses } from '../../core/visibility-query';
import { ExitCode, UsageError } from '../errors';
import { runListLines } from '../render';
import { parseCommand, positionals, writeLines, type CliContext } from '../context';
import { repoArgument } from './land';

/** `running`, `Running`, `timed-out` → the execution status the API takes (`Running`, `TimedOut`). */
export function executionStatus(text: string): string | undefined {
  const key = text.replace(/[-_\s]/g, '').toLowerCase();
  return executionStatuses.find((status) => status.toLowerCase() === key);
}

/** `tarmac list [filters] [--json]`: runs newest first (GET /v1/runs). */
export async function listCommand(args: string[], context: CliContext): Promise<ExitCode> {
  const parsed = parseCommand('list', args, {
    kind: { type: 'string' },
    repo: { type: 'string' },
    target: { type: 'string' },
    branch: { type: 'string' },
    phase: { type: 'string' },
    outcome: { type: 'string' },
    status: { type: 'string' },
    limit: { type: 'string' },
    json: { type: 'boolean' },
  });
  positionals('list', parsed.positionals, []);
  const { kind, repo, target, branch, phase, outcome, limit, json } = parsed.values;
  let status: string | undefined;
  if (parsed.values.status !== undefined) {
    status = executionStatus(parsed.values.status);
    if (!status)
      throw new UsageError(`list: --status must be one of running, completed, failed, canceled, terminated, timed-out, not "${parsed.values.status}"`);
  }
  if (limit !== undefined && !/^[1-9][0-9]*$/.test(limit)) throw new UsageError(`list: --limit must be a whole number 1-200, not "${limit}"`);
  const runs = await context.client().listRuns({
    kind,
    ...(repo !== undefined ? { repo: repoArgument(repo, context.cwd) } : {}),
    target,
    branch,
    phase,
    outcome,
    status,
    ...(limit !== undefined ? { limit: Number(limit) } : {}),
  });
  if (json) context.stdout.write(`${JSON.stringify({ runs }, null, 2)}\n`);
  else writeLines(context.stdout, runListLines(runs));
  return ExitCode.ok;
}
