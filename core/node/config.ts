import { readEnvironmentConfig, type EnvironmentConfig } from './environment-config';
import { variables, type LogLevel, type Variable, type WorkerQueue } from './config-variables';

export type { WorkerQueue } from './config-variables';

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
  logLevel: LogLevel;
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

export { parseRetentionDuration } from './config-variables';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Reads and validates the configuration: every variable of the table (core/node/config-variables.ts),
 * then the repository environments' (core/node/environment-config.ts). Fails fast with every bad
 * variable named. The returned object redacts secrets when serialised (JSON, util.inspect).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const settings: Record<string, unknown> = {};
  for (const [field, variable] of Object.entries(variables) as Array<[string, Variable<unknown>]>) {
    const given = variable.raw ? (env[variable.name] ?? '') : env[variable.name]?.trim();
    const text = given === undefined || given === '' ? (typeof variable.fallback === 'function' ? variable.fallback() : variable.fallback) : given;
    const value = variable.read(text, (message) => problems.push(`${variable.name}: ${message}`));
    if (value !== undefined) settings[field] = value;
  }
  const environments = readEnvironmentConfig(env, problems);
  const { modelUpstreamAnthropic, modelUpstreamOpenai, ...rest } = settings as Settings;
  const config: Config = { ...rest, modelUpstreams: { anthropic: modelUpstreamAnthropic, openai: modelUpstreamOpenai }, environments };
  if (problems.length > 0) throw new ConfigError(problems);
  return redactSecrets(config);
}

/** What the table reads, checked against `Config`: a variable per setting, of the setting's type. */
type Settings = Omit<Config, 'environments' | 'modelUpstreams'> & { modelUpstreamAnthropic: string; modelUpstreamOpenai: string };
const checked: { [K in keyof Settings]-?: Variable<Settings[K]> } = variables;
void checked;

/** Keeps secrets out of logs and serialised state: JSON and inspect show `[redacted]`. */
function redactSecrets(config: Config): Config {
  // A setup's variables may carry a registry's token: names shown, values not.
  const setupEnv = Object.fromEntries(Object.keys(config.environments.setupEnv).map((name) => [name, '[redacted]']));
  const visible = () => ({ ...config, apiTokens: config.apiTokens.map(() => '[redacted]'), environments: { ...config.environments, setupEnv } });
  Object.defineProperty(config, 'toJSON', { value: visible, enumerable: false });
  Object.defineProperty(config, Symbol.for('nodejs.util.inspect.custom'), { value: visible, enumerable: false });
  return config;
}
