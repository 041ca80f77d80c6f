import { closeSync, constants, fstatSync, lstatSync, openSync, type Stats } from 'node:fs';

/** What a directory entry is, for an error message: `a symbolic link`, `a FIFO (named pipe)`, ... */
export function describeEntry(stat: Stats): string {
  if (stat.isSymbolicLink()) return 'a symbolic link';
  if (stat.isDirectory()) return 'a directory';
  if (stat.isFIFO()) return 'a FIFO (named pipe)';
  if (stat.isSocket()) return 'a socket';
  if (stat.isCharacterDevice()) return 'a character device';
  if (stat.isBlockDevice()) return 'a block device';
  return 'a regular file';
}

/** What {@link openRegularFile} found at the path instead of a regular file (see {@link describeEntry}). */
export interface NotRegularFile {
  readonly notRegular: string;
}

/** Follow no link (O_NOFOLLOW) and wait for no writer (O_NONBLOCK: a FIFO opens at once), where the platform has them. */
const SAFE_OPEN = (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

/** A regular file {@link openRegularFile} opened: its descriptor (the caller closes it) and its fstat. */
export interface OpenedFile {
  readonly fd: number;
  readonly stat: Stats;
}

/**
 * Opens `path` with `flags` (O_RDONLY, O_RDWR, O_NOCTTY, ...) without following a link or blocking, and returns its
 * descriptor and fstat when it is a regular file. Anything else (a symbolic link, a FIFO, a directory, a socket, a
 * device) is not read: its kind is returned instead (a descriptor opened meanwhile is closed). A file planted where
 * a store, a lock or a scan expects its own can then neither send a write outside its folder, nor hang the reader,
 * nor have its content quoted or hashed. A missing path (ENOENT, ENOTDIR) and other errors throw as `openSync` does.
 */
export function openRegularFile(path: string, flags: number): OpenedFile | NotRegularFile {
  let fd: number;
  try {
    fd = openSync(path, flags | SAFE_OPEN);
  } catch (error) {
    // ELOOP (a link, under O_NOFOLLOW; EMLINK on BSD), EISDIR (a directory opened for writing), ENXIO (a socket), ...
    const code = (error as NodeJS.ErrnoException).code;
    const stat = code === 'ENOENT' || code === 'ENOTDIR' ? undefined : lstatSync(path, { throwIfNoEntry: false });
    if (stat !== undefined && !stat.isFile()) return { notRegular: describeEntry(stat) };
    throw error;
  }
  return regularOrClosed(fd);
}

/** The open descriptor `fd` with its fstat when it is a regular file; else it is closed and its kind returned. */
function regularOrClosed(fd: number): OpenedFile | NotRegularFile {
  let stat: Stats;
  try {
    stat = fstatSync(fd);
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  if (stat.isFile()) return { fd, stat };
  closeSync(fd);
  return { notRegular: describeEntry(stat) };
}

/** What {@link openFileForReading} throws for anything but a regular file at a path: damage, naming what is there. */
export class NotRegularFileError extends Error {
  override readonly name = 'NotRegularFileError';
  constructor(
    /** The path that was to be read. */
    readonly path: string,
    /** What is there instead (see {@link describeEntry}): `a symbolic link to ...`, `a FIFO (named pipe)`, ... */
    readonly what: string,
  ) {
    super(`${path} is ${what}, not a regular file: it is not read`);
  }
}

/**
 * Opens `path` read-only and returns its descriptor (the caller closes it) when it is a regular file. Anything else
 * (a symbolic link, a FIFO, a directory, a socket, a device) is refused with a {@link NotRegularFileError} naming the
 * path and what is there, at once: the open does not wait for a writer (O_NONBLOCK), so a FIFO planted in place of a
 * file never hangs a reader, nor with it the event loop of a synchronous one; and it follows no link (O_NOFOLLOW),
 * so a link planted in a store's folder never has the process read, and quote, a file elsewhere (the folders on the
 * way may be links: the user places the data directory). Errors of the open itself (ENOENT, EACCES, ...) throw as
 * `openSync`'s do.
 */
export function openFileForReading(path: string): number {
  const opened = openRegularFile(path, constants.O_RDONLY);
  if ('notRegular' in opened) throw new NotRegularFileError(path, opened.notRegular);
  return opened.fd;
}
