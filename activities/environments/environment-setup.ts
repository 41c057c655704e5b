import { createWriteStream, type WriteStream } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { Context } from '@temporalio/activity';
import type Docker from 'dockerode';
import { containerName } from '../../core/node/container-rules';
import { copyCappedLog } from '../containers/container-logs';
import { waitForContainer } from '../containers/containers';
import { heartbeatWith } from '../containers/heartbeat-details';

/**
 * The setup container of an environment build: the declared base image, the setup's commands run
 * by a wrapper of ours, the workspace a size-capped tmpfs, and the egress gateway's socket as the
 * only way out (network `none`). What the setup produced leaves the container as one tar stream on
 * stdout, written by the wrapper after every process of the setup is killed; the worker caps it.
 *
 * Why a tmpfs and a stream, not a bind mount: a bind mount has no size limit, and the setup is
 * attacker input (a lockfile's install scripts). The tmpfs bounds what the setup can write; the
 * stream is bounded by the worker as it reads. The stream is still untrusted (the image's own tar,
 * or a process writing into it before it was killed): it is extracted by a second container,
 * never by the host (activities/environments/environments.ts).
 */

/** Where the setup's files are mounted in the container (read-only). */
export const setupMount = '/tarmac/setup';
/** The egress gateway's socket directory in the container. */
export const egressMount = '/tarmac/egress';
/** The forwarder, the node that runs it and the CA bundle the setup trusts (read-only). */
export const egressToolsMount = '/opt/tarmac/egress';
/** The port the forwarder listens on inside the container (its loopback only). */
export const egressPort = 3128;

/** Exit codes of the wrapper itself (the setup's own commands keep theirs). */
const wrapperExit = { forwarder: 70, inputs: 71, result: 72 } as const;

/**
 * The wrapper: a trusted text that runs in the untrusted image. fd 3 is the result stream (the
 * container's stdout); every command writes to the log (stderr) and gets no fd 3. Markers name the
 * command that failed; a setup can forge them, but they only shape its own failure's message.
 */
const setupWrapper = `#!/bin/sh
exec 3>&1 1>&2
cp -a ${setupMount}/inputs/. /workspace/ || { echo "[tarmac] the environment's inputs could not be copied into /workspace"; exit ${wrapperExit.inputs}; }
if [ -S ${egressMount}/egress.sock ]; then
  node_bin=${egressToolsMount}/node
  "$node_bin" -e 0 2>/dev/null || node_bin=node
  TARMAC_MODEL_SOCKET=${egressMount}/egress.sock TARMAC_MODEL_PORT=${egressPort} "$node_bin" ${egressToolsMount}/tarmac-forward --ready-file /tmp/.tarmac-egress-ready 3>&- &
  waited=0
  while [ ! -f /tmp/.tarmac-egress-ready ]; do
    waited=$((waited + 1))
    [ "$waited" -le 100 ] || { echo "[tarmac] the egress forwarder did not start (node: $node_bin)"; exit ${wrapperExit.forwarder}; }
    sleep 0.1
  done
fi
index=0
for command in ${setupMount}/commands/*; do
  [ -f "$command" ] || continue
  echo "[tarmac] setup[$index]: $(cat "$command")"
  (cd /workspace && sh "$command") 3>&-
  code=$?
  if [ "$code" -ne 0 ]; then
    echo "[tarmac] setup[$index] exited $code"
    exit "$code"
  fi
  index=$((index + 1))
done
# Every process of the setup goes (kill -1 spares this shell): nothing writes while the result is read.
kill -KILL -1 2>/dev/null
tar -C /workspace -cf - . >&3 || { echo "[tarmac] the environment's files could not be written out"; exit ${wrapperExit.result}; }
echo "[tarmac] setup done"
`;

/** Writes the setup's files for the container: the wrapper, one file per command (in order), and the inputs' directory. */
export async function writeSetupFiles(setupDir: string, commands: string[]): Promise<void> {
  await mkdir(join(setupDir, 'commands'), { recursive: true });
  await writeFile(join(setupDir, 'run.sh'), setupWrapper);
  await chmod(join(setupDir, 'run.sh'), 0o755);
  await Promise.all(commands.map((command, index) => writeFile(join(setupDir, 'commands', String(index).padStart(3, '0')), `${command}\n`)));
  await chmod(setupDir, 0o755);
  await chmod(join(setupDir, 'commands'), 0o755);
}

