import { describeHolder, heldByThisProcess, tryLock, type FileLock } from '../fs/index.js';
import { LockError } from './errors.js';

/**
 * Takes the single-writer lock file `path` for `what` (see `tryLock` in `src/fs`: stale locks are recovered), or
 * throws a {@link LockError} naming the holder and why it is judged live (a live pid, or a fresh lease of a holder
 * this process cannot check by pid): a live process, another store instance in this process, or a file that is not
 * a lock record.
 */
export function acquireLock(path: string, what: string): FileLock {
  const result = tryLock(path);
  if (!('busy' in result)) return result;
  const holder = result.holder;
  if (result.reason === 'unreadable') {
    throw new LockError(`${what} is locked by ${path}, whose content is not a lock record; remove it if no writer is running`, { path });
  }
  if (result.reason === 'contended' || holder === undefined) throw new LockError(`could not take ${path} for ${what}: it kept changing hands`, { path });
  const who = heldByThisProcess(holder) ? 'another store instance in this process' : `${describeHolder(holder)} (judged live: ${result.why ?? 'held'})`;
  throw new LockError(`${what} already has a writer: ${who} holds ${path}. Close that writer first (one writer per run).`, { path, holder });
}
