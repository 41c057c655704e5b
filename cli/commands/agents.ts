import type { AgentsView } from '../client';
import { ExitCode } from '../errors';
import { parseCommand, positionals, writeLines, type CliContext } from '../context';

/** Per worker: a heading, the notice (when the defaults cannot run there), one line per harness#model. */
function agentLines(view: AgentsView): string[] {
  if (view.workers.length === 0) return ['no worker has reported yet (a worker reports at start and every minute)'];
  const width = Math.max(...view.workers.flatMap((worker) => worker.agents.map((agent) => agent.harnessModel.length)));
  return view.workers.flatMap((worker) => [
    `worker ${worker.hostId} (reported ${worker.at}${worker.fresh ? '' : ', stale: not evidence'})`,
    ...(worker.notice ? [`  ! ${worker.notice}`] : []),
    ...worker.agents.map(
      (agent) =>
        `  ${agent.runnable ? '✓' : '✗'} ${agent.harnessModel.padEnd(width)}  ${agent.runnable ? '' : `${agent.reason ?? 'cannot run'} · `}${agent.usedBy.join(', ')}`,
    ),
  ]);
}

/** `tarmac agents [--json]` (GET /v1/agents). */
export async function agentsCommand(args: string[], context: CliContext): Promise<ExitCode> {
  const parsed = parseCommand('agents', args, { json: { type: 'boolean' } });
  positionals('agents', parsed.positionals, []);
  const view = await context.client().agents();
  if (parsed.values.json) context.stdout.write(`${JSON.stringify(view, null, 2)}\n`);
  else writeLines(context.stdout, agentLines(view));
  return ExitCode.ok;
}
