import pino, { type Logger } from 'pino';
import { redactCredentials } from '../repo-location';

/**
 * One JSON logger per process; children carry run and session ids. Every line passes
 * through `redactCredentials` on its way out: locations with credentials are refused at the
 * API's door, but the request log line of that refusal (its URL, with a query string) is
 * written before any route runs.
 */
export function createLogger(level: string, name: string): Logger {
  return pino({ level, name, base: { pid: process.pid }, hooks: { streamWrite: redactCredentials } });
}
