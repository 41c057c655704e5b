/**
 * A landing's cleanup, after its workflow has closed: the host's run janitor.
 *
 * A landing's last step used to be a cleanup activity of its own — a trip to the host, the run's
 * containers and workspace removed, a trip back, and one more workflow task to end the run: ~100 ms
 * on the critical path of every landing, for work nobody waits on. Now the landing's last step
 * (`capsule.finishRun`, a local activity on its host) frees the target, stores the outcome and
 * leaves a marker in the run's directory; the run closes in the same workflow task. This janitor
 * then waits until Temporal says the run is closed — nothing can read the workspace any more: a
 * replayed or retried workflow task of a running landing may still verify or push from it — and
 * removes exactly what the cleanup activity removed (the run's labelled containers, the paths its
 * manifest lists), keeping logs and outcome. What it did, or why it failed, goes to `cleanup.json`
 * beside the outcome, and to the worker's log.
 *
 * The marker is the durable part: a worker stopped (or killed) before it cleaned up finds the
 * markers of its data dir when it starts again (`resume`) and finishes the job. A run this host
 * lost (another host re-placed it) cleans up the same way when the host comes back.
 */
import { readdir, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { runPaths, writeFileAtomic } from '../stores/run-store';

/** The marker of a run whose cleanup waits for its workflow to close. */
export const cleanupMarker = 'cleanup-pending.json';
/** What the janitor did: `{ removedPaths, removedContainers, at }`, or `{ error, at }`. */
export const cleanupRecord = 'cleanup.json';

interface RunJanitorDeps {
  dataDir: string;
  /** Removes the run's labelled containers; answers how many. */
  removeContainers: (runId: string) => Promise<number>;
  /** Removes the paths the run's manifest lists; answers them. */
  removeFiles: (runId: string) => Promise<string[]>;
  log: { info(message: string, meta?: Record<string, unknown>): void; warn(message: string, meta?: Record<string, unknown>): void };
  /** The wait between two looks at a running workflow: first, and the longest (doubling between). */
  pollMs?: { first: number; max: number };
}

export interface RunJanitor {
  /** Marks the run for cleanup once its workflow has closed, and starts waiting for that. Idempotent. */
  finishLater(runId: string, client: Client): Promise<void>;
  /** Takes up every marked run of this data dir (a worker's start); answers how many. */
  resume(client: Client): Promise<number>;
  /** The cleanups in flight, settled (tests, shutdown). */
  settled(): Promise<void>;
}

export function createRunJanitor({ dataDir, removeContainers, removeFiles, log, pollMs = { first: 25, max: 5_000 } }: RunJanitorDeps): RunJanitor {
  const inFlight = new Map<string, Promise<void>>();

  /** A pause that never keeps the process alive (a worker that stops leaves the rest to its next start). */
  const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

  /**
   * Resolves once the run's workflow is not running (closed, or gone past retention). Temporal out
   * of reach for a while (restarted) is waited out: asked again every few seconds.
   */
  const closed = async (client: Client, runId: string): Promise<string> => {
    let wait = pollMs.first;
    for (;;) {
      try {
        const { status } = await client.workflow.getHandle(runId).describe();
        if (status.name !== 'RUNNING') return status.name;
      } catch (error) {
        if (error instanceof WorkflowNotFoundError) return 'NOT_FOUND';
        wait = Math.max(wait, 1_000);
      }
      await pause(wait);
      wait = Math.min(wait * 2, pollMs.max);
    }
  };

  /** The containers first (none may still write into the files), then the manifest's paths; tried three times. */
  const remove = async (runId: string): Promise<{ removedContainers: number; removedPaths: string[] }> => {
    for (let attempt = 1; ; attempt++) {
      try {
        const removedContainers = await removeContainers(runId);
        return { removedContainers, removedPaths: await removeFiles(runId) };
      } catch (error) {
        if (attempt >= 3) throw error;
        await pause(attempt * 2_000);
      }
    }
  };

  const clean = async (runId: string, client: Client): Promise<void> => {
    const paths = runPaths(dataDir, runId);
    const status = await closed(client, runId);
    const record = (what: Record<string, unknown>) =>
      writeFileAtomic(
        join(paths.runDir, cleanupRecord),
        `${JSON.stringify({ runId, workflowStatus: status, ...what, at: new Date().toISOString() }, null, 2)}\n`,
        { durable: false },
      );
    try {
      const { removedContainers, removedPaths } = await remove(runId);
      await record({ removedPaths, removedContainers });
      await rm(join(paths.runDir, cleanupMarker), { force: true });
      log.info('run cleaned up after it closed', { runId, workflowStatus: status, removedContainers, removedPaths: removedPaths.length });
    } catch (error) {
      // Kept marked: the next start of this host's worker tries again.
      await record({ error: String(error) }).catch(() => undefined);
      log.warn('run cleanup failed; tried again when this worker starts', { runId, error: String(error) });
    }
  };

  const schedule = (runId: string, client: Client): void => {
    if (inFlight.has(runId)) return;
    const job = clean(runId, client)
      .catch((error: unknown) =>
        log.warn('run cleanup stopped waiting for the run to close; taken up again when this worker starts', { runId, error: String(error) }),
      )
      .finally(() => inFlight.delete(runId));
    inFlight.set(runId, job);
  };

  return {
    async finishLater(runId, client) {
      const paths = runPaths(dataDir, runId);
      if (!existsSync(paths.runDir)) return;
      await writeFileAtomic(join(paths.runDir, cleanupMarker), `${JSON.stringify({ runId, markedAt: new Date().toISOString() })}\n`);
      schedule(runId, client);
    },
    async resume(client) {
      const runsDir = join(dataDir, 'runs');
      const runs = existsSync(runsDir) ? await readdir(runsDir) : [];
      let taken = 0;
      for (const runId of runs) {
        if (!existsSync(join(runsDir, runId, cleanupMarker))) continue;
        schedule(runId, client);
        taken += 1;
      }
      return taken;
    },
    async settled() {
      await Promise.all([...inFlight.values()]);
    },
  };
}
