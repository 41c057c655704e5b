import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';

/**
 * `.env`: settings from a file, read by every `tarmac` command (dev, worker, api and the client
 * commands) before anything else, with the platform's own parser (`util.parseEnv`, the grammar of
 * `node --env-file`: `NAME=value`, quotes, `#` comments, `export ` prefixes).
 *
 * Precedence: the environment wins. A variable the environment has (even set to the empty string)
 * keeps its value; the file fills in only the ones it lacks. So `TARMAC_API_PORT=9000 tarmac dev`
 * overrides the file, and compose's `environment:` entries override its `env_file:`, the same way.
 *
 * Which file: `TARMAC_ENV_FILE` (a path, relative to the working directory; it must exist), or
 * `TARMAC_ENV_FILE=` (empty) for none; unset, `.env` in the working directory when there is one.
 * The file never chooses another file: `TARMAC_ENV_FILE` in it is ignored.
 */
export interface EnvFileLoad {
  /** The file read (absolute), or undefined when there was none. */
  file?: string;
  /** Names of the variables the file set (the environment lacked them). Values are never reported. */
  applied: string[];
  /** Names the file has that the environment already set: the environment's values were kept. */
  overridden: string[];
}

export class EnvFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EnvFileError';
  }
}

/** Reads the env file into `env` (mutated: children spawned with it inherit the settings). */
export function applyEnvFile(env: NodeJS.ProcessEnv, cwd: string): EnvFileLoad {
  const chosen = env.TARMAC_ENV_FILE;
  if (chosen !== undefined && chosen.trim() === '') return { applied: [], overridden: [] };
  const file = resolve(cwd, chosen?.trim() ?? '.env');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // The default file is optional; a file named on purpose is not.
    if (chosen === undefined && code === 'ENOENT') return { applied: [], overridden: [] };
    throw new EnvFileError(`${chosen === undefined ? '.env' : 'TARMAC_ENV_FILE'}: cannot read ${file} (${code ?? (error as Error).message})`);
  }
  const applied: string[] = [];
  const overridden: string[] = [];
  for (const [name, value] of Object.entries(parseEnv(text))) {
    if (name === 'TARMAC_ENV_FILE' || value === undefined) continue;
    if (env[name] !== undefined) {
      overridden.push(name);
      continue;
    }
    env[name] = value;
    applied.push(name);
  }
  return { file, applied, overridden };
}
