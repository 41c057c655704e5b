import Docker from 'dockerode';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, Worker, makeTelemetryFilterString } from '@temporalio/worker';
import type { Logger } from 'pino';
import { createActivities, createHostRunJanitor } from '../activities';
import { createGatePool } from '../activities/containers/gate-pool';
import { defaultRunnerImage } from '../core/gate-file';
import type { Config } from '../core/node/config';
import { hostQueue, placementQueue } from '../core/queues';
import { heartbeatEveryMs } from '../workflows/activity-options';
import { heartbeating } from './heartbeat';
import { loadRecipes } from '../core/node/recipes';
import { workerAgents } from '../activities/sessions/agent-availability';
import { agentsReportEveryMs, type HostAgents } from '../core/agent-availability';
import { agentRegistryId, agentsReportSignal, type agentRegistry } from '../workflows/agent-registry';
import { workflowCodeOption } from './workflow-bundle';
import { ensureRetentionSchedule } from './retention-schedule';

/**
 * Tells the namespace's agent registry which harness#model this host can run and what the
 * others lack (an image, a key). Key values never leave: only whether the key is set.
 */
async function reportAgents(client: Client, config: Config, docker: Docker): Promise<void> {
  const agents = await workerAgents({ docker, secrets: process.env, modelUpstreams: config.modelUpstreams }, loadRecipes(config.recipesDir).harnesses);
  await client.workflow.signalWithStart<typeof agentRegistry, [HostAgents]>('agentRegistry', {
    workflowId: agentRegistryId,
    taskQueue: config.taskQueue,
    args: [[]],
    signal: agentsReportSignal,
    signalArgs: [{ hostId: config.hostId, at: new Date().toISOString(), agents }],
  });
}

export interface WorkerHandle {
  /** Resolves when every worker of this process has stopped. */
  done: Promise<void>;
  shutdown(): void;
}

let runtimeInstalled = false;

/** See the shared worker's options below; a busy worker that misses it replays the run from its history (slower, not wrong). */
export const stickyQueueScheduleToStartTimeout = '2s';

/** The SDK's runtime, once a process: its log filter and, when a port is set, the Prometheus endpoint. */
function installRuntime(config: Config): void {
  if (!runtimeInstalled) {
    Runtime.install({
      telemetryOptions: {
        logging: { filter: makeTelemetryFilterString({ core: 'WARN' }), forward: {} },
        // One Prometheus endpoint for the SDK's worker metrics and Tarmac's own (emitted by
        // workflows and activities through the SDK's metric meter, never during replay).
        ...(config.workerMetricsPort > 0
          ? { metrics: { prometheus: { bindAddress: `${config.workerMetricsHost}:${config.workerMetricsPort}`, countersTotalSuffix: true } } }
          : {}),
      },
    });
    runtimeInstalled = true;
  }
}

/** What the activities are built from: the config's parts they use, and the host's Docker client. */
function activityDeps(config: Config, docker: Docker) {
  return {
    dataDir: config.dataDir,
    hostId: config.hostId,
    servesHost: config.workerQueues.includes('host'),
    docker,
    taskQueue: config.taskQueue,
    recipesDir: config.recipesDir,
    modelUpstreams: config.modelUpstreams,
    ...(config.scriptScenariosDir ? { scriptScenariosDir: config.scriptScenariosDir } : {}),
    environments: {
      egressAllow: [...config.egressAllow],
      setupEnv: config.environments.setupEnv,
      ...(config.environments.egressCa ? { caBundle: config.environments.egressCa } : {}),
      maxBytes: config.environments.envMaxBytes,
      cacheMaxBytes: config.environments.envCacheMaxBytes,
    },
  };
}

