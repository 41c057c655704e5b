import type { Readable } from 'node:stream';
import { Context } from '@temporalio/activity';
import type Docker from 'dockerode';
import { checkNetwork, containerName } from '../../core/node/container-rules';
import { failure, FailureCode } from '../../core/failures';
import { copyCappedLog, defaultMaxLogBytes, readCappedStdout } from './container-logs';
import { heartbeatWith } from './heartbeat-details';

/** Label keys that mark a container as Tarmac's. Removal is only ever by these labels. */
export const labelKeys = {
  run: 'tarmac.run',
  step: 'tarmac.step',
  role: 'tarmac.role',
  tree: 'tarmac.tree',
  /** Made (and maybe started) ahead of its step by the landing's placement: the step's first run, not a reattach. */
  ahead: 'tarmac.ahead',
} as const;

export interface ContainerSpec {
  /** Labels identifying the container; `tarmac.run` and `tarmac.step` together are unique per step. */
  labels: Record<string, string> & { 'tarmac.run': string; 'tarmac.step': string };
  image: string;
  /** Overrides the image's entrypoint (default: the image's own). */
  entrypoint?: string[];
  cmd: string[];
  user: string;
  env: string[];
  binds: string[];
  workingDir: string;
  timeoutMs: number;
  logFile: string;
  /**
   * Most bytes kept of the container's log: the copy in `logFile` (which then ends with
   * a `[tarmac] log truncated after N bytes` line) and Docker's own json-file log.
   * Default 16 MiB.
   */
  maxLogBytes?: number;
  /** Resource limits; defaults suit a gate suite on a small machine. */
  memoryBytes?: number;
  nanoCpus?: number;
  pidsLimit?: number;
  /**
   * Default and only accepted value `none`: agent and gate containers run untrusted code,
   * and anything else is refused before a container is made (see core/container-rules).
   */
  networkMode?: string;
  /**
   * Work the container needs before it first starts (its workspace on the host): done side by
   * side with creating a new container, and again for a container found never started unless
   * `isPrepared` says an earlier attempt finished it (a crash between create and start, or a
   * container made ahead of time by `createStepContainerAhead`).
   */
  prepare?: () => Promise<void>;
  isPrepared?: () => Promise<boolean>;
  /** Called with the container id as soon as it is known (new or reattached), before it runs. */
  onContainer?: (containerId: string) => void;
  /**
   * A container of the host's gate pool this step was assigned and given its go (activities/containers/gate-pool.ts):
   * taken as the step's own container, its run counted from `startedAtMs` (the go), not from Docker's start.
   */
  adopt?: { containerId: string; startedAtMs: number };
  /** Called once the container runs (started now, or found from an earlier attempt). */
  onRunning?: (info: { containerId: string; reattached: boolean }) => void;
  /** Called on the container's first output (an agent's first turn, as far as the host can see). */
  onFirstOutput?: () => void;
}

export interface ContainerResult {
  containerId: string;
  exitCode: number | null;
  oomKilled: boolean;
  timedOut: boolean;
  reattached: boolean;
  /** The container had already exited when this attempt found it (its result was never collected). */
  foundFinished: boolean;
  durationMs: number;
}

const heartbeatEveryMs = 2_000;
/** How long the log copy may take to finish once the container has exited. */
const logDrainMs = 15_000;

async function findByLabels(docker: Docker, labels: Record<string, string>): Promise<Docker.ContainerInfo | undefined> {
  const filters = { label: Object.entries(labels).map(([key, value]) => `${key}=${value}`) };
  const found = await docker.listContainers({ all: true, filters: JSON.stringify(filters) });
  return found[0];
}

async function ensureImage(docker: Docker, image: string): Promise<void> {
  try {
    await docker.getImage(image).inspect();
  } catch {
    throw failure(FailureCode.imageMissing, `image ${image} is not on this Docker host; build it with scripts/setup.sh or docker build`);
  }
}

