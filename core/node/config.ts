import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { parseEgressAllow } from '../egress-hosts';
import { readEnvironmentConfig, type EnvironmentConfig } from './environment-config';
import { parseRepoLocation, redactCredentials } from '../repo-location';
import { defaultRecipesDir } from './recipes';

/** Every setting of Tarmac, read once from the environment by `loadConfig`. */
export interface Config {
  /** `TARMAC_DATA_DIR`, default `./.tarmac`: Temporal db, mirrors, runs, caches. */
  dataDir: string;
  /** `TARMAC_TEMPORAL_ADDRESS`, default `127.0.0.1:7233`. */
  temporalAddress: string;
  /** `TARMAC_TEMPORAL_NAMESPACE`, default `default`. */
  namespace: string;
  /** `TARMAC_TEMPORAL_UI_PORT`, default `8233`: Web UI of the embedded dev server. */
  temporalUiPort: number;
  /** `TARMAC_TASK_QUEUE`, default `tarmac`: workflows and host-independent capsules. */
  taskQueue: string;
  /** `TARMAC_HOST_ID`, default the machine's hostname: names this worker's host queue. */
  hostId: string;
  /**
   * `TARMAC_WORKER_QUEUES`, default `shared,host`: which queues `tarmac worker` polls. `shared`
   * (workflows and capsules any host can run) and `host` (this host's queue: its worktrees, its
   * Docker daemon, its agents) can run as separate processes. A landing is placed on the host of
   * the worker that runs its first workflow task, so that host id needs a `host` worker too.
   */
  workerQueues: readonly WorkerQueue[];
  /** `TARMAC_API_HOST`, default `127.0.0.1`. */
  apiHost: string;
  /** `TARMAC_API_PORT`, default `8080`. */
  apiPort: number;
  /** `TARMAC_API_TOKENS`: comma-separated bearer tokens accepted on `/v1`. Secret. */
  apiTokens: readonly string[];
  /**
   * `TARMAC_API_CORS_ORIGINS`: comma-separated origins (`https://ops.example.com`) allowed to call
   * the API from a browser. Default none: CORS is off and browsers get no CORS headers.
   */
  apiCorsOrigins: readonly string[];
  /**
   * `TARMAC_REPO_ALLOW`: comma-separated repository locations the API accepts, each with
   * everything under it (`file:///srv/repos,https://github.com/acme`), in canonical form
   * (core/repo-location.ts). Paths match by whole segments; URLs by scheme, host and port
   * exactly, then by path segments. Default none, which admits nothing: `tarmac api` refuses
   * to start without it, and `tarmac dev` sets `file:///` (any local repository) when unset.
   */
  repoAllow: readonly string[];
  /** `TARMAC_API_RATE_LIMIT`, default `120`: requests per minute per client on the unauthenticated paths (`/healthz`, `/metrics`, `/docs`). */
  apiRateLimit: number;
  /** `TARMAC_API_MAX_STREAMS_PER_TOKEN`, default `8`: event streams (SSE) one bearer token may hold open at once; more get 429. */
  apiMaxStreamsPerToken: number;
  /** `TARMAC_WORKER_METRICS_PORT`, default `0` (off): the worker serves Prometheus metrics (Tarmac's and the Temporal SDK's) at this port. */
  workerMetricsPort: number;
  /** `TARMAC_WORKER_METRICS_HOST`, default `127.0.0.1`: the address the worker's metrics endpoint binds (`0.0.0.0` in containers). */
  workerMetricsHost: string;
  /** `TARMAC_WORKER_METRICS_URL`: the API's `/metrics` appends this worker's metrics (`tarmac dev` sets it). Default none. */
  workerMetricsUrl?: string;
  /** `TARMAC_DOCKER_SOCKET`, default `/var/run/docker.sock`. */
  dockerSocket: string;
  /**
   * `TARMAC_GATE_POOL`, default `1`: gate containers a host worker keeps started ahead, waiting for a
   * suite on the default runner image (activities/containers/gate-pool.ts); `0` turns the pool off (0-16).
   */
  gatePool: number;
  /**
   * `TARMAC_GATE_POOL_ENVIRONMENTS`, default `2`: repository environments (keys) the pool also keeps
   * one container for — the most recently used on the host, each container made for its key only,
   * on its base image with its files (0-16; `0` off; nothing when `TARMAC_GATE_POOL` is `0`).
   */
  gatePoolEnvironments: number;
  /** `TARMAC_LOG_LEVEL`, default `info`. */
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** `TARMAC_TEMPORAL_BIN`: path of the `temporal` CLI for `tarmac dev`; default found by setup. */
  temporalBin?: string;
  /**
   * Where the model gateway forwards agents' requests, per provider protocol:
   * `TARMAC_MODEL_UPSTREAM_ANTHROPIC` (default `https://api.anthropic.com`) and
   * `TARMAC_MODEL_UPSTREAM_OPENAI` (default `https://api.openai.com`); http or https, no
   * credentials in the URL (keys stay in `ANTHROPIC_API_KEY` / `OPENAI_API_KEY`).
   */
  modelUpstreams: { anthropic: string; openai: string };
  /**
   * `TARMAC_SCRIPT_SCENARIOS`: a directory of scenarios of the `script` harness (`<name>.json`),
   * which a script model names as `script#<behaviour>:<name>` (core/script-scenario.ts). For
   * development and tests; default none, and a model naming a scenario cannot run.
   */
  scriptScenariosDir?: string;
  /**
   * `TARMAC_RECIPES_DIR`, default the repository's `recipes/`: the recipe files the API resolves a
   * run's snapshot from (GET /v1/recipes shows them) and the worker reads for what is not a run's
   * (the agents it reports). Give the API and the workers the same directory.
   */
  recipesDir: string;
  /**
   * `TARMAC_WORKFLOW_BUNDLE`: a workflow bundle file the worker loads as given (one built by
   * `bundleWorkflowCode`, e.g. for a release). Default none: the worker loads the prebuilt
   * `dist/workflow-bundle.js` when it is current (`npm run build:workflows`), else bundles the
   * workflows from source at start (worker/workflow-bundle.ts).
   */
  workflowBundle?: string;
  /**
   * `TARMAC_RETENTION`, default `7d`: how long a finished run's files (`runs/<id>/`: workspace, logs,
   * outcome), a mirror no run uses and a findings-cache entry are kept on this host; `off` keeps them
   * for ever. Each host sweeps its own data dir (a Temporal Schedule per host, `tarmac.retention.<host>`).
   */
  retentionMs?: number;
  /**
   * `TARMAC_SPAWN_HELPER`, `on` (default) or `off`: the host's git, tar and chown started by the
   * spawn helper (activities/git/lean-spawn.ts), or from the worker itself. Read by lean-spawn from the
   * environment; checked here so that a wrong value stops the process instead of being ignored.
   */
  spawnHelper: boolean;
  /** `TARMAC_RETENTION_EVERY`, default `1h`: how often this host's retention sweep runs. */
  retentionEveryMs: number;
  /**
   * `TARMAC_EGRESS_ALLOW`: the hosts an environment's setup may reach through the egress gateway,
   * comma or space separated; `*.example.com` allows the names below example.com (core/egress-hosts.ts).
   * A repository's declaration narrows this list, never widens it. Default none: setups reach nothing.
   */
  egressAllow: readonly string[];
  /** Repository environments: setups' own variables, their CA bundle, size limits (core/node/environment-config.ts). */
  environments: EnvironmentConfig;
}

