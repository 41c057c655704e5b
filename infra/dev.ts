import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Docker from 'dockerode';
import type { Logger } from 'pino';
import { availabilityFacts } from '../activities/sessions/agent-availability';
import { agentAvailability, defaultsNotice } from '../core/agent-availability';
import { loadRecipes } from '../core/node/recipes';
import type { Config } from '../core/node/config';
import { freePort } from './ports';
import { onceStopRequested } from './signals';
import { findTemporalBin, startDevServer, stopChild } from './temporal-server';

/** The repository locations `tarmac dev` accepts when TARMAC_REPO_ALLOW is unset: every local one. */
export const devRepoAllow: readonly string[] = ['file:///'];

/** The API token of a dev data dir: TARMAC_API_TOKENS if set, else one made once and kept in `<dataDir>/api-token`. */
export function devApiToken(config: Config): string {
  if (config.apiTokens[0]) return config.apiTokens[0];
  const file = join(config.dataDir, 'api-token');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const token = randomBytes(24).toString('hex');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return token;
}

function startChild(command: string, env: NodeJS.ProcessEnv): ChildProcess {
  // Own process group: Ctrl-C reaches only `tarmac dev`, which then stops the children in order.
  return spawn(process.execPath, [...process.execArgv, require.resolve('../bin/tarmac'), command], {
    env,
    stdio: ['ignore', 'inherit', 'inherit'],
    detached: true,
  });
}

/**
 * Can the `default` panel and the default ladder run on this machine (its images, its keys or
 * upstreams)? The one line that says what is missing, or undefined.
 */
async function defaultsNoticeHere(config: Config): Promise<string | undefined> {
  const recipes = loadRecipes(config.recipesDir);
  const docker = new Docker({ socketPath: config.dockerSocket });
  const facts = await availabilityFacts({ docker, secrets: process.env, modelUpstreams: config.modelUpstreams }, recipes.harnesses);
  return defaultsNotice(recipes, (spec) => agentAvailability(spec, recipes.harnesses, facts));
}

/**
 * `tarmac dev`: the Temporal dev server on SQLite in the data dir (runs survive
 * restarts; the Tarmac search attributes registered), a worker and the API.
 * Ctrl-C stops the API, then the worker, then Temporal; starting again resumes
 * the runs that were in flight.
 */
export async function runDev(config: Config, logger: Logger): Promise<number> {
  mkdirSync(config.dataDir, { recursive: true });
  const port = Number(config.temporalAddress.split(':').pop());
  const server = await startDevServer({
    bin: findTemporalBin(config.temporalBin),
    dbFile: join(config.dataDir, 'temporal.db'),
    port,
    uiPort: config.temporalUiPort,
    logFile: join(config.dataDir, 'logs', 'temporal.log'),
  });
  const token = devApiToken(config);
  // The worker serves its Prometheus metrics on loopback; the API's /metrics includes them.
  const metricsPort = config.workerMetricsPort || (await freePort());
  // On one machine, for its own user, every local repository is fair game; a remote one
  // (https://, ssh://) only when the operator lists it. `tarmac api` alone has no default.
  const repoAllow = config.repoAllow.length > 0 ? config.repoAllow : devRepoAllow;
  const env = {
    ...process.env,
    TARMAC_REPO_ALLOW: repoAllow.join(','),
    TARMAC_DATA_DIR: config.dataDir,
    TARMAC_TEMPORAL_ADDRESS: server.address,
    TARMAC_API_TOKENS: token,
    TARMAC_WORKER_METRICS_PORT: String(metricsPort),
    TARMAC_WORKER_METRICS_URL: `http://127.0.0.1:${metricsPort}/metrics`,
  };
  const worker = startChild('worker', env);
  const api = startChild('api', env);
  const children = [api, worker];
  const killAll = () => {
    for (const child of [...children, server.process]) if (child.exitCode === null) child.kill('SIGKILL');
  };
  process.once('exit', killAll);

  const notice = await defaultsNoticeHere(config).catch((error: unknown) => {
    logger.warn({ err: error }, 'could not check whether the default panel and ladder can run here');
    return undefined;
  });
  const apiUrl = `http://${config.apiHost}:${config.apiPort}`;
  process.stdout.write(
    [
      '',
      'Tarmac is starting:',
      `  API            ${apiUrl}   (OpenAPI: ${apiUrl}/docs)`,
      `  Dashboard      ${apiUrl}/dashboard/`,
      `  API token      ${join(config.dataDir, 'api-token')}${config.apiTokens[0] ? ' (from TARMAC_API_TOKENS)' : ''}`,
      `  Temporal       ${server.address}`,
      `  Temporal UI    ${server.uiUrl ?? '(headless)'}`,
      `  Metrics        ${apiUrl}/metrics   (worker: http://127.0.0.1:${metricsPort}/metrics)`,
      `  Data dir       ${config.dataDir}`,
      `  Repositories   ${repoAllow.join(', ')}${config.repoAllow.length > 0 ? ' (from TARMAC_REPO_ALLOW)' : '   (set TARMAC_REPO_ALLOW to allow remote ones)'}`,
      // One line when the shipped defaults cannot run on this machine: what to set, before a landing finds out.
      ...(notice ? [`  Note           ${notice}`] : []),
      'Press Ctrl-C to stop.',
      '',
    ].join('\n'),
  );

  const childExited = new Promise<string>((resolve) => {
    worker.once('exit', (code) => resolve(`worker exited (${code})`));
    api.once('exit', (code) => resolve(`api exited (${code})`));
  });
  const reason = await Promise.race([onceStopRequested().then((signal) => `received ${signal}`), childExited]);
  logger.info({ reason }, 'stopping tarmac dev');
  await stopChild(api);
  await stopChild(worker, 30_000);
  await server.stop();
  process.removeListener('exit', killAll);
  return reason.startsWith('received') ? 0 : 1;
}
