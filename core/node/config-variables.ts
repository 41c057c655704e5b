import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { parseEgressAllow } from '../egress-hosts';
import { parseRepoLocation, redactCredentials } from '../repo-location';
import { defaultRecipesDir } from './recipes';

/**
 * One variable of the configuration, as data: its name, the text it has when unset or blank, and
 * how that text is read. `read` reports a problem through `problem` (the message after the name,
 * which `loadConfig` prefixes with the name) and still returns a value (the default's) so that every
 * bad variable is named in one go. Each variable's meaning and default are documented on `Config`.
 */
export interface Variable<T> {
  name: string;
  /** The text when the variable is unset or blank (trimmed); a function when it depends on the host. */
  fallback: string | (() => string);
  /** Read as given (not trimmed), unset as ''. */
  raw?: boolean;
  read(text: string, problem: (message: string) => void): T;
}

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const workerQueueNames = ['shared', 'host'] as const;
/** A queue a worker process can poll (`TARMAC_WORKER_QUEUES`). */
export type WorkerQueue = (typeof workerQueueNames)[number];
export type LogLevel = (typeof logLevels)[number];

/** `7d`, `36h`, `90m`, `30s`, `500ms` (or `off` where allowed) in milliseconds; undefined when malformed. */
export function parseRetentionDuration(text: string): number | undefined {
  const match = /^([0-9]{1,9})(ms|s|m|h|d)$/.exec(text.trim());
  if (!match) return undefined;
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 'ms' | 's' | 'm' | 'h' | 'd'];
  return Number(match[1]) * unit;
}

/** The text as it is. */
const plain = (name: string, fallback: string): Variable<string> => ({ name, fallback, read: (text) => text });
/** A path, resolved against the working directory. */
const path = (name: string, fallback: string | (() => string)): Variable<string> => ({ name, fallback, read: (text) => resolve(text) });
/** A path, or none when unset. */
const optionalPath = (name: string): Variable<string | undefined> => ({ name, fallback: '', read: (text) => (text ? resolve(text) : undefined) });
/** A comma-separated list, blanks dropped. */
const list = (text: string): string[] =>
  text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0);

const port = (name: string, fallback: number): Variable<number> => ({
  name,
  fallback: String(fallback),
  read: (text, problem) => {
    const value = Number(text);
    if (Number.isInteger(value) && value >= 0 && value <= 65535) return value;
    problem(`"${text}" is not a port number (0-65535)`);
    return fallback;
  },
});

/** A whole number in [min, max]; the default when it is not. */
const wholeNumber = (name: string, fallback: number, range: { min: number; max: number; digitsOnly?: boolean }, must: string): Variable<number> => ({
  name,
  fallback: String(fallback),
  read: (text, problem) => {
    const value = Number(text);
    const valid = range.digitsOnly ? /^[0-9]+$/.test(text) && value <= range.max : Number.isInteger(value) && value >= range.min && value <= range.max;
    if (valid) return value;
    problem(`"${text}" ${must}`);
    return range.digitsOnly ? 0 : value;
  },
});

const modelUpstream = (name: string, fallback: string): Variable<string> => ({
  name,
  fallback,
  read: (value, problem) => {
    let url: URL | undefined;
    try {
      url = new URL(value);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password || url.search || url.hash) {
      problem(`"${redactCredentials(value)}" must be an http:// or https:// URL without credentials, query or fragment (e.g. ${fallback})`);
      return fallback;
    }
    return value.replace(/\/+$/, '');
  },
});

/**
 * Every variable `loadConfig` reads but the repository environments' (core/node/environment-config.ts),
 * in the order their problems are reported. An optional setting left unset is absent from the config.
 */
