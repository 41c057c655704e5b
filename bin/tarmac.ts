/**
 * The `tarmac` command: `dev` (Temporal dev server + worker + API on one machine),
 * `worker`, `api`; and the client commands (land, list, status, watch, logs, answer, cancel,
 * retry, budget, review, fix, schedule) in `cli/`, which talk to the REST API.
 * Every command reads `.env` first (core/node/env-file.ts): the environment wins over it.
 */
import { isClientCommand, runCli, runHelp, wantsHelp } from '../cli/main';
import { commandUsage, usage } from '../cli/usage';
import { packageVersion } from '../cli/version';
import { loadConfig, ConfigError } from '../core/node/config';
import { applyEnvFile, EnvFileError, type EnvFileLoad } from '../core/node/env-file';
import { createLogger } from '../core/node/logger';

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  if (command === '--version' || command === 'version') {
    process.stdout.write(`tarmac ${packageVersion()}\n`);
    return 0;
  }
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') return runHelp(command === 'help' ? args : [], process);
  let envFile: EnvFileLoad;
  try {
    envFile = applyEnvFile(process.env, process.cwd());
  } catch (error) {
    if (!(error instanceof EnvFileError)) throw error;
    process.stderr.write(`tarmac: ${error.message}\n`);
    return 2;
  }
  // Client commands need only the API's address and a token, not the server's configuration.
  if (isClientCommand(command)) return await runCli(command, args, { stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() });
  if (command !== 'dev' && command !== 'worker' && command !== 'api') {
    process.stderr.write(`tarmac: unknown command "${command}"\n\n${usage}`);
    return 2;
  }
  if (wantsHelp(args)) {
    process.stdout.write(commandUsage(command));
    return 0;
  }
  if (args.length > 0) {
    process.stderr.write(`tarmac: ${command}: unexpected argument "${args[0]}" (its settings come from the environment and .env)\n\n${commandUsage(command)}`);
    return 2;
  }
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel, `tarmac-${command}`);
  // Names only: values may be secrets.
  if (envFile.file)
    logger.info(
      { envFile: envFile.file, fromFile: envFile.applied, fromEnvironment: envFile.overridden },
      'settings read from the env file (the environment wins over it)',
    );
  switch (command) {
    // Loaded on demand: the client commands start fast without Temporal's and Fastify's modules.
    case 'dev':
      return await (await import('../infra/dev')).runDev(config, logger);
    case 'worker':
      return await (await import('../infra/run-worker')).runWorker(config, logger);
    case 'api':
      return await (await import('../infra/run-api')).runApi(config, logger);
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(error instanceof ConfigError ? `${error.message}\n` : `tarmac: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