/** `7d`, `36h`, `90m`, `30s`, `500ms` (or `off` where allowed) in milliseconds; undefined when malformed. */
export function parseRetentionDuration(text: string): number | undefined {
  const match = /^([0-9]{1,9})(ms|s|m|h|d)$/.exec(text.trim());
  if (!match) return undefined;
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 'ms' | 's' | 'm' | 'h' | 'd'];
  return Number(match[1]) * unit;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const workerQueueNames = ['shared', 'host'] as const;
/** A queue a worker process can poll (`TARMAC_WORKER_QUEUES`). */
export type WorkerQueue = (typeof workerQueueNames)[number];

/**
 * Reads and validates the configuration. Fails fast with every bad variable named.
 * The returned object redacts secrets when serialised (JSON, util.inspect).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const text = (name: string, fallback: string): string => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? fallback : value;
  };
  const port = (name: string, fallback: number): number => {
    const raw = text(name, String(fallback));
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 0 || value > 65535) {
      problems.push(`${name}: "${raw}" is not a port number (0-65535)`);
      return fallback;
    }
    return value;
  };

  const temporalAddress = text('TARMAC_TEMPORAL_ADDRESS', '127.0.0.1:7233');
  if (!/^[^\s:]+:[0-9]{1,5}$/.test(temporalAddress)) {
    problems.push(`TARMAC_TEMPORAL_ADDRESS: "${temporalAddress}" must be host:port`);
  }
  const hostId = text('TARMAC_HOST_ID', hostname());
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(hostId)) {
    problems.push(`TARMAC_HOST_ID: "${hostId}" must be letters, digits, ".", "_" or "-" (max 63)`);
  }
  const workerQueuesText = text('TARMAC_WORKER_QUEUES', 'shared,host');
  const workerQueueList = workerQueuesText.split(',').map((name) => name.trim());
  const workerQueues = workerQueueNames.filter((name) => workerQueueList.includes(name));
  if (workerQueueList.some((name) => !(workerQueueNames as readonly string[]).includes(name))) {
    problems.push(`TARMAC_WORKER_QUEUES: "${workerQueuesText}" must be shared,host (the default), shared (workflows and shared capsules) or host (this host's queue)`);
  }
  const logLevel = text('TARMAC_LOG_LEVEL', 'info');
  if (!(logLevels as readonly string[]).includes(logLevel)) {
    problems.push(`TARMAC_LOG_LEVEL: "${logLevel}" must be one of ${logLevels.join(', ')}`);
  }
  const apiTokens = text('TARMAC_API_TOKENS', '')
    .split(',')
    .map((token) => token.trim())
    .filter((token) => token.length > 0);
  if (apiTokens.some((token) => token.length < 16)) {
    problems.push('TARMAC_API_TOKENS: every token must be at least 16 characters');
  }
  const temporalBin = env.TARMAC_TEMPORAL_BIN?.trim() || undefined;
  const apiCorsOrigins = text('TARMAC_API_CORS_ORIGINS', '')
    .split(',')
    .map((origin) => origin.trim())
    .filter((origin) => origin.length > 0);
  for (const origin of apiCorsOrigins) {
    if (!/^https?:\/\/[A-Za-z0-9.-]+(:[0-9]{1,5})?$/.test(origin)) problems.push(`TARMAC_API_CORS_ORIGINS: "${origin}" must be an origin like https://ops.example.com (scheme, host, optional port; no path)`);
  }
  const repoAllow: string[] = [];
  for (const entry of text('TARMAC_REPO_ALLOW', '').split(',').map((prefix) => prefix.trim()).filter((prefix) => prefix.length > 0)) {
    const parsed = parseRepoLocation(entry);
    // The entry is shown redacted: a problem with credentials must not print them.
    if (parsed.ok) repoAllow.push(parsed.canonical);
    else problems.push(`TARMAC_REPO_ALLOW: "${redactCredentials(entry)}" ${parsed.problem}`);
  }
  const apiRateLimitText = text('TARMAC_API_RATE_LIMIT', '120');
  const apiRateLimit = Number(apiRateLimitText);
  if (!Number.isInteger(apiRateLimit) || apiRateLimit < 1 || apiRateLimit > 1_000_000) {
    problems.push(`TARMAC_API_RATE_LIMIT: "${apiRateLimitText}" must be a whole number of requests per minute (1-1000000)`);
  }
  const apiMaxStreamsText = text('TARMAC_API_MAX_STREAMS_PER_TOKEN', '8');
  const apiMaxStreamsPerToken = Number(apiMaxStreamsText);
  if (!Number.isInteger(apiMaxStreamsPerToken) || apiMaxStreamsPerToken < 1 || apiMaxStreamsPerToken > 10_000) {
    problems.push(`TARMAC_API_MAX_STREAMS_PER_TOKEN: "${apiMaxStreamsText}" must be a whole number of open event streams per token (1-10000)`);
  }
  const gatePoolText = text('TARMAC_GATE_POOL', '1');
  const gatePool = Number(gatePoolText);
  if (!/^[0-9]+$/.test(gatePoolText) || gatePool > 16) problems.push(`TARMAC_GATE_POOL: "${gatePoolText}" must be a whole number of gate containers kept waiting (0-16; 0 turns the pool off)`);
  const poolEnvironmentsText = text('TARMAC_GATE_POOL_ENVIRONMENTS', '2');
  const poolEnvironments = Number(poolEnvironmentsText);
  const poolEnvironmentsValid = /^[0-9]+$/.test(poolEnvironmentsText) && poolEnvironments <= 16;
  if (!poolEnvironmentsValid) problems.push(`TARMAC_GATE_POOL_ENVIRONMENTS: "${poolEnvironmentsText}" must be a whole number of environments the gate pool keeps a container for (0-16; 0 turns it off)`);
  const workerMetricsUrl = env.TARMAC_WORKER_METRICS_URL?.trim() || undefined;
  if (workerMetricsUrl && !/^http:\/\/[^\s/]+(\/[^\s]*)?$/.test(workerMetricsUrl)) {
    problems.push(`TARMAC_WORKER_METRICS_URL: "${workerMetricsUrl}" must be an http:// URL (e.g. http://127.0.0.1:9464/metrics)`);
  }

  const retentionText = text('TARMAC_RETENTION', '7d');
  const retentionMs = retentionText === 'off' ? undefined : parseRetentionDuration(retentionText);
  if (retentionText !== 'off' && retentionMs === undefined) problems.push(`TARMAC_RETENTION: "${retentionText}" must be a duration like 7d, 36h, 90m or 30s, or off`);
  const retentionEveryText = text('TARMAC_RETENTION_EVERY', '1h');
  const retentionEveryMs = parseRetentionDuration(retentionEveryText);
  if (retentionEveryMs === undefined || retentionEveryMs < 1_000) problems.push(`TARMAC_RETENTION_EVERY: "${retentionEveryText}" must be a duration of at least 1s, like 1h, 15m or 30s`);

  const spawnHelperText = text('TARMAC_SPAWN_HELPER', 'on');
  if (spawnHelperText !== 'on' && spawnHelperText !== 'off') problems.push(`TARMAC_SPAWN_HELPER: "${spawnHelperText}" must be on or off`);

  const egressAllowParse = parseEgressAllow(env.TARMAC_EGRESS_ALLOW ?? '');
  if (!egressAllowParse.ok) problems.push(`TARMAC_EGRESS_ALLOW: ${egressAllowParse.message}`);
  const environments = readEnvironmentConfig(env, problems);

  const upstream = (name: string, fallback: string): string => {
    const value = text(name, fallback);
    let url: URL | undefined;
    try {
      url = new URL(value);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password || url.search || url.hash) {
      problems.push(`${name}: "${redactCredentials(value)}" must be an http:// or https:// URL without credentials, query or fragment (e.g. ${fallback})`);
      return fallback;
    }
    return value.replace(/\/+$/, '');
  };
  const modelUpstreams = {
    anthropic: upstream('TARMAC_MODEL_UPSTREAM_ANTHROPIC', 'https://api.anthropic.com'),
    openai: upstream('TARMAC_MODEL_UPSTREAM_OPENAI', 'https://api.openai.com'),
  };

  const config: Config = {
    dataDir: resolve(text('TARMAC_DATA_DIR', './.tarmac')),
    temporalAddress,
    namespace: text('TARMAC_TEMPORAL_NAMESPACE', 'default'),
    temporalUiPort: port('TARMAC_TEMPORAL_UI_PORT', 8233),
    taskQueue: text('TARMAC_TASK_QUEUE', 'tarmac'),
    hostId,
    workerQueues,
    apiHost: text('TARMAC_API_HOST', '127.0.0.1'),
    apiPort: port('TARMAC_API_PORT', 8080),
    apiTokens,
    apiCorsOrigins,
    apiRateLimit,
    apiMaxStreamsPerToken,
    repoAllow,
    workerMetricsPort: port('TARMAC_WORKER_METRICS_PORT', 0),
    workerMetricsHost: text('TARMAC_WORKER_METRICS_HOST', '127.0.0.1'),
    ...(workerMetricsUrl ? { workerMetricsUrl } : {}),
    dockerSocket: text('TARMAC_DOCKER_SOCKET', '/var/run/docker.sock'),
    gatePool: /^[0-9]+$/.test(gatePoolText) && gatePool <= 16 ? gatePool : 0,
    gatePoolEnvironments: poolEnvironmentsValid ? poolEnvironments : 0,
    logLevel: logLevel as Config['logLevel'],
    ...(temporalBin ? { temporalBin } : {}),
    modelUpstreams,
    ...(env.TARMAC_SCRIPT_SCENARIOS?.trim() ? { scriptScenariosDir: resolve(env.TARMAC_SCRIPT_SCENARIOS.trim()) } : {}),
    recipesDir: resolve(text('TARMAC_RECIPES_DIR', defaultRecipesDir)),
    ...(env.TARMAC_WORKFLOW_BUNDLE?.trim() ? { workflowBundle: resolve(env.TARMAC_WORKFLOW_BUNDLE.trim()) } : {}),
    ...(retentionMs !== undefined ? { retentionMs } : {}),
    retentionEveryMs: retentionEveryMs ?? 3_600_000,
    spawnHelper: spawnHelperText !== 'off',
    egressAllow: egressAllowParse.ok ? egressAllowParse.hosts : [],
    environments,
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return redactSecrets(config);
}

/** Keeps secrets out of logs and serialised state: JSON and inspect show `[redacted]`. */
function redactSecrets(config: Config): Config {
  // A setup's variables may carry a registry's token: names shown, values not.
  const setupEnv = Object.fromEntries(Object.keys(config.environments.setupEnv).map((name) => [name, '[redacted]']));
  const visible = () => ({ ...config, apiTokens: config.apiTokens.map(() => '[redacted]'), environments: { ...config.environments, setupEnv } });
  Object.defineProperty(config, 'toJSON', { value: visible, enumerable: false });
  Object.defineProperty(config, Symbol.for('nodejs.util.inspect.custom'), { value: visible, enumerable: false });
  return config;
}
