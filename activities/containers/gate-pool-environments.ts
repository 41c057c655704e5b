/**
 * The warm gate pool's containers for repository environments (activities/containers/gate-pool.ts): what a
 * container made for one environment key mounts, how the pool tells that the files it mounts are
 * still that environment's on the host, and whether a base image has the shell the pool's wait needs.
 *
 * A container made for a key mounts that key's files read-only at /tarmac/env — the same bind a
 * gate of that environment gets — and carries the key in its label. It is claimed only by a suite
 * of the same key: the pool finds it by key, and checks the container's own label and mount before
 * it hands it over. An environment the collection or the retention sweep removed (or removed and
 * built again: another directory under the same name) makes its waiting containers stale: they go.
 */
import { stat } from 'node:fs/promises';
import type Docker from 'dockerode';
import { createStepContainer } from './containers';
import { environmentMount, environmentRoot, readEnvironment } from '../environments/environments';

/** The label that names the environment (its key's hex) a pool container was made for. */
export const poolEnvironmentLabel = 'tarmac.environment';

export const keyHex = (key: string) => key.replace(/^sha256:/, '');

/** An environment's files on the host, as a pool container of its key mounts them. */
export interface PoolEnvironmentRoot {
  key: string;
  /** `<dataDir>/cache/environments/<hex>/root`. */
  path: string;
  /** The base image's ID the key was built on (part of the key): the container's image. */
  imageId: string;
  /** Which directory it is (`dev:ino`): a collected and rebuilt environment is another one. */
  identity: string;
}

/** The environment's files as they are on the host now; undefined when it is gone (collected, swept, half built). */
export async function currentEnvironmentRoot(dataDir: string, key: string): Promise<PoolEnvironmentRoot | undefined> {
  const record = await readEnvironment(dataDir, key);
  if (!record) return undefined;
  const path = environmentRoot(dataDir, key);
  const info = await stat(path).catch(() => undefined);
  return info?.isDirectory() ? { key, path, imageId: record.baseImageId, identity: `${info.dev}:${info.ino}` } : undefined;
}

/**
 * Why an inspected pool container may not run a suite (undefined: it may). It must be running, from
 * the image it is meant to run; a default one carries no environment and mounts nothing at
 * /tarmac/env; one of an environment carries exactly that key and mounts exactly its files, read-only.
 */
export function poolContainerProblem(state: Docker.ContainerInspectInfo, want: { imageId: string; environment?: PoolEnvironmentRoot }): string | undefined {
  if (!state.State.Running) return `not running (${state.State.Status})`;
  if (state.Image !== want.imageId) return 'made from an older build of the image';
  const label = state.Config.Labels?.[poolEnvironmentLabel];
  const mounts = (state.Mounts ?? []).filter((mount) => mount.Destination === environmentMount);
  if (!want.environment) return label === undefined && mounts.length === 0 ? undefined : `made for environment ${label ?? '(unlabelled)'}`;
  if (label !== keyHex(want.environment.key)) return `made for another environment (${label ?? 'none'})`;
  const [mount] = mounts;
  if (mounts.length !== 1 || mount!.Source !== want.environment.path || mount!.RW) return 'it does not mount exactly its environment read-only';
  return undefined;
}

/**
 * Whether an image has the bash the pool's wait runs on (`poolWaiter` uses its builtins): one
 * `/bin/bash -c true` in the gate sandbox, labelled as the pool's (a killed worker's probe goes at
 * the next start with the pool's other leftovers). Start refused or a non-zero exit: no bash.
 */
export async function imageHasBash(
  docker: Docker,
  imageId: string,
  { labels, user, name }: { labels: Record<string, string>; user: string; name: string },
): Promise<boolean> {
  const container = await createStepContainer(
    docker,
    { labels, image: imageId, entrypoint: ['/bin/bash', '-c', 'true'], cmd: [], user, env: [], binds: [], workingDir: '/', timeoutMs: 0, logFile: '' },
    name,
    1024 * 1024,
  );
  try {
    await container.start();
    const exited = (await container.wait()) as { StatusCode?: number };
    return exited.StatusCode === 0;
  } catch {
    return false;
  } finally {
    await container.remove({ force: true }).catch(() => undefined);
  }
}
