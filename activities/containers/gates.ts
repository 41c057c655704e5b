import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { log } from '@temporalio/activity';
import type Docker from 'dockerode';
import type { GateSuite } from '../../core/gate-file';
import type { GateSuiteResult } from '../../core/types';
import { sealDecision, suiteDefinitionText, type GateCacheKey } from '../../policies/gate-cache-key';
import { createStepContainerAhead, labelKeys, removeRunContainers, removeStepContainers, runStepContainer, type ContainerSpec } from './containers';
import { createGateCache, type GateCacheLookup } from '../stores/gate-cache';
import { containerUser, gitArgs, handToContainerUser } from '../git/git';
import { dataRef, mirrorPath, recordInManifest, runPaths, writeFileAtomic } from '../stores/run-store';
import { leanPipe } from '../git/lean-spawn';
import type { GatePool } from './gate-pool';
import type { EnvironmentRef } from '../../core/environment-types';
import { environmentMount, environmentRoot, linkProducts } from '../environments/environments';

interface GateActivityDeps {
  dataDir: string;
  hostId: string;
  docker: Docker;
  /** The host's warm gate pool (activities/containers/gate-pool.ts); none: every suite starts its own container. */
  gatePool?: GatePool;
}

export interface RunGateSuiteInput {
  runId: string;
  repo: string;
  /** The commit whose tree is gated; the result is recorded against its tree SHA. */
  commitSha: string;
  treeSha: string;
  suite: GateSuite;
  image: string;
  timeoutMs: number;
  /** Gate round (1 for the first gate, 2 after a fixup…): part of the step's identity. */
  round: number;
  /**
   * Default true: a sealed result of the same tree, suite definition and runner image is reused
   * (no container). False: the suite runs whatever the cache holds, and its result replaces the
   * sealed one (a red re-run to tell a flake from a failure; a nightly; a fix loop's repro).
   */
  reuse?: boolean;
  /**
   * A run that settles a red result (workflows/landing/flake.ts): `same-tree` runs the suite again on
   * the identical tree (TARMAC_GATE_ATTEMPT=2), `base` on the commit the head is rebased onto. Part
   * of the step's identity, so neither reattaches to the round's own container.
   */
  evidence?: 'same-tree' | 'base';
  /**
   * The repository's environment (activities/environments/environments.ts): the suite runs on its base image,
   * with its files read-only at /tarmac/env and linked into the tree where the tree has nothing.
   * Its key is part of the suite's definition: a result is reused only in the same environment.
   */
  environment?: EnvironmentRef;
}

/**
 * The version of the sandbox a suite runs in (user, limits, mounts, network, the environment's
 * shape; activities/containers/containers.ts): part of every suite's definition digest. Change it with the
 * sandbox, and no result of the old one is reused.
 */
const gateSandboxVersion = 'gate-sandbox-1';

/** Writes the exact tree of a commit into a fresh directory (no .git, nothing else). */
async function exportTree(repository: string, commitSha: string, dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const [archive, tar] = await leanPipe(
    { command: 'git', args: gitArgs(repository, 'archive', '--format=tar', commitSha) },
    { command: 'tar', args: ['-x', '-C', dir], stdout: 'ignore' },
  );
  if (archive.code !== 0) throw new Error(`git archive ${commitSha} exited ${archive.code}: ${archive.stderr.toString('utf8').trim()}`);
  if (tar.code !== 0) throw new Error(`tar -x -C ${dir} exited ${tar.code}: ${tar.stderr.toString('utf8').trim()}`);
}

/** A suite's environment apart from the tree's own SHA (which is the cache key's tree); with a repository environment, its entries and key. */
const suiteEnv = (suite: GateSuite, environment?: EnvironmentRef) => [
  ...(environment ? Object.entries(environment.env).map(([name, value]) => `${name}=${value}`) : []),
  'HOME=/tmp',
  'CI=1',
  `TARMAC_SUITE=${suite.id}`,
  ...(environment ? [`TARMAC_ENVIRONMENT=${environment.key}`] : []),
];

/** The suite's definition digest: what decides what runs (policies/gate-cache-key.ts). */
const suiteDigest = (suite: GateSuite, timeoutMs: number, environment?: EnvironmentRef) =>
  `sha256:${createHash('sha256')
    .update(suiteDefinitionText({ suite, timeoutMs, env: suiteEnv(suite, environment), sandbox: gateSandboxVersion }))
    .digest('hex')}`;

/** The key of a suite on a tree with the image as Docker has it now; none when Docker does not know the image (the run reports that). */
async function currentGateKey(docker: Docker, { treeSha, suite, image, timeoutMs, environment }: RunGateSuiteInput): Promise<GateCacheKey | undefined> {
  const imageId = await docker
    .getImage(environment?.image ?? image)
    .inspect()
    .then((info) => info.Id)
    .catch(() => undefined);
  return imageId ? { treeSha, suiteId: suite.id, suiteDigest: suiteDigest(suite, timeoutMs, environment), imageId } : undefined;
}