export const variables = {
  temporalAddress: <Variable<string>>{
    name: 'TARMAC_TEMPORAL_ADDRESS',
    fallback: '127.0.0.1:7233',
    read: (text, problem) => (/^[^\s:]+:[0-9]{1,5}$/.test(text) ? text : (problem(`"${text}" must be host:port`), text)),
  },
  hostId: <Variable<string>>{
    name: 'TARMAC_HOST_ID',
    fallback: () => hostname(),
    read: (text, problem) =>
      /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(text) ? text : (problem(`"${text}" must be letters, digits, ".", "_" or "-" (max 63)`), text),
  },
  workerQueues: <Variable<readonly WorkerQueue[]>>{
    name: 'TARMAC_WORKER_QUEUES',
    fallback: 'shared,host',
    read: (text, problem) => {
      const names = text.split(',').map((name) => name.trim());
      if (names.some((name) => !(workerQueueNames as readonly string[]).includes(name))) {
        problem(`"${text}" must be shared,host (the default), shared (workflows and shared capsules) or host (this host's queue)`);
      }
      return workerQueueNames.filter((name): name is WorkerQueue => names.includes(name));
    },
  },
  logLevel: <Variable<LogLevel>>{
    name: 'TARMAC_LOG_LEVEL',
    fallback: 'info',
    read: (text, problem) => {
      if (!(logLevels as readonly string[]).includes(text)) problem(`"${text}" must be one of ${logLevels.join(', ')}`);
      return text as LogLevel;
    },
  },
  apiTokens: <Variable<readonly string[]>>{
    name: 'TARMAC_API_TOKENS',
    fallback: '',
    read: (text, problem) => {
      const tokens = list(text);
      if (tokens.some((token) => token.length < 16)) problem('every token must be at least 16 characters');
      return tokens;
    },
  },
  temporalBin: <Variable<string | undefined>>{ name: 'TARMAC_TEMPORAL_BIN', fallback: '', read: (text) => text || undefined },
  apiCorsOrigins: <Variable<readonly string[]>>{
    name: 'TARMAC_API_CORS_ORIGINS',
    fallback: '',
    read: (text, problem) => {
      const origins = list(text);
      for (const origin of origins) {
        if (!/^https?:\/\/[A-Za-z0-9.-]+(:[0-9]{1,5})?$/.test(origin))
          problem(`"${origin}" must be an origin like https://ops.example.com (scheme, host, optional port; no path)`);
      }
      return origins;
    },
  },
  repoAllow: <Variable<readonly string[]>>{
    name: 'TARMAC_REPO_ALLOW',
    fallback: '',
    read: (text, problem) => {
      const allowed: string[] = [];
      for (const entry of list(text)) {
        const parsed = parseRepoLocation(entry);
        // The entry is shown redacted: a problem with credentials must not print them.
        if (parsed.ok) allowed.push(parsed.canonical);
        else problem(`"${redactCredentials(entry)}" ${parsed.problem}`);
      }
      return allowed;
    },
  },
  apiRateLimit: wholeNumber('TARMAC_API_RATE_LIMIT', 120, { min: 1, max: 1_000_000 }, 'must be a whole number of requests per minute (1-1000000)'),
  apiMaxStreamsPerToken: wholeNumber(
    'TARMAC_API_MAX_STREAMS_PER_TOKEN',
    8,
    { min: 1, max: 10_000 },
    'must be a whole number of open event streams per token (1-10000)',
  ),
  gatePool: wholeNumber(
    'TARMAC_GATE_POOL',
    1,
    { min: 0, max: 16, digitsOnly: true },
    'must be a whole number of gate containers kept waiting (0-16; 0 turns the pool off)',
  ),
  gatePoolEnvironments: wholeNumber(
    'TARMAC_GATE_POOL_ENVIRONMENTS',
    2,
    { min: 0, max: 16, digitsOnly: true },
    'must be a whole number of environments the gate pool keeps a container for (0-16; 0 turns it off)',
  ),
  workerMetricsUrl: <Variable<string | undefined>>{
    name: 'TARMAC_WORKER_METRICS_URL',
    fallback: '',
    read: (text, problem) => {
      if (text && !/^http:\/\/[^\s/]+(\/[^\s]*)?$/.test(text)) problem(`"${text}" must be an http:// URL (e.g. http://127.0.0.1:9464/metrics)`);
      return text || undefined;
    },
  },
  retentionMs: <Variable<number | undefined>>{
    name: 'TARMAC_RETENTION',
    fallback: '7d',
    read: (text, problem) => {
      if (text === 'off') return undefined;
      const ms = parseRetentionDuration(text);
      if (ms === undefined) problem(`"${text}" must be a duration like 7d, 36h, 90m or 30s, or off`);
      return ms;
    },
  },
  retentionEveryMs: <Variable<number>>{
    name: 'TARMAC_RETENTION_EVERY',
    fallback: '1h',
    read: (text, problem) => {
      const ms = parseRetentionDuration(text);
      if (ms === undefined || ms < 1_000) problem(`"${text}" must be a duration of at least 1s, like 1h, 15m or 30s`);
      return ms ?? 3_600_000;
    },
  },
  spawnHelper: <Variable<boolean>>{
    name: 'TARMAC_SPAWN_HELPER',
    fallback: 'on',
    read: (text, problem) => {
      if (text !== 'on' && text !== 'off') problem(`"${text}" must be on or off`);
      return text !== 'off';
    },
  },
  egressAllow: <Variable<readonly string[]>>{
    name: 'TARMAC_EGRESS_ALLOW',
    fallback: '',
    raw: true,
    read: (text, problem) => {
      const parsed = parseEgressAllow(text);
      if (parsed.ok) return parsed.hosts;
      problem(parsed.message);
      return [];
    },
  },
  modelUpstreamAnthropic: modelUpstream('TARMAC_MODEL_UPSTREAM_ANTHROPIC', 'https://api.anthropic.com'),
  modelUpstreamOpenai: modelUpstream('TARMAC_MODEL_UPSTREAM_OPENAI', 'https://api.openai.com'),
  dataDir: path('TARMAC_DATA_DIR', './.tarmac'),
  namespace: plain('TARMAC_TEMPORAL_NAMESPACE', 'default'),
  temporalUiPort: port('TARMAC_TEMPORAL_UI_PORT', 8233),
  taskQueue: plain('TARMAC_TASK_QUEUE', 'tarmac'),
  apiHost: plain('TARMAC_API_HOST', '127.0.0.1'),
  apiPort: port('TARMAC_API_PORT', 8080),
  workerMetricsPort: port('TARMAC_WORKER_METRICS_PORT', 0),
  workerMetricsHost: plain('TARMAC_WORKER_METRICS_HOST', '127.0.0.1'),
  dockerSocket: plain('TARMAC_DOCKER_SOCKET', '/var/run/docker.sock'),
  scriptScenariosDir: optionalPath('TARMAC_SCRIPT_SCENARIOS'),
  recipesDir: path('TARMAC_RECIPES_DIR', defaultRecipesDir),
  workflowBundle: optionalPath('TARMAC_WORKFLOW_BUNDLE'),
} satisfies Record<string, Variable<unknown>>;
