import { promises as fsp, statSync } from 'node:fs';
import { RunExistsError } from './errors.js';
import { isValidId, runPaths, runsDir, sessionsDir } from './paths.js';

/** One run in the data directory. */
export interface RunRef {
  sessionKey: string;
  runId: string;
}

async function subdirs(dir: string): Promise<string[]> {
  try {
    const entries = await fsp.readdir(dir, { withFileTypes: true });
    return entries.filter((e) => e.isDirectory() && isValidId(e.name)).map((e) => e.name).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
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
 * Throws a {@link RunExistsError} when run `runId` has a recorded run: an event log that is not empty. (A directory
 * holding only what a start left before its first event, such as the CLI's recorded flow, is not a run.)
 */
export function assertNewRun(dataDir: string, sessionKey: string, runId: string): void {
  const events = runPaths(dataDir, sessionKey, runId).events;
  if ((statSync(events, { throwIfNoEntry: false })?.size ?? 0) > 0) throw new RunExistsError(sessionKey, runId, events);
}