/** Follows the container's log (with timestamps) into a file, capped (see copyCappedLog). */
async function streamLogs(container: Docker.Container, logFile: string, maxBytes: number, onFirstOutput?: () => void): Promise<void> {
  const stream = (await container.logs({ follow: true, stdout: true, stderr: true, timestamps: true })) as unknown as Readable;
  await copyCappedLog(stream, logFile, maxBytes, onFirstOutput);
}

function statusCode(error: unknown): number | undefined {
  return (error as { statusCode?: number } | undefined)?.statusCode;
}

/** Creates the step's container under its deterministic name, sandboxed per the container contract (the gate pool's too). */
export async function createStepContainer(
  docker: Docker,
  spec: Omit<ContainerSpec, 'labels'> & { labels: Record<string, string> },
  name: string,
  maxLogBytes: number,
): Promise<Docker.Container> {
  return await docker.createContainer({
    name,
    Image: spec.image,
    ...(spec.entrypoint ? { Entrypoint: spec.entrypoint } : {}),
    Cmd: spec.cmd,
    User: spec.user,
    Env: spec.env,
    WorkingDir: spec.workingDir,
    Labels: spec.labels,
    HostConfig: {
      Binds: spec.binds,
      NetworkMode: 'none',
      ReadonlyRootfs: true,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      Tmpfs: { '/tmp': 'rw,exec,nosuid,size=1g' },
      Memory: spec.memoryBytes ?? 2 * 1024 ** 3,
      // No swap beyond the memory limit: over the limit means OOM, not a slow crawl.
      MemorySwap: spec.memoryBytes ?? 2 * 1024 ** 3,
      NanoCpus: spec.nanoCpus ?? 2e9,
      PidsLimit: spec.pidsLimit ?? 512,
      // Docker's own copy of the output is capped too (two files of at most the cap each),
      // whatever the daemon's default log driver is: the logs API reads json-file.
      LogConfig: { Type: 'json-file', Config: { 'max-size': String(maxLogBytes), 'max-file': '2' } },
    },
  });
}

/**
 * The container a racing attempt is creating under the step's name. Docker reserves the
 * name before the container can be inspected, so it is looked up by name a few times
 * (up to 10 s). A container with our name but not our labels is not ours to use: that
 * fails loudly instead of reattaching to it.
 */
async function racingContainer(docker: Docker, name: string, labels: Record<string, string>): Promise<Docker.ContainerInfo> {
  for (let tries = 1; ; tries += 1) {
    let inspected: Docker.ContainerInspectInfo;
    try {
      inspected = await docker.getContainer(name).inspect();
    } catch (error) {
      if (statusCode(error) !== 404 || tries >= 100) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
      continue;
    }
    const ours = Object.entries(labels).every(([key, value]) => inspected.Config.Labels?.[key] === value);
    if (!ours) throw new Error(`container name ${name} is taken by a container that is not this step's (labels differ)`);
    return { Id: inspected.Id } as Docker.ContainerInfo;
  }
}

/**
 * Runs one step's container to completion, or reattaches to it. The step's labels
 * identify it, so a retried activity (after a worker crash) finds the container the
 * earlier attempt started and waits on it instead of starting a second one. The
 * container's name is derived from the same labels: when two attempts race past the
 * label lookup, Docker refuses the second create (409 Conflict) and that attempt
 * reattaches to the first one's container, so a step never has two.
 */
/**
 * The step's container: found by its labels (an earlier attempt's, or one made ahead), or
 * created under its deterministic name with `prepare` side by side. A create that loses a race
 * (409) takes the racing attempt's container.
 */
