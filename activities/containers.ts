import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type Docker from 'dockerode';
import { FailureType } from '../core/errors';

/** Label keys that mark a container as Tarmac's. Removal is only ever by these labels. */
export const labelKeys = {
  run: 'tarmac.run',
  step: 'tarmac.step',
  role: 'tarmac.role',
  tree: 'tarmac.tree',
} as const;

export interface ContainerSpec {
  /** Labels identifying the container; `tarmac.run` and `tarmac.step` together are unique per step. */
  labels: Record<string, string> & { 'tarmac.run': string; 'tarmac.step': string };
  image: string;
  cmd: string[];
  user: string;
  env: string[];
  binds: string[];
  workingDir: string;
  timeoutMs: number;
  logFile: string;
  /** Resource limits; defaults suit a gate suite on a small machine. */
  memoryBytes?: number;
  nanoCpus?: number;
  pidsLimit?: number;
  /** `none` unless the step is explicitly granted a network. */
  networkMode?: 'none' | 'host';
  /** Called with the container id as soon as it is known (new or reattached), before it runs. */
  onContainer?: (containerId: string) => void;
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

async function findByLabels(docker: Docker, labels: Record<string, string>): Promise<Docker.ContainerInfo | undefined> {
  const filters = { label: Object.entries(labels).map(([key, value]) => `${key}=${value}`) };
  const found = await docker.listContainers({ all: true, filters: JSON.stringify(filters) });
  return found[0];
}

async function ensureImage(docker: Docker, image: string): Promise<void> {
  try {
    await docker.getImage(image).inspect();
  } catch {
    throw ApplicationFailure.create({
      type: FailureType.imageMissing,
      message: `image ${image} is not on this Docker host; build it with scripts/setup.sh or docker build`,
      nonRetryable: true,
    });
  }
}

/** Copies the container's whole log (with timestamps) to a file, following it while it runs. */
async function streamLogs(container: Docker.Container, logFile: string, onFirstOutput?: () => void): Promise<void> {
  await mkdir(dirname(logFile), { recursive: true });
  const stream = (await container.logs({ follow: true, stdout: true, stderr: true, timestamps: true })) as unknown as Readable;
  if (onFirstOutput) stream.once('data', () => onFirstOutput());
  const out = createWriteStream(logFile, { flags: 'w' });
  // Both streams go to one file, in order, with docker's timestamps.
  const modem = container.modem as { demuxStream(stream: Readable, stdout: Writable, stderr: Writable): void };
  modem.demuxStream(stream, out, out);
  await new Promise<void>((resolve) => {
    stream.on('end', resolve);
    stream.on('error', () => resolve());
  });
  await new Promise<void>((resolve) => out.end(resolve));
}

/**
 * Runs one step's container to completion, or reattaches to it. The step's labels
 * identify it, so a retried activity (after a worker crash) finds the container the
 * earlier attempt started and waits on it instead of starting a second one.
 */
export async function runStepContainer(docker: Docker, spec: ContainerSpec): Promise<ContainerResult> {
  const context = Context.current();
  const existing = await findByLabels(docker, { [labelKeys.run]: spec.labels['tarmac.run'], [labelKeys.step]: spec.labels['tarmac.step'] });
  let container: Docker.Container;
  if (existing) {
    container = docker.getContainer(existing.Id);
  } else {
    await ensureImage(docker, spec.image);
    container = await docker.createContainer({
      Image: spec.image,
      Cmd: spec.cmd,
      User: spec.user,
      Env: spec.env,
      WorkingDir: spec.workingDir,
      Labels: spec.labels,
      HostConfig: {
        Binds: spec.binds,
        NetworkMode: spec.networkMode ?? 'none',
        ReadonlyRootfs: true,
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        Tmpfs: { '/tmp': 'rw,exec,nosuid,size=1g' },
        Memory: spec.memoryBytes ?? 2 * 1024 ** 3,
        // No swap beyond the memory limit: over the limit means OOM, not a slow crawl.
        MemorySwap: spec.memoryBytes ?? 2 * 1024 ** 3,
        NanoCpus: spec.nanoCpus ?? 2e9,
        PidsLimit: spec.pidsLimit ?? 512,
      },
    });
  }
  context.heartbeat({ containerId: container.id });
  spec.onContainer?.(container.id);
  let state = (await container.inspect()).State;
  const foundFinished = Boolean(existing) && state.Status === 'exited';
  if (state.Status === 'created') {
    await container.start();
    state = (await container.inspect()).State;
  }
  const startedAt = Date.parse(state.StartedAt);
  spec.onRunning?.({ containerId: container.id, reattached: Boolean(existing) });
  const logs = streamLogs(container, spec.logFile, spec.onFirstOutput).catch(() => undefined);

  let timedOut = false;
  const beat = setInterval(() => context.heartbeat({ containerId: container.id }), heartbeatEveryMs);
  // The deadline counts from the container's own start, so a reattached attempt does not extend it.
  const remaining = Math.max(0, startedAt + spec.timeoutMs - Date.now());
  const deadline = setTimeout(() => {
    timedOut = true;
    container.kill().catch(() => undefined);
  }, remaining);
  // Only a cancellation the workflow asked for stops the container. A worker shutdown or a
  // lost heartbeat leaves it running, so the next attempt can reattach and collect it.
  const onCancel = () => {
    if (context.cancellationDetails?.cancelRequested) container.kill().catch(() => undefined);
  };
  context.cancellationSignal.addEventListener('abort', onCancel);
  try {
    await Promise.race([container.wait(), context.cancelled]);
  } finally {
    clearInterval(beat);
    clearTimeout(deadline);
    context.cancellationSignal.removeEventListener('abort', onCancel);
  }
  await logs;
  const final = (await container.inspect()).State;
  context.heartbeat({ containerId: container.id });
  return {
    containerId: container.id,
    exitCode: timedOut ? null : final.ExitCode,
    oomKilled: final.OOMKilled,
    timedOut,
    reattached: Boolean(existing),
    foundFinished,
    durationMs: Math.max(0, Date.parse(final.FinishedAt) - startedAt),
  };
}

/** Removes the containers of one run — found by the run's label, never by name or image. */
export async function removeRunContainers(docker: Docker, runId: string): Promise<string[]> {
  const filters = { label: [`${labelKeys.run}=${runId}`] };
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

/** The whole stdout of a finished container (up to 32 MiB), without timestamps. */
export async function containerStdout(docker: Docker, containerId: string): Promise<string> {
  const raw = await docker.getContainer(containerId).logs({ stdout: true, stderr: false, follow: false });
  return demuxDockerLog(raw.subarray(0, 32 * 1024 * 1024)).stdout;
}
