import { closeSync, lstatSync, readFile, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { openFileForReading } from './regular-file.js';

const readFileAsync = promisify(readFile);

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === 'ENOENT';
}

/** The descriptor of `path` opened for reading (see openFileForReading), or undefined when it does not exist. */
export function openIfExists(path: string): number | undefined {
  // A missing file is the common case for some callers (a new run's projection): an lstat that returns undefined
  // costs well under a microsecond, an open that fails 7 µs here (Node builds an Error for it). A file that appears
  // after the lstat reads as missing, as it would have just before; one removed after it is caught below. A link
  // there, dangling or not, is not missing: openFileForReading refuses it.
  if (lstatSync(path, { throwIfNoEntry: false }) === undefined) return undefined;
  try {
    return openFileForReading(path);
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}

/**
 * Reads a file as UTF-8, or undefined when it does not exist. Anything but a regular file (a FIFO, a directory, ...)
 * is refused at once with an error naming it (see openFileForReading); other errors (no permission) propagate.
 */
export async function readTextIfExists(path: string): Promise<string | undefined> {
  const fd = openIfExists(path);
  if (fd === undefined) return undefined;
  try {
    return await readFileAsync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/** {@link readTextIfExists} for synchronous callers. */
export function readTextIfExistsSync(path: string): string | undefined {
  const fd = openIfExists(path);
  if (fd === undefined) return undefined;
  try {
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}
