import { constants, existsSync, type Stats } from 'node:fs';
import { lstat, mkdir, open, opendir, readlink, realpath, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * File access confined to a root directory that someone else may be changing at the
 * same moment — an agent's workspace, an agent's out dir. Nothing here follows a
 * symbolic link at any component of a path, and `.git` is never reached, however it is
 * spelled (docs/SECURITY.md, "file tools that cannot leave the workspace").
 *
 * How: the path is normalised as text first (no `..` ever reaches the kernel), then
 * opened one component at a time, each relative to the directory handle opened before
 * it (`/proc/self/fd/<dir>/<name>`, Linux's openat), with O_NOFOLLOW so a link at that
 * component is refused by the kernel rather than by a check that could race. The file
 * handle finally obtained is checked, not the path: fstat (a regular file, the inode
 * lstat saw), and its real path as the kernel reports it (`/proc/self/fd/<fd>`) still
 * under the root and outside `.git`. Whatever the agent renames or relinks after that,
 * the handle refers to the same inode, which is inside the root.
 *
 * Without /proc (not Linux) the walk uses full paths with the same O_NOFOLLOW opens
 * and a realpath + inode comparison at the end; a swap of an intermediate directory
 * that is undone between two checks is then not detected. Workers run on Linux.
 */

/** Why a path was refused: `missing` is the only one that just means "not there". */
export type RefusalCode = 'invalid' | 'outside' | 'git' | 'link' | 'missing' | 'not-directory' | 'not-file' | 'too-large' | 'changed' | 'other';

export class ConfinedPathError extends Error {
  constructor(
    readonly path: string,
    readonly code: RefusalCode,
    reason: string,
  ) {
    super(`${path}: ${reason}`);
    this.name = 'ConfinedPathError';
  }
}

/** uid/gid to give files and directories this module creates (root workers hand them to the agents' uid). */
export interface Owner {
  uid: number;
  gid: number;
}

const isGit = (name: string) => name.toLowerCase() === '.git';
const procFds = existsSync('/proc/self/fd');

/**
 * The components of a root-relative path, normalised as text: `.` and empty components
 * dropped, `..` resolved lexically. Refuses absolute paths, paths that climb out of the
 * root, and any component that is `.git` in any case (`.GIT`, `a/../.git/`, `./.git`).
 * `''` and `'.'` are the root itself (no components).
 */
export function confinedComponents(relPath: string): string[] {
  if (typeof relPath !== 'string') throw new ConfinedPathError(String(relPath), 'invalid', 'a path must be text');
  if (relPath.includes('\0')) throw new ConfinedPathError(relPath, 'invalid', 'a path cannot contain a NUL byte');
  if (relPath.startsWith('/')) throw new ConfinedPathError(relPath, 'outside', 'absolute paths are refused; give a path relative to the workspace');
  const parts: string[] = [];
  for (const part of relPath.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (parts.length === 0) throw new ConfinedPathError(relPath, 'outside', 'the path leads outside the workspace');
      parts.pop();
      continue;
    }
    parts.push(part);
  }
  // Checked after normalising, so `a/../.git` and `.git/../.git` are caught too.
  if (parts.some(isGit)) throw new ConfinedPathError(relPath, 'git', 'the .git directory is not reachable through file tools');
  return parts;
}

/** The normalised spelling of a root-relative path (`.` for the root). */
export const confinedPath = (relPath: string): string => confinedComponents(relPath).join('/') || '.';

interface Dir {
  handle: FileHandle;
  /** Path for the non-/proc fallback (and messages). */
  path: string;
}

/** The path that names `name` inside the open directory `dir` without re-resolving `dir`. */
const at = (dir: Dir, name: string) => (procFds ? `/proc/self/fd/${dir.handle.fd}/${name}` : join(dir.path, name));

/** A kernel error on one component, told as a reason the agent can act on. */
async function componentError(error: unknown, dir: Dir, name: string, relPath: string): Promise<ConfinedPathError> {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ELOOP') return new ConfinedPathError(relPath, 'link', `${name} is a symbolic link; file tools do not follow links`);
  if (code === 'ENOTDIR') {
    const seen = await lstat(at(dir, name)).catch(() => undefined);
    if (seen?.isSymbolicLink()) return new ConfinedPathError(relPath, 'link', `${name} is a symbolic link; file tools do not follow links`);
    return new ConfinedPathError(relPath, 'not-directory', `${name} is not a directory`);
  }
  if (code === 'ENOENT') return new ConfinedPathError(relPath, 'missing', 'no such file or directory');
  if (code === 'EISDIR') return new ConfinedPathError(relPath, 'not-file', 'is a directory');
  if (code === 'ENXIO') return new ConfinedPathError(relPath, 'not-file', 'is not a regular file');
  return new ConfinedPathError(relPath, 'other', `cannot be opened (${code ?? (error as Error).message})`);
}

/** The real path of an open handle, as the kernel knows it. */
async function handlePath(handle: FileHandle, fallback: string): Promise<string> {
  return procFds ? await readlink(`/proc/self/fd/${handle.fd}`) : await realpath(fallback);
}

/** Refuses a handle whose real path is no longer under the root, or is inside a `.git`. */
async function checkUnderRoot(rootReal: string, handle: FileHandle, fallback: string, relPath: string): Promise<void> {
  const real = await handlePath(handle, fallback);
  if (real.endsWith(' (deleted)')) throw new ConfinedPathError(relPath, 'changed', 'was removed while it was being opened');
  const prefix = rootReal.endsWith('/') ? rootReal : `${rootReal}/`;
  if (real !== rootReal && !real.startsWith(prefix)) throw new ConfinedPathError(relPath, 'outside', 'resolves outside the workspace');
  if (real.slice(prefix.length).split('/').some(isGit)) throw new ConfinedPathError(relPath, 'git', 'resolves inside a .git directory');
  if (!procFds) {
    // Without /proc the path was re-resolved: it must still name the inode we hold.
    const [held, named] = await Promise.all([handle.stat(), lstat(real)]);
    if (held.dev !== named.dev || held.ino !== named.ino) throw new ConfinedPathError(relPath, 'changed', 'changed while it was being opened');
  }
}

const directoryFlags = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/**
 * Opens the root (trusted: it may itself sit under a linked path) and then each of
 * `parts` as a directory without following links. With `create`, missing directories
 * are made (mkdir never follows a link at its last component) and handed to `owner`.
 */
async function openDirectory(root: string, parts: string[], relPath: string, create?: { owner?: Owner }): Promise<{ dir: Dir; rootReal: string }> {
  let dir: Dir = { handle: await open(root, constants.O_RDONLY | constants.O_DIRECTORY), path: root };
  try {
    const rootReal = await handlePath(dir.handle, root);
    for (const name of parts) {
      let next: FileHandle;
      try {
        next = await open(at(dir, name), directoryFlags);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || !create) throw await componentError(error, dir, name, relPath);
        await mkdir(at(dir, name), 0o755).catch((made: NodeJS.ErrnoException) => {
          if (made.code !== 'EEXIST') throw made;
        });
        try {
          next = await open(at(dir, name), directoryFlags);
        } catch (reopened) {
          throw await componentError(reopened, dir, name, relPath);
        }
        if (create.owner)
          await next.chown(create.owner.uid, create.owner.gid).catch(async (failed: unknown) => {
            await next.close();
            throw failed;
          });
      }
      await dir.handle.close();
      dir = { handle: next, path: join(dir.path, name) };
    }
    await checkUnderRoot(rootReal, dir.handle, dir.path, relPath);
    return { dir, rootReal };
  } catch (error) {
    await dir.handle.close();
    throw error;
  }
}

