import Docker from 'dockerode';
import { NativeConnection, Runtime, Worker, makeTelemetryFilterString } from '@temporalio/worker';
import type { Logger } from 'pino';
import { createActivities } from '../activities';
import type { Config } from '../core/config';
import { hostQueue } from '../core/queues';

export interface WorkerHandle {
  /** Resolves when both workers have stopped. */
  done: Promise<void>;
  shutdown(): void;
}

let runtimeInstalled = false;

/**
 * Starts this host's workers: one on the shared queue (workflows and capsules any
 * host can run) and one on the host's own queue (steps that touch this host's
 * worktrees and Docker daemon). This is the only place real clients are made.
 */
export async function startWorker(config: Config, logger: Logger): Promise<WorkerHandle> {
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
  const docker = new Docker({ socketPath: config.dockerSocket });
  await docker.ping();
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const activities = createActivities({ dataDir: config.dataDir, hostId: config.hostId, docker, taskQueue: config.taskQueue, modelUpstreams: config.modelUpstreams });
  const bundle = process.env.TARMAC_WORKFLOW_BUNDLE;
  const shared = await Worker.create({
    connection,
    namespace: config.namespace,
    taskQueue: config.taskQueue,
    ...(bundle ? { workflowBundle: { codePath: bundle } } : { workflowsPath: require.resolve('../workflows') }),
    activities,
  });
  const host = await Worker.create({
    connection,
    namespace: config.namespace,
    taskQueue: hostQueue(config.hostId),
    activities,
  });
  logger.info(
    { taskQueue: config.taskQueue, hostQueue: hostQueue(config.hostId), ...(config.workerMetricsPort > 0 ? { metrics: `http://${config.workerMetricsHost}:${config.workerMetricsPort}/metrics` } : {}) },
    'worker started',
  );
  const done = Promise.all([shared.run(), host.run()]).then(async () => {
    await connection.close();
    logger.info('worker stopped');
  });
  return {
    done,
    shutdown() {
      if (shared.getState() === 'RUNNING') shared.shutdown();
      if (host.getState() === 'RUNNING') host.shutdown();
    },
  };
}
