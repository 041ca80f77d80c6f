import { randomBytes } from 'node:crypto';
import { closeSync, constants, linkSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { openRegularFile, type NotRegularFile, type OpenedFile } from './regular-file.js';
import { removeFileIfExists } from './remove.js';
import { removeDeadTemps, tempBeside } from './temp-files.js';
import { systemProbe, type ProcessProbe } from './process-identity.js';

/** Who holds a lock, as recorded in the lock file. */
export interface LockHolder {
  readonly pid: number;
  readonly host: string;
  /** When the lock was taken (ms since the epoch). */
  readonly createdAt: number;
  /** Boot id of the holder's host when it took the lock, where the system has one. */
  readonly bootId?: string;
  /** Start time of the holder process (see {@link ProcessProbe.startTime}), where the system reports one. */
  readonly startTime?: string;
}

/** A held lock; `release()` removes the lock file if it is still ours (idempotent). */
export interface FileLock {
  readonly path: string;
  readonly holder: LockHolder;
  release(): void;
}

/** Why a lock was not taken: `held` by a live holder, `unreadable` (the file is not a lock record), or `contended`
 * (it kept changing hands while stale locks were recovered). */
export interface LockBusy {
  readonly busy: true;
  readonly reason: 'held' | 'unreadable' | 'contended';
  readonly holder?: LockHolder;
}

/** Options of {@link tryLock} and {@link waitForLock}. */
export interface LockOptions {
  /**
   * Where the system cannot tell a process's start time (no /proc), a live holder refreshes its lock file's mtime
   * every third of this and a lock not refreshed for this long is stale (default 30 s). With /proc the lease is
   * not used: start time and boot id decide.
   */
  readonly leaseMs?: number;
  /** How processes are identified (tests replace it); default: this system's. */
  readonly probe?: ProcessProbe;
}

const DEFAULT_LEASE_MS = 30_000;
const HOST = hostname();

interface Read {
  raw: string;
  holder: LockHolder | undefined;
}

/**
 * The lock file at `path`: opened without following a link or blocking (a FIFO planted there would hang the reader),
 * and read only when it is a regular file; anything else reads as no holder (the caller reports it as unreadable).
 */
function readLockFile(path: string): Read | 'missing' {
  let file: OpenedFile | NotRegularFile;
  try {
    file = openRegularFile(path, constants.O_RDONLY);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'missing';
    throw error;
  }
  if ('notRegular' in file) return { raw: '', holder: undefined };
  try {
    const raw = readFileSync(file.fd, 'utf8');
    return { raw, holder: parseHolder(raw) };
  } finally {
    closeSync(file.fd);
  }
}

function parseHolder(raw: string): LockHolder | undefined {
  let value: Partial<Record<keyof LockHolder, unknown>>;
  try {
    value = JSON.parse(raw) as typeof value;
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object' || !Number.isSafeInteger(value.pid) || typeof value.host !== 'string') return undefined;
  return {
    pid: value.pid as number,
    host: value.host,
    createdAt: typeof value.createdAt === 'number' ? value.createdAt : 0,
    ...(typeof value.bootId === 'string' ? { bootId: value.bootId } : {}),
    ...(typeof value.startTime === 'string' ? { startTime: value.startTime } : {}),
  };
}

/**
 * Whether the holder of the lock file at `path` is gone. A lock from another host is never stale (its pid means
 * nothing here). On this host: a lock from another boot is stale; a dead pid is stale; a live pid whose start time
 * differs from the recorded one is another process that reused the pid, so stale too. A holder that could not
 * record its start time (no /proc) refreshes a lease, the file's mtime: its lock is stale once that is `leaseMs` old.
 * (A lock without a start time on a system that has them comes from an older version: a live pid holds it.)
 */
function isStale(path: string, holder: LockHolder, probe: ProcessProbe, leaseMs: number): boolean {
  if (holder.host !== HOST) return false;
  const boot = probe.bootId();
  if (boot !== undefined && holder.bootId !== undefined && boot !== holder.bootId) return true;
  if (!probe.alive(holder.pid)) return true;
  if (holder.startTime !== undefined) {
    // A holder that recorded its start time keeps no lease: where the start time cannot be read now, it is alive.
    const started = probe.startTime(holder.pid);
    return started !== undefined && started !== holder.startTime;
  }
  // Here start times can be read, so a holder that recorded none predates them (a lock of an older version, which
  // refreshes no lease): judged by its pid alone, as it was then.
  if (probe.startTime(process.pid) !== undefined) return false;
  const mtime = statSync(path, { throwIfNoEntry: false })?.mtimeMs;
  return mtime !== undefined && Date.now() - mtime > leaseMs;
}

/**
 * Whether a live holder holds the lock file at `path` now (judged as {@link tryLock} judges staleness), without
 * taking it: false when there is no lock or its holder is gone. A file that is not a lock record counts as held (it
 * blocks writers).
 */
export function lockHeld(path: string, options: LockOptions = {}): boolean {
  const read = readLockFile(path);
  if (read === 'missing') return false;
  if (read.holder === undefined) return true;
  return !isStale(path, read.holder, options.probe ?? systemProbe, options.leaseMs ?? DEFAULT_LEASE_MS);
}

function tryLink(from: string, to: string): boolean {
  try {
    linkSync(from, to);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return false;
  }
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Takes the exclusive lock file `path` now, or reports who holds it. The file holds `{ pid, host, createdAt, bootId,
 * startTime, token }` and appears atomically with its content (written to a temp file, then hard-linked to `path`,
 * which fails when `path` exists), so no reader ever sees an empty lock. The new holder removes the temp files killed
 * processes left in the lock's folder (see `removeDeadTemps`). A stale lock (see `isStale`: boot id,
 * pid liveness, process start time, else a lease) is recovered: only the holder of a second lock, `<path>.recover`,
 * may remove it, and it checks again under that lock that the file is still the stale one; so two processes
 * recovering at once never remove a lock that a third has just taken. A live holder (this process included) is
 * reported, never waited for: see {@link waitForLock}.
 */
export function tryLock(path: string, options: LockOptions = {}): FileLock | LockBusy {
  const probe = options.probe ?? systemProbe;
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const startTime = probe.startTime(process.pid);
  const bootId = probe.bootId();
  const holder: LockHolder = {
    pid: process.pid,
    host: HOST,
    createdAt: Date.now(),
    ...(bootId === undefined ? {} : { bootId }),
    ...(startTime === undefined ? {} : { startTime }),
  };
  const raw = JSON.stringify({ ...holder, token: randomBytes(8).toString('hex') });
  const temp = tempBeside(path);
  // A new file (never a link or a file someone placed under that name: O_EXCL).
  writeFileSync(temp, raw, { flag: 'wx' });
  try {
    for (let attempt = 0; attempt < 500; attempt++) {
      if (tryLink(temp, path)) {
        sweepDeadTemps(dirname(path), probe);
        return makeLock(path, holder, raw, startTime === undefined ? leaseMs : undefined);
      }
      const current = readLockFile(path);
      if (current === 'missing') continue;
      if (current.holder === undefined) return { busy: true, reason: 'unreadable' };
      if (!isStale(path, current.holder, probe, leaseMs)) return { busy: true, reason: 'held', holder: current.holder };
      if (!recoverStale(path, current.raw, temp, probe, leaseMs)) sleepSync(2);
    }
    return { busy: true, reason: 'contended' };
  } finally {
    removeFileIfExists(temp);
  }
}

/**
 * The holder of a new lock removes the temp files that killed processes left in the lock's folder (see
 * removeDeadTemps: a dead pid's, old enough). Housekeeping: a folder it cannot read or clean does not cost the lock.
 */
function sweepDeadTemps(dir: string, probe: ProcessProbe): void {
  try {
    removeDeadTemps(dir, { probe });
  } catch {
    // Left for the next holder.
  }
}

/** Removes `path` if it still holds `staleRaw`, under the recovery lock. False when another process holds that. */
function recoverStale(path: string, staleRaw: string, temp: string, probe: ProcessProbe, leaseMs: number): boolean {
  const recover = `${path}.recover`;
  if (!tryLink(temp, recover)) {
    // A recoverer that died in the few microseconds it holds the recovery lock would block everyone: clear it.
    const other = readLockFile(recover);
    if (other !== 'missing' && other.holder !== undefined && isStale(recover, other.holder, probe, leaseMs)) {
      const again = readLockFile(recover);
      if (again !== 'missing' && again.raw === other.raw) removeFileIfExists(recover);
    }
    return false;
  }
  try {
    const current = readLockFile(path);
    if (current !== 'missing' && current.raw === staleRaw) removeFileIfExists(path);
  } finally {
    removeFileIfExists(recover);
  }
  return true;
}

function makeLock(path: string, holder: LockHolder, raw: string, leaseMs: number | undefined): FileLock {
  let released = false;
  // Without start times, the lease is what proves this process still holds the lock: refresh it.
  const timer =
    leaseMs === undefined
      ? undefined
      : setInterval(() => {
          const now = new Date();
          try {
            utimesSync(path, now, now);
          } catch {
            // Released meanwhile.
          }
        }, Math.max(1, Math.floor(leaseMs / 3)));
  timer?.unref();
  return {
    path,
    holder,
    release(): void {
      if (released) return;
      released = true;
      if (timer !== undefined) clearInterval(timer);
      const current = readLockFile(path);
      if (current !== 'missing' && current.raw === raw) removeFileIfExists(path);
    },
  };
}

/**
 * {@link tryLock}, retried with a growing delay (2 to 50 ms) while a live process holds the lock, for up to
 * `timeoutMs` (default 10 s). Resolves to the lock, or to why it was not taken when the time is up (an unreadable
 * lock file is reported at once: waiting would not change it).
 */
export async function waitForLock(path: string, options: LockOptions & { readonly timeoutMs?: number } = {}): Promise<FileLock | LockBusy> {
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  let delay = 2;
  for (;;) {
    const result = tryLock(path, options);
    if (!('busy' in result) || result.reason === 'unreadable' || Date.now() >= deadline) return result;
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 50);
  }
}

/** `pid 123 on host since <ISO time>`: a holder for an error message. */
export function describeHolder(holder: LockHolder): string {
  return `pid ${holder.pid} on ${holder.host} since ${new Date(holder.createdAt).toISOString()}`;
}
