import { parseArgs, type ParseArgsConfig } from 'node:util';
import { TarmacClient } from './client';
import { loadCliConfig } from './config';
import type { Output } from './display';
import { UsageError } from './errors';

/** What a command gets: its streams and environment, and the API client (made on first use). */
export interface CliContext {
  stdout: Output;
  stderr: Output;
  env: NodeJS.ProcessEnv;
  cwd: string;
  client(): TarmacClient;
}

export function createContext(io: Omit<CliContext, 'client'>): CliContext {
  let client: TarmacClient | undefined;
  // The configuration is read only when a command needs the API, so a usage error never hides behind a missing token.
  return { ...io, client: () => (client ??= new TarmacClient(loadCliConfig(io.env, io.cwd))) };
}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * `node:util` parseArgs with the CLI's rules: strict options, positionals allowed,
 * and every parse error a UsageError naming the command.
 */
export function parseCommand<O extends Options>(command: string, args: string[], options: O) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(`${command}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Exactly `count` positionals, or a usage error naming the missing ones. */
export function positionals(command: string, given: string[], names: string[], rest = false): string[] {
  if (given.length < names.length)
    throw new UsageError(
      `${command}: missing ${names
        .slice(given.length)
        .map((name) => `<${name}>`)
        .join(' ')}`,
    );
  if (!rest && given.length > names.length) throw new UsageError(`${command}: unexpected argument "${given[names.length]}"`);
  return given;
}

export const writeLines = (out: Output, lines: string[]) => {
  out.write(lines.map((line) => `${line}\n`).join(''));
};
