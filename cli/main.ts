/**
 * The client half of `tarmac`: commands that talk to the REST API. `bin/tarmac.ts`
 * hands these commands here; `runCli` returns the exit code and never throws.
 */
import { createContext, type CliContext } from './context';
import type { Output } from './display';
import { CliError, ExitCode } from './errors';
import { commandUsage, isDocumentedCommand, usage } from './usage';
import { agentsCommand } from './commands/agents';
import { answerCommand } from './commands/answer';
import { budgetCommand } from './commands/budget';
import { cancelCommand } from './commands/cancel';
import { environmentsCommand } from './commands/environments';
import { fixCommand } from './commands/fix';
import { landCommand } from './commands/land';
import { listCommand } from './commands/list';
import { logsCommand } from './commands/logs';
import { queueCommand } from './commands/queue';
import { retryCommand } from './commands/retry';
import { reviewCommand } from './commands/review';
import { scheduleCommand } from './commands/schedule';
import { quarantinesCommand } from './commands/quarantines';
import { statusCommand } from './commands/status';
import { watchCommand } from './commands/watch';

const commands = {
  land: landCommand,
  list: listCommand,
  status: statusCommand,
  watch: watchCommand,
  logs: logsCommand,
  answer: answerCommand,
  cancel: cancelCommand,
  retry: retryCommand,
  budget: budgetCommand,
  review: reviewCommand,
  fix: fixCommand,
  schedule: scheduleCommand,
  queue: queueCommand,
  quarantines: quarantinesCommand,
  environments: environmentsCommand,
  agents: agentsCommand,
} as const satisfies Record<string, (args: string[], context: CliContext) => Promise<ExitCode>>;

type ClientCommand = keyof typeof commands;

export function isClientCommand(name: string | undefined): name is ClientCommand {
  return name !== undefined && Object.hasOwn(commands, name);
}

/** `--help` or `-h` among the options (before a `--`, after which everything is an argument). */
export function wantsHelp(args: string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((arg) => arg === '--help' || arg === '-h');
}

/** `tarmac help [<command>]`: the overview, or one command's usage; exit 2 for a command that does not exist. */
export function runHelp(args: string[], io: { stdout: Output; stderr: Output }): ExitCode {
  const [name, ...extra] = args;
  if (name === undefined) {
    io.stdout.write(usage);
    return ExitCode.ok;
  }
  if (!isDocumentedCommand(name) || extra.length > 0) {
    io.stderr.write(`tarmac: help: ${isDocumentedCommand(name) ? `unexpected argument "${extra[0]}"` : `unknown command "${name}"`}\n\n${usage}`);
    return ExitCode.usage;
  }
  io.stdout.write(commandUsage(name));
  return ExitCode.ok;
}

export async function runCli(command: ClientCommand, args: string[], io: Omit<CliContext, 'client'>): Promise<ExitCode> {
  if (wantsHelp(args)) {
    io.stdout.write(commandUsage(command));
    return ExitCode.ok;
  }
  const context = createContext(io);
  try {
    return await commands[command](args, context);
  } catch (error) {
    if (error instanceof CliError) {
      io.stderr.write(`tarmac: ${error.message}\n`);
      // A bad command line gets that command's usage, not the whole binary's.
      if (error.exitCode === ExitCode.usage && error.name === 'UsageError') io.stderr.write(`\n${commandUsage(command)}`);
      return error.exitCode;
    }
    io.stderr.write(`tarmac: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return ExitCode.failed;
  }
}
