import { parseDuration } from '../../core/duration';
import type { BudgetCommand } from '../client';
import { ExitCode, UsageError } from '../errors';
import { formatCount, formatDuration } from '../render';
import { parseCommand, positionals, writeLines, type CliContext } from '../context';

const wholeNumber = (option: string, text: string | undefined): number | undefined => {
  if (text === undefined) return undefined;
  if (!/^[1-9][0-9]*$/.test(text)) throw new UsageError(`budget: --${option} must be a whole number above 0, not "${text}"`);
  return Number(text);
};

/** The command the options ask for; a usage error naming the option that is wrong. */
export function budgetCommandOf(action: string, values: { tokens?: string; 'cost-usd'?: string; sessions?: string; wall?: string }): BudgetCommand {
  const given = Object.entries(values).filter(([, value]) => value !== undefined);
  if (action === 'stop') {
    if (given.length > 0) throw new UsageError(`budget: stop takes no amounts (--${given[0]![0]})`);
    return { action: 'stop' };
  }
  if (action !== 'extend') throw new UsageError(`budget: the action is extend or stop, not "${action}"`);
  if (given.length === 0) throw new UsageError('budget: extend needs at least one of --tokens, --cost-usd, --sessions, --wall');
  const costText = values['cost-usd'];
  let costUsd: number | undefined;
  if (costText !== undefined) {
    costUsd = Number(costText);
    if (!/^[0-9]+(\.[0-9]+)?$/.test(costText) || costUsd < 0.01)
      throw new UsageError(`budget: --cost-usd must be US dollars, at least 0.01, not "${costText}"`);
  }
  let wallMs: number | undefined;
  if (values.wall !== undefined) {
    wallMs = parseDuration(values.wall);
    if (!wallMs) throw new UsageError(`budget: --wall must be a duration above 0 (500ms, 30s, 10m, 2h), not "${values.wall}"`);
  }
  const tokens = wholeNumber('tokens', values.tokens);
  const sessions = wholeNumber('sessions', values.sessions);
  return {
    action: 'extend',
    ...(tokens !== undefined ? { tokens } : {}),
    ...(costUsd !== undefined ? { costUsd } : {}),
    ...(sessions !== undefined ? { sessions } : {}),
    ...(wallMs !== undefined ? { wallMs } : {}),
  };
}

/** What an extension adds, e.g. `+10k tokens, +$1.00`. */
function additions(command: Extract<BudgetCommand, { action: 'extend' }>): string {
  return [
    command.tokens !== undefined ? `+${formatCount(command.tokens)} tokens` : undefined,
    command.costUsd !== undefined ? `+$${command.costUsd.toFixed(2)}` : undefined,
    command.sessions !== undefined ? `+${command.sessions} sessions` : undefined,
    command.wallMs !== undefined ? `+${formatDuration(command.wallMs)} wall time` : undefined,
  ]
    .filter(Boolean)
    .join(', ');
}

/** `tarmac budget <id> extend … | stop` (POST /v1/runs/:id/budget): a run paused for its budget goes on, or ends. */
export async function budgetCommand(args: string[], context: CliContext): Promise<ExitCode> {
  const parsed = parseCommand('budget', args, {
    tokens: { type: 'string' },
    'cost-usd': { type: 'string' },
    sessions: { type: 'string' },
    wall: { type: 'string' },
  });
  const [id, action] = positionals('budget', parsed.positionals, ['id', 'extend|stop']);
  const command = budgetCommandOf(action!, parsed.values);
  const answer = await context.client().budget(id!, command);
  if (!answer.accepted) {
    writeLines(context.stderr, [`tarmac: run ${id} did not accept the budget command`]);
    return ExitCode.failed;
  }
  writeLines(context.stdout, [
    command.action === 'stop' ? `stop accepted: run ${id} ends budget-exhausted` : `budget of ${id} extended (${additions(command)}): the run goes on`,
  ]);
  return ExitCode.ok;
}