/** What is at a path, looked at without following a link at any component. */
export type EntryKind = 'file' | 'directory' | 'link' | 'other';

const kindOf = (stats: Pick<Stats, 'isFile' | 'isDirectory' | 'isSymbolicLink'>): EntryKind =>
  stats.isSymbolicLink() ? 'link' : stats.isDirectory() ? 'directory' : stats.isFile() ? 'file' : 'other';

/** The kind of entry at `relPath` (undefined when nothing is there). Links in the parents are refused. */
export async function lstatNoFollow(root: string, relPath: string): Promise<EntryKind | undefined> {
  const parts = confinedComponents(relPath);
  if (parts.length === 0) return 'directory';
  const { dir } = await openDirectory(root, parts.slice(0, -1), relPath).catch((error: unknown) => {
    if (error instanceof ConfinedPathError && error.code === 'missing') return { dir: undefined };
    throw error;
  });
  if (!dir) return undefined;
  try {
    const seen = await lstat(at(dir, parts.at(-1)!)).catch(() => undefined);
    return seen && kindOf(seen);
  } finally {
    await dir.handle.close();
  }
}

/** Opens the last component as a regular file that is the inode lstat saw, inside the root. */
async function openFile(
  root: string,
  relPath: string,
  flags: number,
  create?: { owner?: Owner },
): Promise<{ handle: FileHandle; stats: Stats; created: boolean }> {
  const parts = confinedComponents(relPath);
  if (parts.length === 0) throw new ConfinedPathError(relPath, 'not-file', 'is a directory');
  const { dir, rootReal } = await openDirectory(root, parts.slice(0, -1), relPath, create);
  const name = parts.at(-1)!;
  let handle: FileHandle | undefined;
  try {
    const seen = await lstat(at(dir, name)).catch(() => undefined);
    if (seen && !seen.isFile())
      throw seen.isSymbolicLink()
        ? new ConfinedPathError(relPath, 'link', `${name} is a symbolic link; file tools do not follow links`)
        : new ConfinedPathError(relPath, 'not-file', `is not a regular file (${kindOf(seen)})`);
    // O_NONBLOCK: a FIFO swapped in after the lstat must not hang the worker on open.
    const noFollow = flags | constants.O_NOFOLLOW | constants.O_NONBLOCK;
    let created = false;
    try {
      if (create && !seen) {
        handle = await open(at(dir, name), noFollow | constants.O_CREAT | constants.O_EXCL, 0o644);
        created = true;
      } else handle = await open(at(dir, name), noFollow);
    } catch (error) {
      throw await componentError(error, dir, name, relPath);
    }
    const stats = await handle.stat();
    if (!stats.isFile()) throw new ConfinedPathError(relPath, 'not-file', `is not a regular file (${kindOf(stats)})`);
    if (seen && (seen.dev !== stats.dev || seen.ino !== stats.ino)) throw new ConfinedPathError(relPath, 'changed', 'changed while it was being opened');
    await checkUnderRoot(rootReal, handle, join(dir.path, name), relPath);
    return { handle, stats, created };
  } catch (error) {
    await handle?.close();
    throw error;
  } finally {
    await dir.handle.close();
  }
}

