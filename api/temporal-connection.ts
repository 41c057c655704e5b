import { Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';

/**
 * The API's connection to Temporal. The SDK's default retries a failing call for about 20 s
 * (10 attempts); a front door should answer sooner: 4 attempts (under a second of backoff),
 * then 503 TARMAC_UNAVAILABLE with Retry-After, and the caller retries.
 *
 * Closing it is safe while calls are in flight. The retry interceptor starts a retry from a timer;
 * a retry that fires after the channel has shut down throws outside any caller ("Channel has been
 * shut down": an uncaught exception — a request the client had given up on, still being answered,
 * did that when the API closed). So `close()` first stops new retries, waits for the ones already
 * scheduled to have started (under a second), then closes.
 */
export async function connectApiToTemporal(address: string): Promise<Connection> {
  const base = defaultGrpcRetryOptions({ maxAttempts: 4 });
  let closing = false;
  /** When the last retry scheduled so far starts. */
  let lastRetryAt = 0;
  const retry = makeGrpcRetryInterceptor({
    retryableDecider: (attempt, status) => !closing && base.retryableDecider(attempt, status),
    delayFunction: (attempt, status) => {
      const delay = base.delayFunction(attempt, status);
      lastRetryAt = Math.max(lastRetryAt, Date.now() + delay);
      return delay;
    },
  });
  const connection = await Connection.connect({ address, interceptors: [retry] });
  const close = connection.close.bind(connection);
  connection.close = async () => {
    closing = true;
    const wait = lastRetryAt - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(wait + 50, 5_000)));
    await close();
  };
  return connection;
}