async function ensureStepContainer(docker: Docker, spec: ContainerSpec): Promise<{ container: Docker.Container; existing?: Docker.ContainerInfo }> {
  const stepLabels = { [labelKeys.run]: spec.labels['tarmac.run'], [labelKeys.step]: spec.labels['tarmac.step'] };
  const found = await findByLabels(docker, stepLabels);
  if (found) {
    // Made by an attempt that died before the step's files were ready (a placement whose workflow
    // task was lost mid-export), never started: make them now, before anyone can start it.
    if (found.State === 'created' && spec.prepare && !(await spec.isPrepared?.())) await spec.prepare();
    return { container: docker.getContainer(found.Id), existing: found };
  }
  const name = containerName(spec.labels['tarmac.run'], spec.labels['tarmac.step']);
  const create = async (): Promise<{ container: Docker.Container; existing?: Docker.ContainerInfo }> => {
    await ensureImage(docker, spec.image);
    try {
      return { container: await createStepContainer(docker, spec, name, spec.maxLogBytes ?? defaultMaxLogBytes) };
    } catch (error) {
      if (statusCode(error) !== 409) throw error;
      const raced = await racingContainer(docker, name, stepLabels);
      return { container: docker.getContainer(raced.Id), existing: raced };
    }
  };
  const [made] = await Promise.all([create(), spec.prepare?.()]);
  return made;
}

/**
 * Makes a step's container ahead of its step (prepared, created, not started): the step then
 * only starts it. Same checks as the step itself (network, image).
 */
export async function createStepContainerAhead(docker: Docker, spec: ContainerSpec): Promise<Docker.Container> {
  const network = checkNetwork(spec.labels[labelKeys.role], spec.networkMode);
  if (!network.ok) throw failure(FailureCode.invalidRequest, network.message);
  return (await ensureStepContainer(docker, { ...spec, labels: { ...spec.labels, [labelKeys.ahead]: 'true' } })).container;
}

/** Starts a container made ahead (a step that finds it running takes it on as its own run, not a reattach). */
export async function startStepContainerAhead(container: Docker.Container): Promise<void> {
  try {
    await container.start();
  } catch (error) {
    if (statusCode(error) !== 304) throw error;
  }
}

export async function runStepContainer(docker: Docker, spec: ContainerSpec): Promise<ContainerResult> {
  const context = Context.current();
  const network = checkNetwork(spec.labels[labelKeys.role], spec.networkMode);
  if (!network.ok) throw failure(FailureCode.invalidRequest, network.message);
  const maxLogBytes = spec.maxLogBytes ?? defaultMaxLogBytes;
  // The step's container: a gate pool's it was assigned (by id), or its own (by its labels).
  const made = spec.adopt
    ? { container: docker.getContainer(spec.adopt.containerId), found: true, ahead: true }
    : await ensureStepContainer(docker, spec).then(({ container, existing }) => ({
        container,
        found: Boolean(existing),
        ahead: existing?.Labels?.[labelKeys.ahead] === 'true',
      }));
  const { container } = made;
  // A container made ahead of the step (or a pool's) is the first attempt's own run, whatever state
  // it is in; a later attempt that finds it reattaches, as to any other.
  let existing = made.found && !(made.ahead && context.info.attempt === 1);
  heartbeatWith(context, { containerId: container.id });
  spec.onContainer?.(container.id);
  let state = (await container.inspect()).State;
  const foundFinished = existing && state.Status === 'exited';
  if (state.Status === 'created') {
    // Never started (its files made by ensureStepContainer): whoever made it, this attempt is the first to run it.
    existing = false;
    try {
      await container.start();
    } catch (error) {
      // 304: a racing attempt (or the placement that made it ahead) started it a moment ago;
      // waiting on it is all that is left. Any other refusal counts only if it did not start.
      const now = (await container.inspect()).State.Status;
      if (statusCode(error) !== 304 && now !== 'running' && now !== 'exited') throw error;
    }
    state = (await container.inspect()).State;
  }
  const startedAt = spec.adopt?.startedAtMs ?? Date.parse(state.StartedAt);
  spec.onRunning?.({ containerId: container.id, reattached: existing });
  const logs = streamLogs(container, spec.logFile, maxLogBytes, spec.onFirstOutput).catch(() => undefined);

  // The deadline counts from the container's own start, so a reattached attempt does not extend it.
  // Only a cancellation the workflow asked for stops the container. A worker shutdown or a lost
  // heartbeat leaves it running, so the next attempt can reattach and collect it.
  const { timedOut } = await waitForContainer(context, container, Math.max(0, startedAt + spec.timeoutMs - Date.now()), 'requested');
  // The log copy ends with the container; a log stream Docker never ends must not hold the step.
  await Promise.race([logs, new Promise((resolve) => setTimeout(resolve, logDrainMs).unref())]);
  const final = (await container.inspect()).State;
  heartbeatWith(context, { containerId: container.id });
  return {
    containerId: container.id,
    exitCode: timedOut ? null : final.ExitCode,
    oomKilled: final.OOMKilled,
    timedOut,
    reattached: existing,
    foundFinished,
    durationMs: Math.max(0, Date.parse(final.FinishedAt) - startedAt),
  };
}

