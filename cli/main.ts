/**
 * The client half of `tarmac`: commands that talk to the REST API. `bin/tarmac.ts`
 * hands these commands here; `runCli` returns the exit code and never throws.
 */
import { createContext, type CliContext } from './context';
import { CliError, ExitCode } from './errors';
import { usage } from './usage';
import { answerCommand } from './commands/answer';
import { cancelCommand } from './commands/cancel';
import { fixCommand } from './commands/fix';
import { landCommand } from './commands/land';
import { retryCommand } from './commands/retry';
import { statusCommand } from './commands/status';
import { watchCommand } from './commands/watch';

const commands = {
  land: landCommand,
  status: statusCommand,
  watch: watchCommand,
  answer: answerCommand,
  cancel: cancelCommand,
  retry: retryCommand,
  fix: fixCommand,
} as const satisfies Record<string, (args: string[], context: CliContext) => Promise<ExitCode>>;

export type ClientCommand = keyof typeof commands;

export function isClientCommand(name: string | undefined): name is ClientCommand {
  return name !== undefined && Object.hasOwn(commands, name);
}

export async function runCli(command: ClientCommand, args: string[], io: Omit<CliContext, 'client'>): Promise<ExitCode> {
  const context = createContext(io);
  try {
    return await commands[command](args, context);
  } catch (error) {
    if (error instanceof CliError) {
      io.stderr.write(`tarmac: ${error.message}\n`);
      if (error.exitCode === ExitCode.usage && error.name === 'UsageError') io.stderr.write(`\n${usage}`);
      return error.exitCode;
    }
    io.stderr.write(`tarmac: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return ExitCode.failed;
  }
}
