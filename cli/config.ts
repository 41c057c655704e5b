import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CliError, ExitCode } from './errors';

/** Where the CLI finds the API, and the token it sends. Read once by `loadCliConfig`. */
export interface CliConfig {
  /**
   * `TARMAC_API_URL`; default `http://<TARMAC_API_HOST>:<TARMAC_API_PORT>` with the server's
   * defaults (`127.0.0.1`, `8080`), a listen-everywhere host dialled on loopback.
   * No trailing slash.
   */
  apiUrl: string;
  /**
   * `TARMAC_API_TOKEN`; default the first of `TARMAC_API_TOKENS`, else the file
   * `<TARMAC_DATA_DIR, default ./.tarmac>/api-token` that `tarmac dev` writes. Secret.
   */
  apiToken: string;
  /** Where the token came from, for error messages (never the token itself). */
  tokenSource: string;
}

const text = (env: NodeJS.ProcessEnv, name: string): string | undefined => {
  const value = env[name]?.trim();
  return value ? value : undefined;
};

/** The default URL from the server's own listen settings. */
function defaultApiUrl(env: NodeJS.ProcessEnv, problems: string[]): string {
  let host = text(env, 'TARMAC_API_HOST') ?? '127.0.0.1';
  const rawPort = text(env, 'TARMAC_API_PORT') ?? '8080';
  const port = Number(rawPort);
  if (!Number.isInteger(port) || port < 1 || port > 65535) problems.push(`TARMAC_API_PORT: "${rawPort}" is not a port number (1-65535)`);
  // A server listening on every interface is reached through loopback from the same machine.
  if (host === '0.0.0.0') host = '127.0.0.1';
  if (host === '::') host = '::1';
  if (host.includes(':') && !host.startsWith('[')) host = `[${host}]`;
  return `http://${host}:${port}`;
}

function checkedApiUrl(raw: string, problems: string[]): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    problems.push(`TARMAC_API_URL: "${raw}" is not a URL (e.g. http://127.0.0.1:8080)`);
    return raw;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') problems.push(`TARMAC_API_URL: "${raw}" must be an http:// or https:// URL`);
  if (url.search || url.hash) problems.push(`TARMAC_API_URL: "${raw}" must not have a query or fragment`);
  if (url.username || url.password) problems.push('TARMAC_API_URL: must not carry credentials; set TARMAC_API_TOKEN');
  return url.href.replace(/\/+$/, '');
}

function readTokenFile(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim() || undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new CliError(`cannot read the API token file ${file}: ${(error as Error).message}`);
  }
}

/**
 * Reads and validates the CLI's settings; fails naming each bad variable.
 * The token is kept out of JSON and `util.inspect`.
 */
export function loadCliConfig(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): CliConfig {
  const problems: string[] = [];
  const explicitUrl = text(env, 'TARMAC_API_URL');
  const apiUrl = explicitUrl ? checkedApiUrl(explicitUrl, problems) : defaultApiUrl(env, problems);

  let apiToken: string | undefined;
  let tokenSource: string;
  const tokenFile = join(resolve(cwd, text(env, 'TARMAC_DATA_DIR') ?? './.tarmac'), 'api-token');
  if (text(env, 'TARMAC_API_TOKEN')) {
    apiToken = text(env, 'TARMAC_API_TOKEN');
    tokenSource = 'TARMAC_API_TOKEN';
  } else if (text(env, 'TARMAC_API_TOKENS')) {
    apiToken = text(env, 'TARMAC_API_TOKENS')!
      .split(',')
      .map((token) => token.trim())
      .find(Boolean);
    tokenSource = 'TARMAC_API_TOKENS';
  } else {
    apiToken = readTokenFile(tokenFile);
    tokenSource = tokenFile;
  }
  if (!apiToken) {
    problems.push(`TARMAC_API_TOKEN: not set, and no token file at ${tokenFile} (start \`tarmac dev\`, which writes it, or set TARMAC_API_TOKEN)`);
  } else if (/\s/.test(apiToken) || apiToken.length < 16) {
    problems.push(
      `${tokenSource === tokenFile ? `the token in ${tokenFile}` : tokenSource}: must be at least 16 characters without spaces (the API accepts no other)`,
    );
  }
  if (problems.length > 0) throw new CliError(`invalid configuration:\n  ${problems.join('\n  ')}`, ExitCode.usage);

  const config: CliConfig = { apiUrl, apiToken: apiToken!, tokenSource };
  const visible = () => ({ ...config, apiToken: '[redacted]' });
  Object.defineProperty(config, 'toJSON', { value: visible, enumerable: false });
  Object.defineProperty(config, Symbol.for('nodejs.util.inspect.custom'), { value: visible, enumerable: false });
  return config;
}
