import { randomBytes } from 'node:crypto';
import { closeSync, fsync, mkdirSync, openSync, promises as fsp, renameSync, rmSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { describeIssues } from './errors.js';

/** Options of {@link writeFileAtomic}. */
export interface AtomicWriteOptions {
  /** fsync the file before the rename and the directory after it (default true). Without it the write is still
   * atomic against a process crash, only not against power loss. */
  fsync?: boolean;
}

function fsyncAsync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fsync(fd, (error) => (error ? reject(error) : resolve())));
}

async function fsyncDir(dir: string): Promise<void> {
  const fd = openSync(dir, 'r');
  try {
    await fsyncAsync(fd);
  } finally {
    closeSync(fd);
  }
}

function openTemp(temp: string): number {
  try {
    return openSync(temp, 'wx');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    mkdirSync(dirname(temp), { recursive: true });
    return openSync(temp, 'wx');
  }
}

/**
 * Writes `data` to `path` so that a reader (or a process after a crash) sees either the old file or the new one,
 * never a mix: temp file in the same directory, write, fsync, rename over `path`, fsync the directory.
 * Creates the directory when missing. The temp file is removed when the write fails.
 *
 * The cheap system calls are synchronous (a thread-pool round trip costs more than they do); the fsyncs, which can
 * take milliseconds on a real disk, run on the thread pool so that they do not block the event loop.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  const sync = options.fsync ?? true;
  const dir = dirname(path);
  const temp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const bytes = typeof data === 'string' ? Buffer.from(data) : data;
  const fd = openTemp(temp);
  try {
    try {
      let written = 0;
      while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
      if (sync) await fsyncAsync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
  if (sync) await fsyncDir(dir);
}

/** {@link writeFileAtomic} of `JSON.stringify(value)`. */
export async function writeJsonAtomic(path: string, value: unknown, options: AtomicWriteOptions = {}): Promise<void> {
  await writeFileAtomic(path, JSON.stringify(value), options);
}

/** Reads a file as UTF-8, or undefined when it does not exist. Other errors propagate. */
export async function readTextIfExists(path: string): Promise<string | undefined> {
  try {
    return await fsp.readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * The file at `path` parsed as JSON and validated with `schema`, or undefined when it does not exist. A file that is
 * not JSON or does not fit the schema throws `corrupt(reason)`, the reason naming what is wrong where.
 */
export async function readJsonIfExists<T>(
  path: string,
  schema: { safeParse(value: unknown): { success: true; data: T } | { success: false; error: { issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }> } } },
  corrupt: (reason: string, cause?: unknown) => Error,
): Promise<T | undefined> {
  const text = await readTextIfExists(path);
  if (text === undefined) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw corrupt(`not JSON (${(error as Error).message})`, error);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw corrupt(describeIssues(parsed.error, '(root)'));
  return parsed.data;
}