/** The container of one suite on one tree, and the snapshot of that tree it mounts. */
function gateSuiteContainer(
  { dataDir, hostId, user }: { dataDir: string; hostId: string; user: { uid: number; gid: number } },
  { runId, repo, commitSha, treeSha, suite, image, timeoutMs, round, evidence, environment }: RunGateSuiteInput,
): { spec: ContainerSpec; logFile: string; step: string } {
  const paths = runPaths(dataDir, runId);
  const step = `gate-${suite.id}-${treeSha.slice(0, 12)}-r${round}${evidence ? `-${evidence}` : ''}`;
  const snapshot = join(paths.snapshots, step);
  const logFile = join(paths.logs, `${step}.log`);
  const spec: ContainerSpec = {
    labels: {
      [labelKeys.run]: runId,
      [labelKeys.step]: step,
      [labelKeys.role]: 'gate',
      [labelKeys.tree]: treeSha,
      'tarmac.suite': suite.id,
      'tarmac.host': hostId,
    },
    image: environment?.image ?? image,
    cmd: suite.run,
    user: `${user.uid}:${user.gid}`,
    // TARMAC_GATE_ATTEMPT: which run of the suite on this tree in this round (2: the re-run that settles a red).
    env: [...suiteEnv(suite, environment), `TARMAC_TREE_SHA=${treeSha}`, `TARMAC_GATE_ATTEMPT=${evidence === 'same-tree' ? 2 : 1}`],
    binds: [`${snapshot}:/workspace:rw`, ...(environment ? [`${environmentRoot(dataDir, environment.key)}:${environmentMount}:ro`] : [])],
    workingDir: '/workspace',
    timeoutMs,
    logFile,
    ...snapshotPreparation({ dataDir, hostId, runId, repo, commitSha, snapshot }, environment ? (dir) => linkProducts(dir, environment.products) : undefined),
  };
  return { spec, logFile, step };
}

/**
 * A step container's snapshot of one commit: a fresh container gets a fresh snapshot (exported while
 * the container is created, recorded in the run's manifest first so cleanup finds it); a reattached
 * one keeps the tree its container is using (`<snapshot>.ready` is written once it is complete).
 */
export function snapshotPreparation(
  { dataDir, hostId, runId, repo, commitSha, snapshot }: { dataDir: string; hostId: string; runId: string; repo: string; commitSha: string; snapshot: string },
  link?: (snapshot: string) => Promise<unknown>,
): Pick<ContainerSpec, 'prepare' | 'isPrepared'> {
  const paths = runPaths(dataDir, runId);
  const ready = `${snapshot}.ready`;
  return {
    prepare: async () => {
      await rm(ready, { force: true });
      await recordInManifest(
        paths.manifest,
        { runId, repo, mirror: mirrorPath(dataDir, repo), hostId, createdAt: new Date().toISOString(), containerRunLabel: runId },
        { dirs: [snapshot, ready] },
      );
      // The workspace holds the run's own commits (rebased, fixed) and reads the rest from the mirror.
      await exportTree(paths.worktree, commitSha, snapshot);
      if (link) await link(snapshot);
      await handToContainerUser(snapshot);
      await writeFile(ready, `${commitSha}\n`);
    },
    isPrepared: async () => existsSync(ready),
  };
}

