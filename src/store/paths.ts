import { lstatSync, readlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { describeEntry } from '../fs/index.js';
import { InvalidIdError, RunFolderError } from './errors.js';

/** Longest id accepted in a path segment. */
export const MAX_ID_LENGTH = 128;

const ID_CHARS = /^[A-Za-z0-9_.-]+$/;

/**
 * Why `id` cannot be used as one path segment, or undefined when it can. Allowed: 1-128 characters from
 * `[A-Za-z0-9_.-]`, not `.` alone and without `..` anywhere, so no id can name a parent, a separator or a NUL; and
 * not starting with `-`, so no id reads as a command-line option.
 */
export function idProblem(id: unknown): string | undefined {
  if (typeof id !== 'string') return `must be a string, got ${id === null ? 'null' : typeof id}`;
  if (id.length === 0) return 'must not be empty';
  if (id.length > MAX_ID_LENGTH) return `is ${id.length} characters long, the limit is ${MAX_ID_LENGTH}`;
  if (id.includes('\0')) return 'contains a NUL character';
  if (id.includes('/') || id.includes('\\')) return 'contains a path separator (/ or \\)';
  if (id.includes('..')) return "contains '..'";
  if (id === '.') return "is '.'";
  // An id is also a command-line argument: one starting with '-' would read as an option.
  if (id.startsWith('-')) return "starts with '-'";
  if (!ID_CHARS.test(id)) {
    const bad = [...id].find((c) => !/[A-Za-z0-9_.-]/.test(c))!;
    return `contains ${JSON.stringify(bad)}; only letters, digits, '_', '-' and '.' are allowed`;
  }
  return undefined;
}

/** Whether `id` is safe as one path segment (see {@link idProblem}). */
export function isValidId(id: unknown): id is string {
  return idProblem(id) === undefined;
}

/**
 * Throws an {@link InvalidIdError} naming `kind` and the reason unless `id` is safe as one path segment.
 * Every store calls this on every id before it builds a path, so no input can escape the data directory.
 */
export function assertValidId(id: unknown, kind: string): asserts id is string {
  const problem = idProblem(id);
  if (problem !== undefined) throw new InvalidIdError(kind, String(id), problem);
}

/** Directory holding every session: `<dataDir>/sessions`. */
export function sessionsDir(dataDir: string): string {
  return join(dataDir, 'sessions');
}

/** Directory holding a session's runs: `<dataDir>/sessions/<sessionKey>/runs`. */
export function runsDir(dataDir: string, sessionKey: string): string {
  assertValidId(sessionKey, 'sessionKey');
  return join(dataDir, 'sessions', sessionKey, 'runs');
}

/** Every file of one run, after validating both ids. */
export interface RunPaths {
  dir: string;
  events: string;
  index: string;
  lock: string;
  /** Marker of the batch being written, so that a crash never exposes half a batch (see EventStore). */
  pendingBatch: string;
  checkpointLatest: string;
  checkpointDir: string;
  projectionsDir: string;
  runMeta: string;
}

/** Paths of one run under `<dataDir>/sessions/<sessionKey>/runs/<runId>/`. */
export function runPaths(dataDir: string, sessionKey: string, runId: string): RunPaths {
  assertValidId(sessionKey, 'sessionKey');
  assertValidId(runId, 'runId');
  const dir = join(dataDir, 'sessions', sessionKey, 'runs', runId);
  return {
    dir,
    events: join(dir, 'events.jsonl'),
    index: join(dir, 'events.idx.jsonl'),
    lock: join(dir, 'events.lock'),
    pendingBatch: join(dir, 'events.pending'),
    checkpointLatest: join(dir, 'checkpoint.latest.json'),
    checkpointDir: join(dir, 'checkpoint'),
    projectionsDir: join(dir, 'projections'),
    runMeta: join(dir, 'projections', 'run.meta.json'),
  };
}

/** What is in a folder's place when it is not a real directory: `a symbolic link to /elsewhere`, `a regular file`, ... */
export interface FolderProblem {
  path: string;
  what: string;
}

/**
 * The first of `chain` (folders each inside the one before) that exists and is not a real directory (lstat: a link
 * is not followed), then the first of `inside` (folders inside the last of `chain`, each optional); undefined when
 * each is a directory or missing (nothing under a missing folder of the chain exists).
 */
function notAFolder(chain: readonly string[], inside: readonly string[] = []): FolderProblem | undefined {
  for (const path of [...chain, ...inside]) {
    const stat = lstatSync(path, { throwIfNoEntry: false });
    if (stat === undefined) {
      if (chain.includes(path)) return undefined;
      continue;
    }
    if (stat.isDirectory()) continue;
    let what = describeEntry(stat);
    if (stat.isSymbolicLink()) {
      try {
        what += ` to ${readlinkSync(path)}`;
      } catch {
        // Gone meanwhile: its kind is enough.
      }
    }
    return { path, what };
  }
  return undefined;
}

/**
 * The first folder of session `sessionKey` that exists and is not a real directory: `sessions`, `sessions/<key>`, its
 * `runs` (see {@link runDirProblem}); undefined when each is a directory or missing.
 */
export function sessionDirProblem(dataDir: string, sessionKey: string): FolderProblem | undefined {
  const runs = runsDir(dataDir, sessionKey);
  return notAFolder([sessionsDir(dataDir), dirname(runs), runs]);
}

/**
 * The first folder a run is read, written or deleted through that exists and is not a real directory (lstat: a link
 * is not followed), with what is there; undefined when each of them is a directory or missing. The folders: under the
 * data directory (which is the user's to place, a link included) `sessions`, `sessions/<key>`, its `runs`, the run's
 * own folder, and in it `projections` and `checkpoint`. One lstat each (six at most), no read of any file: writers
 * pay it once when they open a run, never per step.
 */
export function runDirProblem(paths: RunPaths): FolderProblem | undefined {
  const runs = dirname(paths.dir);
  const session = dirname(runs);
  return notAFolder([dirname(session), session, runs, paths.dir], [paths.projectionsDir, paths.checkpointDir]);
}

/**
 * Throws a {@link RunFolderError} naming the entry and what is there unless every folder of run `paths` that exists
 * is a real directory (see {@link runDirProblem}). Writers (before they create or lock anything), readers and delete
 * call it, so that a folder replaced by a link to elsewhere (or by anything else) is the same damaged run to all of
 * them, and nothing is read, written or removed outside the data directory through it.
 */
export function assertRunDir(paths: RunPaths): void {
  const problem = runDirProblem(paths);
  if (problem !== undefined) throw new RunFolderError(basename(dirname(dirname(paths.dir))), basename(paths.dir), problem.path, problem.what);
}

/** Path of a historical checkpoint: `<run>/checkpoint/<stepId>.json`. */
export function historicalCheckpointPath(paths: RunPaths, stepId: string): string {
  assertValidId(stepId, 'stepId');
  return join(paths.checkpointDir, `${stepId}.json`);
}

/** Paths of the shared memory: `<dataDir>/memory/shared/{items,index}`. */
export interface MemoryPaths {
  itemsDir: string;
  indexDir: string;
  keywordIndex: string;
}

/** Paths of the shared memory under `dataDir`. */
export function memoryPaths(dataDir: string): MemoryPaths {
  const root = join(dataDir, 'memory', 'shared');
  return {
    itemsDir: join(root, 'items'),
    indexDir: join(root, 'index'),
    keywordIndex: join(root, 'index', 'keyword.json'),
  };
}

/**
 * The first folder the shared memory is read, written or deleted through that exists and is not a real directory
 * (see {@link runDirProblem}): `memory`, `memory/shared`, and in it `items` and `index`; undefined when each is a
 * directory or missing. Four lstats, no read of any file.
 */
export function memoryDirProblem(paths: MemoryPaths): FolderProblem | undefined {
  const shared = dirname(paths.itemsDir);
  return notAFolder([dirname(shared), shared], [paths.itemsDir, paths.indexDir]);
}

/** Path of one memory item, after validating its id. */
export function memoryItemPath(paths: MemoryPaths, id: string): string {
  assertValidId(id, 'memory id');
  return join(paths.itemsDir, `${id}.json`);
}
