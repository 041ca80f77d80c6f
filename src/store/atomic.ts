import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** Options of {@link writeFileAtomic}. */
export interface AtomicWriteOptions {
  /** fsync the file before the rename and the directory after it (default true). Without it the write is still
   * atomic against a process crash, only not against power loss. */
  fsync?: boolean;
}

async function fsyncDir(dir: string): Promise<void> {
  const handle = await fsp.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Writes `data` to `path` so that a reader (or a process after a crash) sees either the old file or the new one,
 * never a mix: temp file in the same directory, write, fsync, rename over `path`, fsync the directory.
 * Creates the directory when missing. The temp file is removed when the write fails.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  const sync = options.fsync ?? true;
  const dir = dirname(path);
  await fsp.mkdir(dir, { recursive: true });
  const temp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  let handle: fsp.FileHandle | undefined;
  try {
    handle = await fsp.open(temp, 'wx');
    await handle.writeFile(data);
    if (sync) await handle.sync();
    await handle.close();
    handle = undefined;
    await fsp.rename(temp, path);
  } catch (error) {
    await handle?.close().catch(() => undefined);
    await fsp.rm(temp, { force: true }).catch(() => undefined);
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