interface SetupContainerSpec {
  labels: Record<string, string> & { 'tarmac.run': string; 'tarmac.step': string };
  image: string;
  user: string;
  env: string[];
  binds: string[];
  /** The workspace tmpfs's size, and the most bytes of result taken from the stream. */
  maxBytes: number;
  timeoutMs: number;
  memoryBytes: number;
  logFile: string;
  resultFile: string;
  maxLogBytes: number;
}

interface SetupContainerResult {
  exitCode: number | null;
  timedOut: boolean;
  oomKilled: boolean;
  /** The result stream passed `maxBytes`: the container was stopped. */
  tooLarge: boolean;
  resultBytes: number;
  durationMs: number;
}

/** A writable that keeps at most `limit` bytes in a file and says when more came. */
function cappedFile(path: string, limit: number, onOverflow: () => void): { stream: PassThrough; done: Promise<number> } {
  const stream = new PassThrough();
  const file: WriteStream = createWriteStream(path, { mode: 0o600 });
  let written = 0;
  let over = false;
  stream.on('data', (chunk: Buffer) => {
    if (over) return;
    if (written + chunk.length > limit) {
      over = true;
      onOverflow();
      return;
    }
    written += chunk.length;
    if (!file.write(chunk)) {
      stream.pause();
      file.once('drain', () => stream.resume());
    }
  });
  const done = new Promise<number>((resolve, reject) => {
    stream.on('end', () => file.end(() => resolve(written)));
    file.on('error', reject);
  });
  return { stream, done };
}

/**
 * Runs the setup container to its end. A container of this step left by an earlier attempt (a
 * worker killed mid-build) is removed first: the build restarts cleanly, from nothing it made.
 */
export async function runSetupContainer(docker: Docker, spec: SetupContainerSpec): Promise<SetupContainerResult> {
  const context = Context.current();
  const name = containerName(spec.labels['tarmac.run'], spec.labels['tarmac.step']);
  await docker
    .getContainer(name)
    .remove({ force: true })
    .catch(() => undefined);
  const container = await docker.createContainer({
    name,
    Image: spec.image,
    Entrypoint: ['/bin/sh'],
    Cmd: [`${setupMount}/run.sh`],
    User: spec.user,
    Env: spec.env,
    WorkingDir: '/workspace',
    Labels: spec.labels,
    AttachStdout: true,
    AttachStderr: true,
    HostConfig: {
      Binds: spec.binds,
      NetworkMode: 'none',
      ReadonlyRootfs: true,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      Tmpfs: {
        '/tmp': 'rw,exec,nosuid,size=1g',
        '/workspace': `rw,exec,nosuid,size=${spec.maxBytes},uid=${spec.user.split(':')[0]},gid=${spec.user.split(':')[1]},mode=0755`,
      },
      // The workspace tmpfs counts against the memory limit: room for both.
      Memory: spec.memoryBytes + spec.maxBytes,
      MemorySwap: spec.memoryBytes + spec.maxBytes,
      NanoCpus: 2e9,
      PidsLimit: 1024,
      LogConfig: { Type: 'json-file', Config: { 'max-size': String(spec.maxLogBytes), 'max-file': '2' } },
    },
  });
  heartbeatWith(context, { containerId: container.id });
  let tooLarge = false;
  const stream = (await container.attach({ stream: true, stdout: true, stderr: true })) as NodeJS.ReadableStream;
  const result = cappedFile(spec.resultFile, spec.maxBytes, () => {
    tooLarge = true;
    container.kill().catch(() => undefined);
  });
  const log = new PassThrough();
  const logged = copyCappedLog(log, spec.logFile, spec.maxLogBytes).catch(() => undefined);
  docker.modem.demuxStream(stream, result.stream, log);
  stream.on('end', () => {
    result.stream.end();
    log.end();
  });
  const startedAt = Date.now();
  await container.start();
  // No retry reattaches to a setup (it starts over): any abort stops it.
  const { timedOut } = await waitForContainer(context, container, spec.timeoutMs, 'any');
  const resultBytes = await Promise.race([result.done, new Promise<number>((resolve) => setTimeout(() => resolve(-1), 15_000).unref())]);
  await Promise.race([logged, new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
  const final = (await container.inspect()).State;
  return {
    exitCode: timedOut || tooLarge ? null : final.ExitCode,
    timedOut,
    oomKilled: final.OOMKilled,
    tooLarge,
    resultBytes,
    durationMs: Date.now() - startedAt,
  };
}
