import { closeSync, fsyncSync, mkdirSync, open, openSync, renameSync, writeSync } from 'node:fs';
import { DIRECT_SYNC_MAX_BYTES, syncDescriptor, syncOnPool } from './fsync.js';
import { dirname } from 'node:path';
import { removeFileIfExists } from './remove.js';
import { tempBeside } from './temp-files.js';
import { writeJsonPieces } from './json-pieces.js';

/** Options of {@link writeFileAtomic} and {@link writeFileAtomicSync}. */
export interface AtomicWriteOptions {
  /** fsync the file before the rename and the directory after it (default true). Without it the write is still
   * atomic against a process crash, only not against power loss. */
  readonly fsync?: boolean;
  /**
   * fsync the directory after the rename (default: as `fsync`). Without it (and with `fsync`), a power loss can
   * lose the rename, never the new file's content: the path then holds the old file, or nothing if it is new.
   */
  readonly syncDirectory?: boolean;
  /** File mode of the new file (default 0o666 minus the umask). */
  readonly mode?: number;
  /**
   * Create the temp file on the thread pool (default false): for writes that nothing waits for (a keyframe written
   * while its run goes on), creating a file (100-500 µs on a journaling file system) then does not hold up the event
   * loop. Writes with it finish in no particular order: a caller that writes one path twice orders the writes itself.
   */
  readonly background?: boolean;
  /**
   * Which missing folders the write creates (default `'all'`: every missing folder on the way to `path`). `'own'`:
   * only the file's own folder, and only inside a folder that exists. For a file derived from what its parent
   * folder holds (a run's projection, `runs/<id>/projections/run.meta.json`, a cache of `runs/<id>/events.jsonl`):
   * when that folder was removed or renamed away (the run deleted) while the file was being made, the write fails
   * with ENOENT instead of creating the folder again.
   */
  readonly createDirs?: 'all' | 'own';
}

