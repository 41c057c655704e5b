import type { Logger } from 'pino';
import type { Config } from '../core/node/config';
import { startWorker } from '../worker/worker';
import { onceStopRequested } from './signals';

/** `tarmac worker`: runs until SIGINT/SIGTERM, then drains and exits. */
export async function runWorker(config: Config, logger: Logger): Promise<number> {
  const worker = await startWorker(config, logger);
  const stop = onceStopRequested().then((signal) => {
    logger.info({ signal }, 'stopping worker');
    worker.shutdown();
  });
  await worker.done;
  void stop;
  return 0;
}