/** The workers of the queues this process serves, created in order: shared, then the host's and the placements'. */
async function createWorkers(config: Config, logger: Logger, connection: NativeConnection, activities: ReturnType<typeof createActivities>): Promise<Worker[]> {
  // TARMAC_WORKER_QUEUES: a deployment may run workflow workers and host workers as separate processes.
  const workers: Worker[] = [];
  // Every running activity is heartbeated (its own details repeated): a dead worker's step is retried in seconds.
  const interceptors = { activity: [heartbeating] };
  // Heartbeats reach Temporal as often as activities send them (every heartbeatEveryMs), not
  // throttled to 80% of the heartbeat timeout: a live step misses none before it is judged dead.
  const maxHeartbeatThrottleInterval = heartbeatEveryMs;
  if (config.workerQueues.includes('shared')) {
    workers.push(
      await Worker.create({
        connection,
        namespace: config.namespace,
        taskQueue: config.taskQueue,
        // The prebuilt bundle when current (setup builds it), else the sources; the choice is logged.
        ...workflowCodeOption(config.workflowBundle, logger),
        activities,
        interceptors,
        maxHeartbeatThrottleInterval,
        // A workflow task waiting on this worker's own (sticky) queue goes to the shared queue, to any
        // worker, after this: when this worker was killed, its runs go on in seconds, not Temporal's 10.
        stickyQueueScheduleToStartTimeout,
      }),
    );
  }
  if (config.workerQueues.includes('host')) {
    workers.push(
      await Worker.create({
        connection,
        namespace: config.namespace,
        taskQueue: hostQueue(config.hostId),
        activities,
        interceptors,
        maxHeartbeatThrottleInterval,
      }),
    );
    // A host also takes placements: the runs it places are pinned to its queue above.
    workers.push(
      await Worker.create({
        connection,
        namespace: config.namespace,
        taskQueue: placementQueue(config.taskQueue),
        activities,
        interceptors,
        maxHeartbeatThrottleInterval,
      }),
    );
  }
  return workers;
}

/**
 * Starts this host's workers: one on the shared queue (workflows and capsules any
 * host can run) and one on the host's own queue (steps that touch this host's
 * worktrees and Docker daemon), or only the one `TARMAC_WORKER_QUEUES` names.
 * This is the only place real clients are made.
 */
export async function startWorker(config: Config, logger: Logger): Promise<WorkerHandle> {
  installRuntime(config);
  const docker = new Docker({ socketPath: config.dockerSocket });
  await docker.ping();
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const deps = activityDeps(config, docker);
  const hostLog = {
    info: (message: string, meta?: Record<string, unknown>) => logger.info(meta ?? {}, message),
    warn: (message: string, meta?: Record<string, unknown>) => logger.warn(meta ?? {}, message),
  };
  // The host's warm gate pool (activities/containers/gate-pool.ts): gate containers started before any landing needs one.
  const gatePool =
    config.workerQueues.includes('host') && config.gatePool > 0
      ? createGatePool({
          dataDir: config.dataDir,
          hostId: config.hostId,
          docker,
          size: config.gatePool,
          image: defaultRunnerImage,
          environments: config.gatePoolEnvironments,
          log: hostLog,
        })
      : undefined;
  await gatePool?.start().catch((error: unknown) => logger.warn({ err: error }, 'the gate pool did not start; gates start their own containers'));
  // The landings' cleanups once their runs have closed (activities/janitor/run-janitor.ts): resumed below for this host's data dir.
  const runJanitor = createHostRunJanitor({ ...deps, ...(gatePool ? { gatePool } : {}), janitorLog: hostLog });
  const activities = createActivities({ ...deps, ...(gatePool ? { gatePool } : {}), runJanitor });
  const workers = await createWorkers(config, logger, connection, activities);
  // The registry hears this host before it takes work, so the API knows at once what it can run.
  const clientConnection = await Connection.connect({ address: config.temporalAddress });
  const client = new Client({ connection: clientConnection, namespace: config.namespace });
  const report = () =>
    reportAgents(client, config, docker).catch((error: unknown) => logger.warn({ err: error }, 'could not report the agents this worker can run'));
  await report();
  // A host sweeps its own data dir: its retention schedule is made (or updated) by its host worker.
  if (config.workerQueues.includes('host'))
    await ensureRetentionSchedule(client, config, logger).catch((error: unknown) =>
      logger.warn({ err: error }, 'could not put the retention schedule of this host in place'),
    );
  // Runs this host finished (or lost) before it stopped, whose cleanup waits for them to close.
  if (config.workerQueues.includes('host')) {
    const resumed = await runJanitor.resume(client);
    if (resumed > 0) logger.info({ runs: resumed }, 'cleanups of finished runs taken up again');
  }
  const reporting = setInterval(() => void report(), agentsReportEveryMs);
  reporting.unref();
  logger.info(
    {
      ...(config.workerQueues.includes('shared') ? { taskQueue: config.taskQueue } : {}),
      ...(config.workerQueues.includes('host') ? { hostQueue: hostQueue(config.hostId) } : {}),
      ...(config.workerMetricsPort > 0 ? { metrics: `http://${config.workerMetricsHost}:${config.workerMetricsPort}/metrics` } : {}),
    },
    'worker started',
  );
  const done = Promise.all(workers.map((worker) => worker.run())).then(async () => {
    clearInterval(reporting);
    await gatePool?.stop().catch((error: unknown) => logger.warn({ err: error }, 'the gate pool was not emptied'));
    await clientConnection.close();
    await connection.close();
    logger.info('worker stopped');
  });
  return {
    done,
    shutdown() {
      for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
    },
  };
}
