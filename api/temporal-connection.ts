import { Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';

/**
 * The API's connection to Temporal. The SDK's default retries a failing call for about 20 s
 * (10 attempts); a front door should answer sooner: 4 attempts (under a second of backoff),
 * then 503 TARMAC_UNAVAILABLE with Retry-After, and the caller retries.
 */
export async function connectApiToTemporal(address: string): Promise<Connection> {
  return await Connection.connect({ address, interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: 4 }))] });
}