export function createGateActivities({ dataDir, hostId, docker, gatePool }: GateActivityDeps) {
  const user = containerUser();
  const cache = createGateCache({ dataDir });
  const currentKey = (input: RunGateSuiteInput) => currentGateKey(docker, input);
  const suiteContainer = (input: RunGateSuiteInput) => gateSuiteContainer({ dataDir, hostId, user }, input);

  return {
    /**
     * Runs one suite of the gate in a sandbox container against exactly one tree.
     * The suite's result is data (passed / failed / timed-out), not an activity failure.
     */
    runGateSuite: async (input: RunGateSuiteInput): Promise<GateSuiteResult> => {
      const { runId, suite, treeSha } = input;
      const { spec, logFile, step } = suiteContainer(input);
      const key = await currentKey(input);
      if (input.reuse !== false && key) {
        const found = await cache.lookup(key);
        if ('hit' in found) {
          const { result, sealedBy } = found.hit;
          // No container for this step: one made ahead by the placement (or by an earlier attempt) goes.
          const removed = await removeStepContainers(docker, runId, step);
          await mkdir(runPaths(dataDir, runId).logs, { recursive: true });
          await writeFileAtomic(logFile, found.hit.log, { durable: false });
          // Sealed by this very step (an attempt that ran the suite and died before it reported): its own run, not a reuse.
          const own = sealedBy.runId === runId && sealedBy.step === step;
          log.info('gate cache hit: the suite is not run', {
            runId,
            suite: suite.id,
            treeSha,
            status: result.status,
            sealedBy,
            sealedAt: found.hit.sealedAt,
            removedContainers: removed.length,
            own,
          });
          return {
            suiteId: suite.id,
            treeSha,
            status: result.status,
            exitCode: result.exitCode,
            logRef: dataRef(dataDir, logFile),
            durationMs: result.durationMs,
            reattached: own,
            cache: own ? 'miss' : 'hit',
          };
        }
      }
      // The pool's container when the placement assigned it this very step and gave its go (gate-pool.ts).
      const adopt = gatePool && !input.evidence ? await gatePool.adoptable(runId, step) : undefined;
      const result = await runStepContainer(docker, adopt ? { ...spec, adopt } : spec);
      const status = result.timedOut ? 'timed-out' : result.exitCode === 0 ? 'passed' : 'failed';
      // Sealed under the image the container was made from (it may have been made ahead, from an older build of the tag).
      const imageId = await docker
        .getContainer(result.containerId)
        .inspect()
        .then((info) => info.Image)
        .catch(() => undefined);
      const logContent = await readFile(logFile).catch(() => undefined);
      const decision = sealDecision({ status, oomKilled: result.oomKilled, logKept: logContent !== undefined });
      if (!decision.seal) log.info('gate result not sealed', { runId, suite: suite.id, treeSha, reason: decision.reason });
      else if (key && imageId && status !== 'timed-out') {
        await cache
          .seal({ ...key, imageId }, { status, exitCode: result.exitCode, durationMs: result.durationMs }, logContent!, { runId, step, hostId })
          .catch((error: unknown) => {
            log.warn('gate result not sealed: the cache could not be written', { runId, suite: suite.id, error: String(error) });
          });
      }
      return {
        suiteId: suite.id,
        treeSha,
        status,
        exitCode: result.exitCode,
        logRef: dataRef(dataDir, logFile),
        durationMs: result.durationMs,
        reattached: result.reattached,
        cache: 'miss',
      };
    },

    /** A sealed result for this suite on this tree (the placement makes no container ahead for it). */
    sealedResult: async (input: RunGateSuiteInput): Promise<GateCacheLookup> => {
      const key = input.reuse !== false ? await currentKey(input) : undefined;
      return key ? await cache.lookup(key) : { miss: 'not looked up' };
    },

    /**
     * Makes a suite's container ahead of its gate round (snapshot exported, container created, not
     * started), so the round only starts it; the landing's placement does this beside its patch
     * check, and starts it when nothing can stop the landing before its gate.
     */
    prepareGateSuite: async (input: RunGateSuiteInput): Promise<Docker.Container> => await createStepContainerAhead(docker, suiteContainer(input).spec),

    /**
     * Takes a container of the host's gate pool for this suite (the placement's, for its first round):
     * the tree exported into its workspace (with the environment's products linked), the suite's
     * environment and command beside its go. False when the pool cannot run this suite (another
     * image, an evidence run) or has none ready — for a repository environment, none made for its key.
     */
    claimPooled: async (input: RunGateSuiteInput): Promise<boolean> => {
      const { environment } = input;
      // Without an environment: a container of the default runner. With one: only a container made for its very key.
      if (!gatePool || gatePool.size <= 0 || input.evidence || (!environment && input.image !== gatePool.image)) return false;
      const { spec, step } = suiteContainer(input);
      if (spec.entrypoint || spec.memoryBytes !== undefined || spec.nanoCpus !== undefined || spec.pidsLimit !== undefined || spec.maxLogBytes !== undefined)
        return false;
      if (!(await gatePool.claim({ runId: input.runId, repo: input.repo, ...(environment ? { environment: environment.key } : {}) }))) return false;
      const products = environment?.products ?? [];
      await gatePool.assign({
        runId: input.runId,
        worktree: runPaths(dataDir, input.runId).worktree,
        commitSha: input.commitSha,
        treeSha: input.treeSha,
        step,
        env: spec.env,
        command: spec.cmd,
        products,
      });
      return true;
    },

    /** The go for the run's claimed pool container, or its removal when the landing does not gate next. */
    goPooled: async (runId: string): Promise<void> => await gatePool?.go(runId),
    discardPooled: async (runId: string): Promise<void> => await gatePool?.discard(runId),

    /** Removes the run's containers, found by the run's label only (and its claimed pool container by the slot's). */
    removeRunContainers: async ({ runId }: { runId: string }): Promise<{ removed: number }> => {
      const [own, pooled] = await Promise.all([removeRunContainers(docker, runId), gatePool?.removeClaimed(runId) ?? 0]);
      return { removed: own.length + pooled };
    },
  };
}

export type GateActivities = ReturnType<typeof createGateActivities>;
