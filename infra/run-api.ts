import { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import { buildApp } from '../api/app';
import { connectApiToTemporal } from '../api/temporal-connection';
import type { Config } from '../core/config';
import { onceStopRequested } from './signals';

/** `tarmac api`: serves the REST API until SIGINT/SIGTERM. */
export async function runApi(config: Config, logger: Logger): Promise<number> {
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
