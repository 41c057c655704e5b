import pino, { type Logger } from 'pino';

/** One JSON logger per process; children carry run and session ids. */
export function createLogger(level: string, name: string): Logger {
  return pino({ level, name, base: { pid: process.pid } });
}
