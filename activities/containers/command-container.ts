import { constants } from 'node:fs';
import { lstat, mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { containerPaths } from '../../core/harnesses/types';
import type { EnvironmentRef } from '../../core/environment-types';
import { failure, FailureCode } from '../../core/failures';
import { containerName } from '../../core/node/container-rules';
import { createStepContainer, labelKeys, removeStepContainers } from './containers';
import { environmentMount, environmentRoot, environmentsDir, linkProducts, readEnvironment } from '../environments/environments';

/**
 * The command container of an agent session in a repository environment (issue 24): the agent's
 * CLI stays in its own image, and its `run_command` runs here instead — on the environment's base
 * image, with the environment's files read-only at /tarmac/env and the session's own copy of the
 * workspace at /workspace (the path the agent sees), so the agent runs the project's real build and
 * tests. It is sandboxed like every container (createStepContainer: network none, read-only root,
 * no capabilities, non-root, limits) and runs only a wait; the tool gateway execs each command in it.
 *
 * It is the attempt's: named and labelled by the attempt's step, so a retried attempt finds it
 * again (or makes it again) by its labels, and it goes with the run's containers, by the run's label.
 */

/** The role label of a command container. */
const commandRole = 'command';

/** The step of an attempt's command container, from the session's own step (`session-<id>-a<n>`). */
export const commandStep = (sessionStep: string) => `${sessionStep}-command`;

/**
 * The container's only process: a wait that needs nothing of the image but `sh` and `sleep`. No
 * trap: as PID 1 it gets no signal it has no handler for, so a command that kills every process of
 * its user (`kill -9 -1`) kills the sleep, and the loop waits again.
 */
const waitScript = 'sleep infinity 2>/dev/null; while sleep 86400; do :; done';

/** A product whose name a line of `.git/info/exclude` cannot say (a setup named it): neither linked nor excluded. */
const unsayable = (product: string) => /[\n\r]/.test(product);

/** A path as an anchored line of a gitignore file, its pattern characters and trailing spaces escaped. */
const excludeLine = (path: string) => `/${path.replace(/[\\*?[]/g, (char) => `\\${char}`).replace(/ +$/, (spaces) => spaces.replaceAll(' ', '\\ '))}`;

/**
 * Links the environment's products into a fresh workspace copy (where the tree has nothing, never
 * through a link: linkProducts) and adds each linked path to the copy's `.git/info/exclude`, so an
 * agent's `git add -A` never commits them. Runs before any container has the copy: what it opens is
 * still what the worker copied, and it opens each part without following a link all the same.
 */
export async function linkEnvironment(copy: string, products: string[]): Promise<string[]> {
  const linked = await linkProducts(
    copy,
    products.filter((product) => !unsayable(product)),
  );
  if (linked.length === 0) return linked;
  const gitDir = join(copy, '.git');
  if (!(await lstat(gitDir).catch(() => undefined))?.isDirectory()) return linked;
  const infoDir = join(gitDir, 'info');
  const info = await lstat(infoDir).catch(() => undefined);
  if (!info) await mkdir(infoDir);
  else if (!info.isDirectory()) throw new Error(`${infoDir} is not a directory`);
  const file = await open(join(infoDir, 'exclude'), constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o644);
  try {
    await file.appendFile(`# the repository environment's products, linked by tarmac\n${linked.map(excludeLine).join('\n')}\n`);
  } finally {
    await file.close();
  }
  return linked;
}

interface CommandContainerInput {
  docker: Docker;
  dataDir: string;
  runId: string;
  /** The session attempt's step (`session-<id>-a<n>`). */
  sessionStep: string;
  /** Labels it shares with the session container (session, attempt). */
  labels: Record<string, string>;
  environment: EnvironmentRef;
  /** The attempt's workspace copy on the host. */
  workspace: string;
  /** A reviewer's copy is mounted read-only here too. */
  readOnly: boolean;
  /** Object directories the copy reads through alternates (mounted read-only at the same paths, for git). */
  objectDirs: string[];
  user: string;
  /** The session's own entries (HOME, git identity); the environment's come first. */
  env: string[];
  memoryBytes: number;
  nanoCpus: number;
  pidsLimit: number;
  logFile: string;
}

export interface CommandContainer {
  /** The container's id once it runs: found by its labels and started if it stopped, or made. */
  ensure: () => Promise<string>;
  /** Removes it (by the run's and the step's labels). */
  remove: () => Promise<void>;
}

const statusCode = (error: unknown) => (error as { statusCode?: number } | undefined)?.statusCode;

export function commandContainer(input: CommandContainerInput): CommandContainer {
  const { docker, dataDir, runId, environment } = input;
  const step = commandStep(input.sessionStep);
  const labels = { ...input.labels, [labelKeys.run]: runId, [labelKeys.step]: step, [labelKeys.role]: commandRole, 'tarmac.environment': environment.key };
  const name = containerName(runId, step);
  let pending: Promise<string> | undefined;

  const find = async (): Promise<Docker.ContainerInfo | undefined> =>
    (await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${labelKeys.run}=${runId}`, `${labelKeys.step}=${step}`] }) }))[0];

  const create = async (): Promise<string> => {
    // A bind of a missing directory would be made empty by Docker: an environment that is not on this host is said so.
    if (!(await readEnvironment(dataDir, environment.key))) {
      throw failure(
        FailureCode.invalidRequest,
        `environment ${environment.key} is not on this host (${join(environmentsDir(dataDir), environment.key.replace(/^sha256:/, ''))}): the session's commands cannot run in it`,
      );
    }
    await docker
      .getImage(environment.image)
      .inspect()
      .catch(() => {
        throw failure(FailureCode.imageMissing, `image ${environment.image} of environment ${environment.key} is not on this Docker host`);
      });
    const root = environmentRoot(dataDir, environment.key);
    try {
      const made = await createStepContainer(
        docker,
        {
          labels,
          image: environment.image,
          entrypoint: ['/bin/sh', '-c'],
          cmd: [waitScript],
          user: input.user,
          env: [...Object.entries(environment.env).map(([key, value]) => `${key}=${value}`), ...input.env, `TARMAC_ENVIRONMENT=${environment.key}`],
          binds: [
            `${input.workspace}:${containerPaths.workspace}:${input.readOnly ? 'ro' : 'rw'}`,
            `${root}:${environmentMount}:ro`,
            ...input.objectDirs.map((dir) => `${dir}:${dir}:ro`),
          ],
          workingDir: containerPaths.workspace,
          timeoutMs: 0,
          logFile: input.logFile,
          memoryBytes: input.memoryBytes,
          nanoCpus: input.nanoCpus,
          pidsLimit: input.pidsLimit,
        },
        name,
        1024 * 1024,
      );
      return made.id;
    } catch (error) {
      if (statusCode(error) !== 409) throw error;
      // A racing attempt made it under the step's name a moment ago: it is this step's when its labels are.
      const raced = await docker.getContainer(name).inspect();
      if (raced.Config.Labels?.[labelKeys.run] !== runId || raced.Config.Labels?.[labelKeys.step] !== step)
        throw new Error(`container name ${name} is taken by a container that is not this step's`);
      return raced.Id;
    }
  };

  /** The container running: the one this call knew, an earlier attempt's (reattached, or started again after it stopped), else a new one. */
  let known: string | undefined;
  const stateOf = async (id: string) =>
    await docker
      .getContainer(id)
      .inspect()
      .then((info) => info.State)
      .catch((error: unknown) => {
        if (statusCode(error) === 404) return undefined;
        throw error;
      });
  const running = async (): Promise<string> => {
    let id = known ?? (await find())?.Id ?? (await create());
    let state = await stateOf(id);
    if (!state) {
      // Removed under it (an operator, the run's cleanup racing a late command): made again.
      id = (await find())?.Id ?? (await create());
      state = await stateOf(id);
    }
    if (!state?.Running) {
      try {
        await docker.getContainer(id).start();
      } catch (error) {
        // 304: started a moment ago by a racing call.
        if (statusCode(error) !== 304) throw error;
      }
    }
    known = id;
    return id;
  };

  return {
    ensure: async () => {
      // One at a time (an agent may run commands side by side); a failure is not kept: the next command tries again.
      pending ??= running().finally(() => {
        pending = undefined;
      });
      return await pending;
    },
    remove: async () => {
      await removeStepContainers(docker, runId, step);
    },
  };
}