/**
 * Waits for a running container to end while its activity heartbeats the container id: killed at
 * `deadlineMs` (then `timedOut`), and killed when the activity is cancelled — on a cancellation the
 * workflow asked for (`requested`: a worker shutdown or lost heartbeat leaves it for a retry to
 * reattach), or on any abort (`any`: a container no retry reattaches to).
 */
export async function waitForContainer(
  context: Context,
  container: Docker.Container,
  deadlineMs: number,
  killOn: 'requested' | 'any',
): Promise<{ timedOut: boolean }> {
  let timedOut = false;
  const beat = setInterval(() => heartbeatWith(context, { containerId: container.id }), heartbeatEveryMs);
  const deadline = setTimeout(() => {
    timedOut = true;
    container.kill().catch(() => undefined);
  }, deadlineMs);
  const onCancel = () => {
    if (killOn === 'any' || context.cancellationDetails?.cancelRequested) container.kill().catch(() => undefined);
  };
  context.cancellationSignal.addEventListener('abort', onCancel);
  try {
    await Promise.race([container.wait(), context.cancelled]);
  } finally {
    clearInterval(beat);
    clearTimeout(deadline);
    context.cancellationSignal.removeEventListener('abort', onCancel);
  }
  return { timedOut };
}

/** Removes the containers of one run — found by the run's label, never by name or image. */
export async function removeRunContainers(docker: Docker, runId: string): Promise<string[]> {
  const filters = { label: [`${labelKeys.run}=${runId}`] };
  const found = await docker.listContainers({ all: true, filters: JSON.stringify(filters) });
  for (const info of found) await docker.getContainer(info.Id).remove({ force: true });
  return found.map((info) => info.Id);
}

/** Removes one step's containers (a container made ahead, or an earlier attempt's) — found by the run's and the step's labels. */
export async function removeStepContainers(docker: Docker, runId: string, step: string): Promise<string[]> {
  const filters = { label: [`${labelKeys.run}=${runId}`, `${labelKeys.step}=${step}`] };
  const found = await docker.listContainers({ all: true, filters: JSON.stringify(filters) });
  for (const info of found) await docker.getContainer(info.Id).remove({ force: true });
  return found.map((info) => info.Id);
}

/** Splits Docker's multiplexed log stream (8-byte frame headers) into stdout and stderr. */
export function demuxDockerLog(buffer: Buffer): { stdout: string; stderr: string } {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let offset = 0;
  while (offset + 8 <= buffer.length) {
    const stream = buffer[offset];
    const size = buffer.readUInt32BE(offset + 4);
    const frame = buffer.subarray(offset + 8, offset + 8 + size);
    (stream === 2 ? err : out).push(frame);
    offset += 8 + size;
  }
  return { stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') };
}

/** The stdout of a finished container, without timestamps: its first `maxBytes` (default 16 MiB). */
export async function containerStdout(docker: Docker, containerId: string, maxBytes: number = defaultMaxLogBytes): Promise<string> {
  return (await readCappedStdout(docker, containerId, maxBytes)).text;
}