/**
 * Reads a regular file under `root` without following any link, at most `maxBytes`
 * (a larger file is refused, not cut). For the gateway's read tools and for the
 * worker's reads of files an agent could have written (e.g. `out/result.json`).
 */
export async function readFileNoFollow(root: string, relPath: string, maxBytes: number): Promise<Buffer> {
  const { handle, stats } = await openFile(root, relPath, constants.O_RDONLY);
  try {
    if (stats.size > maxBytes) throw new ConfinedPathError(relPath, 'too-large', `is ${stats.size} bytes, more than the ${maxBytes} bytes allowed`);
    // The file may grow after fstat: read until EOF, one byte past the cap at most.
    const chunks: Buffer[] = [];
    let length = 0;
    while (length <= maxBytes) {
      const chunk = Buffer.alloc(Math.min(maxBytes + 1 - length, 256 * 1024));
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, length);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      length += bytesRead;
    }
    if (length > maxBytes) throw new ConfinedPathError(relPath, 'too-large', `is more than the ${maxBytes} bytes allowed`);
    return Buffer.concat(chunks, length);
  } finally {
    await handle.close();
  }
}

/**
 * Writes a whole regular file under `root`: missing parent directories are made, no
 * component may be a link, an existing file must be a regular file with a single name
 * (a hard link could be a name for a file elsewhere). New files and directories go to
 * `owner` when given. Returns whether the file was created.
 */
export async function writeFileNoFollow(
  root: string,
  relPath: string,
  content: string | Buffer,
  options: { owner?: Owner } = {},
): Promise<{ created: boolean }> {
  const { handle, stats, created } = await openFile(root, relPath, constants.O_WRONLY, { ...(options.owner ? { owner: options.owner } : {}) });
  try {
    if (stats.nlink > 1) throw new ConfinedPathError(relPath, 'not-file', `has ${stats.nlink} hard links; file tools do not write files with other names`);
    if (created && options.owner) await handle.chown(options.owner.uid, options.owner.gid);
    await handle.truncate(0);
    await handle.writeFile(content);
    return { created };
  } finally {
    await handle.close();
  }
}

/** One directory's entries (never `.git`), links shown as links and not followed; at most `maxEntries`. */
export async function listDirectoryNoFollow(
  root: string,
  relPath: string,
  maxEntries: number,
): Promise<{ entries: { name: string; kind: EntryKind }[]; truncated: boolean }> {
  const { dir } = await openDirectory(root, confinedComponents(relPath), relPath);
  try {
    const entries: { name: string; kind: EntryKind }[] = [];
    let truncated = false;
    // Iterated, not read whole: a directory of a million names costs maxEntries.
    const listing = await opendir(procFds ? `/proc/self/fd/${dir.handle.fd}` : dir.path);
    try {
      for (let entry = await listing.read(); entry; entry = await listing.read()) {
        if (isGit(entry.name)) continue;
        if (entries.length === maxEntries) {
          truncated = true;
          break;
        }
        entries.push({ name: entry.name, kind: kindOf(entry) });
      }
    } finally {
      await listing.close();
    }
    return { entries: entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)), truncated };
  } finally {
    await dir.handle.close();
  }
}
