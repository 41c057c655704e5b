/**
 * The `tarmac` command: `dev` (Temporal dev server + worker + API on one machine),
 * `worker`, `api`; and the client commands (land, status, watch, answer, cancel, retry, fix)
 * in `cli/`, which talk to the REST API.
 */
import { isClientCommand, runCli } from '../cli/main';
import { usage } from '../cli/usage';
import { loadConfig, ConfigError } from '../core/node/config';
import { createLogger } from '../core/node/logger';

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  // Client commands need only the API's address and a token, not the server's configuration.
  if (isClientCommand(command)) return await runCli(command, args, { stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() });
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(usage);
    return 0;
  }
  if (command !== 'dev' && command !== 'worker' && command !== 'api') {
    process.stderr.write(`tarmac: unknown command "${command}"\n\n${usage}`);
    return 2;
  }
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel, `tarmac-${command}`);
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
