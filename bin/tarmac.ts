/**
 * The `tarmac` command: `dev` (Temporal dev server + worker + API on one machine),
 * `worker`, `api`. Later commands (land, status, watch…) talk to the REST API.
 */
import { loadConfig, ConfigError } from '../core/config';
import { createLogger } from '../core/logger';
import { runApi } from '../infra/run-api';
import { runDev } from '../infra/dev';
import { runWorker } from '../infra/run-worker';

const usage = `usage: tarmac <command>

commands:
  dev       start the Temporal dev server (SQLite in the data dir), a worker and the API
  worker    run a worker (workflows, capsules, and this host's containers)
  api       run the REST API
`;

async function main(argv: string[]): Promise<number> {
  const [command] = argv;
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel, `tarmac-${command ?? 'cli'}`);
  switch (command) {
    case 'dev':
      return await runDev(config, logger);
    case 'worker':
      return await runWorker(config, logger);
    case 'api':
      return await runApi(config, logger);
    default:
      process.stderr.write(usage);
      return command === undefined || command === 'help' || command === '--help' ? 0 : 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(error instanceof ConfigError ? `${error.message}\n` : `tarmac: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
