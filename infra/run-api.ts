import { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import { buildApp } from '../api/app';
import { connectApiToTemporal } from '../api/temporal-connection';
import { ConfigError, type Config } from '../core/node/config';
import { onceStopRequested } from './signals';

/** `tarmac api`: serves the REST API until SIGINT/SIGTERM. */
export async function runApi(config: Config, logger: Logger): Promise<number> {
  // Without an allow-list the API would refuse every repository; a server that cannot do its
  // job should not start. `tarmac dev` sets one (file:///) for its own API.
  if (config.repoAllow.length === 0) {
    throw new ConfigError([
      'TARMAC_REPO_ALLOW must list the repository locations the API accepts (comma-separated, e.g. file:///srv/repos,https://github.com/acme); `tarmac dev` allows every local repository (file:///) when it is unset',
    ]);
  }
  if (config.apiTokens.length === 0) {
    throw new Error('TARMAC_API_TOKENS must name at least one bearer token for the API (`tarmac dev` makes one for you)');
  }
  const connection = await connectApiToTemporal(config.temporalAddress);
  const client = new Client({ connection, namespace: config.namespace });
  const app = await buildApp({ client, config, logger });
  await app.listen({ host: config.apiHost, port: config.apiPort });
  const signal = await onceStopRequested();
  logger.info({ signal }, 'stopping api');
  await app.close();
  await connection.close();
  return 0;
}
