import { createHash, randomBytes } from 'node:crypto';
import { chmod, chown, lchown, lstat, mkdir, rename, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Owner } from '../stores/confined-fs';

interface PrivateSocket {
  listener: Server;
  /** The directory holding the socket (mode 0700, owned by `owner`): mount it, not the socket file. */
  socketDir: string;
  socketPath: string;
  close(): Promise<void>;
}

const isRoot = () => process.getuid?.() === 0;

/** A directory of ours, not a link, not reachable by anyone else; made if missing. */
async function ownPrivateDirectory(path: string): Promise<void> {
  await mkdir(path, { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error;
  });
  const seen = await lstat(path);
  const uid = process.getuid?.();
  if (!seen.isDirectory() || (uid !== undefined && seen.uid !== uid))
    throw new Error(`${path} is not a directory owned by this worker (uid ${uid}); refusing to put a gateway socket there`);
  if ((seen.mode & 0o077) !== 0) await chmod(path, 0o700);
}

/**
 * Listens on a unix socket that only the session's container user can reach: other
 * local users cannot connect to a session's gateway.
 *
 * Unix socket paths are limited to ~107 bytes and data dirs can be long, so the socket
 * lives under `<tmpdir>/tarmac-gw-<worker uid>/` (0700, the worker's, checked not to be a
 * link another user planted), in a directory named from `key`, so a restart finds the
 * same path. That directory is mounted into the container and is 0700, owned by the
 * container user (the socket 0600, the same owner).
 *
 * The socket is bound, chmod-ed and chown-ed under its staging name in the worker's own
 * directory, then renamed into place: the session directory is writable by the agent
 * (its uid owns it), and a chown by path there could be redirected by a link swapped in.
 */
export async function listenPrivately(key: string, name: string, owner: Owner, serve: (socket: Socket) => void): Promise<PrivateSocket> {
  const base = join(tmpdir(), `tarmac-gw-${process.getuid?.() ?? 'user'}`);
  await ownPrivateDirectory(base);
  const id = createHash('sha256').update(resolve(key)).digest('hex').slice(0, 20);
  const socketDir = join(base, id);
  await mkdir(socketDir, { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error;
  });
  if (!(await lstat(socketDir)).isDirectory()) throw new Error(`${socketDir} is not a directory`);
  const socketPath = join(socketDir, name);

  const staging = join(base, `${id}.${randomBytes(6).toString('hex')}.sock`);
  const listener = createServer(serve);
  await new Promise<void>((done, fail) => {
    listener.once('error', fail);
    listener.listen(staging, () => done());
  });
  try {
    await chmod(staging, 0o600);
    if (isRoot()) await chown(staging, owner.uid, owner.gid);
    // rename replaces a file or link the agent left at the name; a directory there must go first.
    await rename(staging, socketPath).catch(async () => {
      await rm(socketPath, { recursive: true, force: true });
      await rename(staging, socketPath);
    });
    if (isRoot()) await lchown(socketDir, owner.uid, owner.gid);
    await chmod(socketDir, 0o700);
  } catch (error) {
    await new Promise<void>((done) => listener.close(() => done()));
    throw error;
  }
  return {
    listener,
    socketDir,
    socketPath,
    close: async () => {
      await new Promise<void>((done) => listener.close(() => done()));
      await rm(socketPath, { force: true }).catch(() => undefined);
    },
  };
}

/**
 * Serves an HTTP server on a private socket (`listenPrivately`), keeping every connection in
 * `sockets` while it is open, so the gateway's close can cut the ones still open.
 */
export async function serveHttpPrivately(
  key: string,
  name: string,
  owner: Owner,
  server: { emit(event: 'connection', socket: Socket): boolean },
  sockets: Set<Socket>,
): Promise<PrivateSocket> {
  return await listenPrivately(key, name, owner, (connection) => {
    sockets.add(connection);
    connection.on('close', () => sockets.delete(connection));
    server.emit('connection', connection);
  });
}
