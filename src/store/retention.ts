import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { describeHolder, fsyncDirSync, randomHex, tryLock } from '../fs/index.js';
import { StoreError, type LockHolder } from './errors.js';
import { assertRunDir, runPaths, runsDir, sessionDirProblem } from './paths.js';
import { ProjectionStore } from './projection-store.js';
import type { DeleteRunCondition } from './run-store.js';

/**
 * Deleting stored runs, crash-safe (the files side of retention; `pruneRuns` in the runtime chooses which runs).
 *
 * A run is deleted in three moves: take its writer lock (so no writer can be inside it, and none can start), rename
 * its directory to `<runId>~deleting-<random>` beside it (one atomic rename, fsynced), then remove that directory.
 * `~` is not an id character, so every reader (listings, `runs show`, resume, the Studio) stops seeing the run at
 * the rename: a run is either whole and readable, or gone. A process killed while removing leaves only such a
 * renamed directory, which {@link sweepDeletedRuns} removes (every delete and prune sweeps first).
 */

/** The suffix of a run directory being deleted; `~` is not an id character, so no listing takes it for a run. */
const DELETING = '~deleting-';

/** A run that a live process is writing: it is not deleted. `holder` is who holds its writer lock. */
export class RunInUseError extends StoreError {
  constructor(
    readonly sessionKey: string,
    readonly runId: string,
    readonly holder: LockHolder | undefined,
    path: string,
  ) {
    const who = holder === undefined ? `a lock file that is not a lock record (${path}); remove it if no writer is running` : describeHolder(holder);
    // A delete or prune holds the same lock while it removes the run: the holder may be one of those.
    super(`run ${sessionKey}/${runId} has a live writer (${who}): a process writing it, or another delete or prune removing it; stop it or wait for it before deleting the run`, { path });
  }
}

/**
 * A run that changed since the caller chose to delete it (see `DeleteRunCondition`): it is not deleted. `pruneRuns`
 * reports it as skipped.
 */
export class RunChangedError extends StoreError {
  constructor(
    readonly sessionKey: string,
    readonly runId: string,
    what: string,
    path: string,
  ) {
    super(`run ${sessionKey}/${runId} changed since it was listed (${what}): it is not deleted`, { path });
  }
}

/**
 * Deletes run `runId` of session `sessionKey` (see the module comment for how a crash is survived). Resolves to
 * false when there is no such run directory. Refuses, with a RunFolderError naming it, a run folder (or session
 * folder) that is a symbolic link or not a folder: nothing is removed through it, nor is the entry itself (see
 * `assertRunDir`). Refuses, with a {@link RunInUseError}, a run whose writer lock a live
 * process holds; a stale lock (its holder is gone) is recovered as a writer would recover it. With `expected`, the
 * run is checked under its writer lock, before anything is removed: a log that no longer ends at
 * `expected.lastSeq` (a resume, an answer, a cut since the caller listed it) is a {@link RunChangedError}, and a log
 * that cannot be read now the error naming it; either way the run is left whole.
 */
export async function deleteRunDir(dataDir: string, sessionKey: string, runId: string, expected?: DeleteRunCondition): Promise<boolean> {
  const paths = runPaths(dataDir, sessionKey, runId);
  // A run folder (or session folder) that is a link to elsewhere, or not a folder, is refused, naming it: neither it
  // nor what it points to is locked, renamed or removed (the user removes the entry, having looked at it).
  assertRunDir(paths);
  await sweepDeletedRuns(dataDir, sessionKey);
  try {
    await fsp.lstat(paths.dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
  let lock;
  try {
    lock = tryLock(paths.lock);
  } catch (error) {
    // The directory went away between the check and the lock (another delete): nothing left to delete.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
  if ('busy' in lock) throw new RunInUseError(sessionKey, runId, lock.holder, paths.lock);
  if (expected !== undefined) {
    try {
      await checkUnchanged(dataDir, sessionKey, runId, expected);
    } catch (error) {
      lock.release();
      throw error;
    }
  }
  const parent = runsDir(dataDir, sessionKey);
  const doomed = join(parent, `${runId}${DELETING}${randomHex(6)}`);
  try {
    await fsp.rename(paths.dir, doomed);
    fsyncDirSync(parent);
  } catch (error) {
    lock.release();
    throw new StoreError(`could not delete run ${sessionKey}/${runId}: renaming ${paths.dir} failed: ${(error as Error).message}`, { path: paths.dir, cause: error });
  }
  // The lock file went with the directory; removing the directory removes it. (A reader's temp file may appear in it
  // meanwhile, see ProjectionStore.persistDerived: the retries remove it too.)
  await fsp.rm(doomed, { recursive: true, force: true, maxRetries: 3 });
  return true;
}

/** Throws a {@link RunChangedError} when the run's log no longer ends at `expected.lastSeq` (see {@link deleteRunDir}). */
async function checkUnchanged(dataDir: string, sessionKey: string, runId: string, expected: DeleteRunCondition): Promise<void> {
  const now = await new ProjectionStore({ dataDir, sessionKey }).currentRunMeta(runId, () => undefined, { persist: false });
  if (now.lastSeq === expected.lastSeq) return;
  // The caller holds the writer lock: a run the log leaves 'running' has no live writer, it is stopped.
  const status = now.status === 'running' ? 'stopped' : now.status;
  const what = `its log ends at seq ${now.lastSeq} now, not at seq ${expected.lastSeq}, and it is ${status}`;
  throw new RunChangedError(sessionKey, runId, what, runPaths(dataDir, sessionKey, runId).events);
}

/**
 * Removes what deletes killed mid-way left behind: the directories `<runId>~deleting-*` among the session's runs.
 * Resolves to the names removed (with `dryRun`, the names there are, removing nothing). One being removed by another
 * process right now is left to that process.
 */
export async function sweepDeletedRuns(dataDir: string, sessionKey: string, options: { dryRun?: boolean } = {}): Promise<string[]> {
  const parent = runsDir(dataDir, sessionKey);
  // Nothing is removed through a session folder that is a link to elsewhere, or not a folder (see sessionDirProblem).
  if (sessionDirProblem(dataDir, sessionKey) !== undefined) return [];
  let names: string[];
  try {
    names = await fsp.readdir(parent);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const removed: string[] = [];
  for (const name of names.filter((n) => n.includes(DELETING)).sort()) {
    if (options.dryRun) {
      removed.push(name);
      continue;
    }
    try {
      await fsp.rm(join(parent, name), { recursive: true, force: true });
      removed.push(name);
    } catch (error) {
      // Another process is removing the same directory: its entries vanish under this walk.
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'ENOENT') throw error;
    }
  }
  return removed;
}
