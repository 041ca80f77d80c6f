import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readSync, type Stats } from 'node:fs';
import { describeEntry, openRegularFile, type NotRegularFile, type OpenedFile } from '../fs/index.js';
import { ContextError } from './errors.js';

/**
 * How the store opens its own files and folders. A workspace is untrusted input (a cloned repository or an unpacked
 * archive can hold anything, `.merkle/` included), so nothing in `.merkle/` is followed or waited on:
 *
 * - `.merkle/`, `frames/` and each shard must be real directories (lstat): a symlink there would send every write
 *   outside the workspace;
 * - files are opened with O_NOFOLLOW (where the platform has it) and O_NONBLOCK (a FIFO opens at once instead of
 *   blocking until a writer comes), then fstat'ed: anything but a regular file is refused;
 * - new files (a staged frame) are created with O_CREAT | O_EXCL, which never follows a link either.
 *
 * Each refusal is a CORRUPT_STORE error naming the path and what it is, never quoting its content. The rename of an
 * atomic write replaces a link in place rather than writing through it, so it needs no check of its own.
 */

const NOFOLLOW = constants.O_NOFOLLOW ?? 0;

function refused(path: string, what: string, expected: 'a regular file' | 'a directory'): ContextError {
  return new ContextError(
    'CORRUPT_STORE',
    `store ${expected === 'a directory' ? 'folder' : 'file'} ${path} is ${what}, not ${expected}: the context engine follows no link in .merkle/ (its writes would land outside the workspace) and opens only regular files and directories there; remove it`,
    { file: path },
  );
}

/** The lstat of a store entry, or undefined when there is none. */
export function lstatEntry(path: string): Stats | undefined {
  return lstatSync(path, { throwIfNoEntry: false });
}

/** Whether a store entry exists (of any kind: a link is not followed). */
export function entryExists(path: string): boolean {
  return lstatEntry(path) !== undefined;
}

/**
 * Throws CORRUPT_STORE unless `dir` is a real directory or missing; true when it exists. Readers call it before
 * reading under `dir`, so that a store folder that is a symlink is refused rather than read through.
 */
export function checkStoreDir(dir: string): boolean {
  const stat = lstatEntry(dir);
  if (stat === undefined) return false;
  if (!stat.isDirectory()) throw refused(dir, describeEntry(stat), 'a directory');
  return true;
}

/** Creates the store folder `dir` when missing (its parent must exist) and checks that it is a real directory. */
export function ensureStoreDir(dir: string): void {
  if (checkStoreDir(dir)) return;
  try {
    mkdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  checkStoreDir(dir);
}

/**
 * Throws CORRUPT_STORE unless the store file `path` is a regular file or missing (a lock file, say, which another
 * library reads: checked before it is handed over).
 */
export function checkStoreFile(path: string): void {
  const stat = lstatEntry(path);
  if (stat !== undefined && !stat.isFile()) throw refused(path, describeEntry(stat), 'a regular file');
}

/**
 * Opens the store file `path` for reading without following a link or blocking; undefined when it does not exist.
 * With `update`, for reading and writing in place, and a missing file is an error (ENOENT). Throws CORRUPT_STORE,
 * naming it, when it is not a regular file.
 */
export function openStoreFile(path: string): number | undefined;
export function openStoreFile(path: string, update: true): number;
export function openStoreFile(path: string, update = false): number | undefined {
  let file: OpenedFile | NotRegularFile;
  try {
    file = openRegularFile(path, update ? constants.O_RDWR : constants.O_RDONLY);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' && !update) return undefined;
    throw error;
  }
  if ('notRegular' in file) throw refused(path, file.notRegular, 'a regular file');
  return file.fd;
}

/** Creates the new store file `path` (it must not exist; a link there is not followed) for writing. */
export function createStoreFile(path: string, mode: number): number {
  return openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW, mode);
}

/**
 * The bytes of the store file `path` (see {@link openStoreFile}), or undefined when it does not exist; `alloc` makes
 * the buffer (a SharedArrayBuffer's, say). A file cut while it is read gives the bytes read.
 */
export function readStoreFile(path: string, alloc: (size: number) => Buffer = Buffer.allocUnsafe): Buffer | undefined {
  const fd = openStoreFile(path);
  if (fd === undefined) return undefined;
  try {
    const size = fstatSync(fd).size;
    const data = alloc(size);
    let done = 0;
    while (done < size) {
      const n = readSync(fd, data, done, size - done, done);
      if (n === 0) return data.subarray(0, done);
      done += n;
    }
    return data;
  } finally {
    closeSync(fd);
  }
}