/** fsyncs a directory, so that a rename or a new entry in it survives power loss. */
export function fsyncDirSync(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

async function fsyncDir(dir: string): Promise<void> {
  const fd = openSync(dir, 'r');
  try {
    await syncOnPool(fd, 'all');
  } finally {
    closeSync(fd);
  }
}

/** Creates the temp file; when its folder is missing, creates the folders `createDirs` allows, then tries again. */
function openTemp(temp: string, mode: number | undefined, createDirs: AtomicWriteOptions['createDirs']): number {
  try {
    return openSync(temp, 'wx', mode);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    makeFolder(dirname(temp), createDirs ?? 'all');
    return openSync(temp, 'wx', mode);
  }
}

function makeFolder(dir: string, createDirs: 'all' | 'own'): void {
  if (createDirs === 'all') {
    mkdirSync(dir, { recursive: true });
    return;
  }
  try {
    mkdirSync(dir);
  } catch (error) {
    // Another writer made it meanwhile; ENOENT (its parent is gone) propagates.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/**
 * {@link openTemp} on the thread pool: creating a file costs 100-500 µs on a journaling file system (a directory
 * entry and an inode), which the event loop then spends on other work (the next steps of a run that writes a
 * keyframe in the background). When that fails (mostly: the folder does not exist yet, once per folder),
 * {@link openTemp} tries again and decides: it makes the folder, or throws its error.
 */
function openTempAsync(temp: string, mode: number | undefined, createDirs: AtomicWriteOptions['createDirs']): Promise<number> {
  return new Promise((resolve, reject) =>
    open(temp, 'wx', mode, (error, fd) => {
      if (!error) return resolve(fd);
      try {
        resolve(openTemp(temp, mode, createDirs));
      } catch (failure) {
        reject(failure);
      }
    }),
  );
}

function writeAll(fd: number, bytes: Uint8Array): number {
  let written = 0;
  while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
  return written;
}

/** The JSON of a value, written in pieces; `onBytes` sees each piece's bytes as they are written. */
interface JsonData {
  json: unknown;
  onBytes?: ((bytes: Uint8Array) => void) | undefined;
}

/**
 * Creates the temp file beside `path` and writes `data` to it (text, bytes, or `{ json }`: the JSON of a value,
 * written in pieces); returns its name and open descriptor.
 */
function writeTemp(path: string, data: string | Uint8Array | JsonData, options: AtomicWriteOptions): { temp: string; fd: number } {
  const temp = tempBeside(path);
  const fd = openTemp(temp, options.mode, options.createDirs);
  fillTemp(temp, fd, data);
  return { temp, fd };
}

/** Writes `data` to the temp file just created (open as `fd`); removes it when that fails. Returns the bytes written. */
function fillTemp(temp: string, fd: number, data: string | Uint8Array | JsonData): number {
  let bytes = 0;
  try {
    if (typeof data === 'string') bytes = writeAll(fd, Buffer.from(data));
    else if (data instanceof Uint8Array) bytes = writeAll(fd, data);
    else {
      const { onBytes } = data;
      writeJsonPieces(data.json, (piece) => {
        const chunk = Buffer.from(piece);
        onBytes?.(chunk);
        bytes += writeAll(fd, chunk);
      });
    }
  } catch (error) {
    closeSync(fd);
    removeFileIfExists(temp);
    throw error;
  }
  return bytes;
}

/** Closes the temp file (after `sync` ran on it) and renames it over `path`; removes it when anything fails. */
function finish(temp: string, fd: number, path: string): void {
  try {
    closeSync(fd);
    renameSync(temp, path);
  } catch (error) {
    removeFileIfExists(temp);
    throw error;
  }
}

/**
 * Writes `data` to `path` so that a reader (or a process after a crash) sees either the old file or the new one,
 * never a mix: temp file in the same directory, write, fsync, rename over `path`, fsync the directory.
 * Creates the directory when missing (see `createDirs`). The temp file is removed when the write fails.
 *
 * The cheap system calls are synchronous (a thread-pool round trip costs more than they do). The file's fsync, which
 * can take milliseconds on a real disk, is direct only for a small file (at most `DIRECT_SYNC_MAX_BYTES`, 64 KB)
 * while one run's log writer is the process's only one and fsyncs are quick (src/fs/fsync.ts); otherwise, and
 * always with `background`, it runs on the thread pool so that it does not block the event loop (with
 * `background`, the creation of the temp file too). The directory's fsync runs on the pool.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  await writeAtomic(path, data, options);
}

async function writeAtomic(path: string, data: string | Uint8Array | JsonData, options: AtomicWriteOptions): Promise<void> {
  const sync = options.fsync ?? true;
  const temp = tempBeside(path);
  const fd = options.background === true ? await openTempAsync(temp, options.mode, options.createDirs) : openTemp(temp, options.mode, options.createDirs);
  const bytes = fillTemp(temp, fd, data);
  if (sync) {
    try {
      // Direct or through the thread pool as src/fs/fsync.ts decides for a small file; always the pool for a larger
      // one or a background write.
      await (options.background !== true && bytes <= DIRECT_SYNC_MAX_BYTES ? syncDescriptor(fd, 'all') : syncOnPool(fd, 'all'));
    } catch (error) {
      closeSync(fd);
      removeFileIfExists(temp);
      throw error;
    }
  }
  finish(temp, fd, path);
  if (options.syncDirectory ?? sync) await fsyncDir(dirname(path));
}

/** {@link writeFileAtomic} for callers that hold a lock across synchronous code (the context store). */
export function writeFileAtomicSync(path: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): void {
  const sync = options.fsync ?? true;
  const { temp, fd } = writeTemp(path, data, options);
  if (sync) {
    try {
      fsyncSync(fd);
    } catch (error) {
      closeSync(fd);
      removeFileIfExists(temp);
      throw error;
    }
  }
  finish(temp, fd, path);
  if (options.syncDirectory ?? sync) fsyncDirSync(dirname(path));
}

/**
 * {@link writeFileAtomic} of `JSON.stringify(value)`, written in pieces (see json-pieces.ts): a large value's whole
 * text never exists at once. `onBytes` sees the bytes written, piece by piece (to hash exactly what was written).
 */
export async function writeJsonAtomic(path: string, value: unknown, options: AtomicWriteOptions = {}, onBytes?: (bytes: Uint8Array) => void): Promise<void> {
  await writeAtomic(path, { json: value, onBytes }, options);
}
