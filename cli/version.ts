import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The version in Tarmac's package.json (`tarmac --version`). */
export function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version?: unknown };
  return typeof manifest.version === 'string' ? manifest.version : 'unknown';
}
