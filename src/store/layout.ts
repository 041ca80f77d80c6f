import { lockHeld } from '../fs/index.js';
import { promises as fsp, lstatSync } from 'node:fs';
import { RunExistsError } from './errors.js';
import { isValidId, runPaths, runsDir, sessionsDir } from './paths.js';

/** One run in the data directory. */
export interface RunRef {
  sessionKey: string;
  runId: string;
}

/**
 * The entries of `dir` named as ids that are folders, or symbolic links (to a folder elsewhere, or to nothing): a link
 * is listed so that its readers report it as damaged, naming it (see assertRunDir), rather than hide a run that was
 * moved out of the data directory and linked back. Other entries (a file, a FIFO: nothing could have been written
 * under them) are not runs, as before; a reader asked for one by id names it. A `dir` that is missing or not a folder
 * has none.
 */
async function subdirs(dir: string): Promise<string[]> {
  try {
    const entries = await fsp.readdir(dir, { withFileTypes: true });
    return entries
      .filter((e) => (e.isDirectory() || e.isSymbolicLink()) && isValidId(e.name))
      .map((e) => e.name)
      .sort();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return [];
    throw error;
  }
}

/** Session keys present under `<dataDir>/sessions`, sorted. */
export async function listSessions(dataDir: string): Promise<string[]> {
  return subdirs(sessionsDir(dataDir));
}

/**
 * Runs under the data directory, of one session or of all, sorted by session then run id (generated run ids sort
 * by creation time).
 */
export async function listRunIds(dataDir: string, sessionKey?: string): Promise<RunRef[]> {
  const sessions = sessionKey === undefined ? await listSessions(dataDir) : [sessionKey];
  const out: RunRef[] = [];
  for (const session of sessions) {
    for (const runId of await subdirs(runsDir(dataDir, session))) out.push({ sessionKey: session, runId });
  }
  return out;
}

/**
 * Whether run `runId` is a recorded run: its event log is not empty, or is not a regular file (damage). (A directory holding only what a start left
 * before its first event, such as the CLI's recorded flow, is not a run.)
 */
export function runHasEvents(dataDir: string, sessionKey: string, runId: string): boolean {
  const stat = lstatSync(runPaths(dataDir, sessionKey, runId).events, { throwIfNoEntry: false });
  // Anything but a regular file in the log's place (a link, a FIFO, a folder) is a run whose log is damaged, not a
  // start that never wrote: readers report it, and no new run takes its id.
  return stat !== undefined && (!stat.isFile() || stat.size > 0);
}

/**
 * True while a live process holds run `runId`'s writer lock (judged by pid and start time in this boot and pid
 * namespace, else by its lease: see `judgeHolder` in `src/fs`).
 */
export function runWriterAlive(dataDir: string, sessionKey: string, runId: string): boolean {
  return lockHeld(runPaths(dataDir, sessionKey, runId).lock);
}

/** Throws a {@link RunExistsError} when run `runId` is a recorded run (see {@link runHasEvents}). */
export function assertNewRun(dataDir: string, sessionKey: string, runId: string): void {
  if (runHasEvents(dataDir, sessionKey, runId)) throw new RunExistsError(sessionKey, runId, runPaths(dataDir, sessionKey, runId).events);
}
