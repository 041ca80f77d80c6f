import { readdirSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { randomHex } from './random.js';
import { removeFileIfExists } from './remove.js';
import { systemProbe, type ProcessProbe } from './process-identity.js';

/**
 * Temp files of the atomic writes and of the lock (`.<name>.<pid>.<12 hex>.tmp` beside the file they become): their
 * one naming, and the sweep of those a killed process left behind.
 */

/** `.<pid>.<12 hex>.tmp` at the end of a temp file's name; the pid is group 1. */
const TEMP_SUFFIX = /\.(\d+)\.[0-9a-f]{12}\.tmp$/;

/**
 * How old a dead process's temp file must be before {@link removeDeadTemps} removes it. A pid is only meaningful on
 * its own host: in a folder that two hosts share, a live writer of the other host could have this pid number dead
 * here, but no write keeps its temp file this long.
 */
export const DEAD_TEMP_MIN_AGE_MS = 10 * 60_000;

/** A new temp file name beside `path` (in its folder, so that renaming it over `path` is atomic), naming this process. */
export function tempBeside(path: string): string {
  return join(dirname(path), `.${basename(path)}.${process.pid}.${randomHex(6)}.tmp`);
}

/**
 * Removes the temp files (named as {@link tempBeside} names them) in `dir` whose process is dead and that are at
 * least `minAgeMs` old (default {@link DEAD_TEMP_MIN_AGE_MS}): a process killed in the middle of an atomic write or of
 * taking a lock leaves one, which nothing else would ever remove. A temp file of a live process (its pid is alive,
 * whoever it is now) is never touched. Returns the names removed; a missing `dir` has none. Only ever called by a
 * process that holds the lock of `dir` or is about to write there.
 */
export function removeDeadTemps(dir: string, options: { probe?: ProcessProbe; minAgeMs?: number } = {}): string[] {
  const probe = options.probe ?? systemProbe;
  const cutoff = Date.now() - (options.minAgeMs ?? DEAD_TEMP_MIN_AGE_MS);
  let names: string[];
  // Most folders swept are missing (a new run's): a stat that returns undefined is far cheaper than a failing readdir.
  if (statSync(dir, { throwIfNoEntry: false }) === undefined) return [];
  try {
    names = readdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const removed: string[] = [];
  for (const name of names) {
    const pid = TEMP_SUFFIX.exec(name)?.[1];
    if (pid === undefined || !name.startsWith('.') || Number(pid) === process.pid || probe.alive(Number(pid))) continue;
    const path = join(dir, name);
    const stat = statSync(path, { throwIfNoEntry: false });
    if (stat?.isFile() === true && stat.mtimeMs <= cutoff && removeFileIfExists(path)) removed.push(name);
  }
  return removed;
}
