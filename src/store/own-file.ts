/**
 * How a run's writer opens the files it writes in place (the event log, its index, the batch marker): through
 * `openRegularFile` (src/fs), so that no link is followed (O_NOFOLLOW) and no FIFO waited on, and only a regular file
 * with no other name is written. A link planted in a file's place (to a file outside the data directory, say), a
 * FIFO, a directory, or a hard link (the same file under another name, which a write would change too) is refused
 * with an error naming the path and what is there: the run is not opened, and nothing is written through it.
 */
import { closeSync } from 'node:fs';
import { openRegularFile } from '../fs/index.js';
import { EventStoreError } from './errors.js';

/**
 * Opens `path` with `flags` (O_RDWR, O_CREAT, O_APPEND...; O_NOFOLLOW and O_NONBLOCK are added) and returns its
 * descriptor, the caller closing it; see the module comment for what is refused. `runId` is named in the advice. A
 * missing file (ENOENT) and other errors of the open throw as `openSync`'s do.
 */
export function openOwnFile(path: string, flags: number, runId: string): number {
  const opened = openRegularFile(path, flags);
  if ('notRegular' in opened) throw refused(path, opened.notRegular, runId);
  if (opened.stat.nlink > 1) {
    closeSync(opened.fd);
    throw refused(path, `a file with ${opened.stat.nlink} names (hard links)`, runId);
  }
  return opened.fd;
}

function refused(path: string, what: string, runId: string): EventStoreError {
  return new EventStoreError(
    `${path} is ${what}, not a regular file of its own: the writer of run ${runId} does not write through it, and the run is not opened ` +
      `(nothing was written through it). Check what put it there; 'backpackflow runs verify ${runId}' reports the run`,
    { path },
  );
}
