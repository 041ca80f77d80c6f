import { randomBytes } from 'node:crypto';
import { closeSync, constants, futimesSync, linkSync, readFileSync, renameSync, statSync, utimesSync, writeFileSync } from 'node:fs';
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
 * Whether the process that wrote `holder` on this host is gone: it wrote it in another boot, its pid is dead, or its
 * pid now names another process (the start time differs from the recorded one). A live pid without a recorded or
 * readable start time is not gone.
 */
function processGone(holder: LockHolder, probe: ProcessProbe): boolean {
  const boot = probe.bootId();
  if (boot !== undefined && holder.bootId !== undefined && boot !== holder.bootId) return true;
  if (!probe.alive(holder.pid)) return true;
  if (holder.startTime === undefined) return false;
  const started = probe.startTime(holder.pid);
  return started !== undefined && started !== holder.startTime;
}

/**
 * Whether the holder of the lock file at `path` is gone. A lock from another host is never stale (its pid means
 * nothing here). On this host: a lock from another boot is stale; a dead pid is stale; a live pid whose start time
 * differs from the recorded one is another process that reused the pid, so stale too (see `processGone`). A holder
 * that could not record its start time (no /proc) refreshes a lease, the file's mtime: its lock is stale once that is
 * `leaseMs` old. (A lock without a start time on a system that has them comes from an older version: a live pid
 * holds it.)
 */
function isStale(path: string, holder: LockHolder, probe: ProcessProbe, leaseMs: number): boolean {
  if (holder.host !== HOST) return false;
  if (processGone(holder, probe)) return true;
  // A holder that recorded its start time keeps no lease: where the start time cannot be read now, it is alive.
  if (holder.startTime !== undefined) return false;
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

/** This process as a {@link LockHolder}, now. */
function thisProcess(probe: ProcessProbe): LockHolder {
  const startTime = probe.startTime(process.pid);
  const bootId = probe.bootId();
  return {
    pid: process.pid,
    host: HOST,
    createdAt: Date.now(),
    ...(bootId === undefined ? {} : { bootId }),
    ...(startTime === undefined ? {} : { startTime }),
  };
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
  const holder = thisProcess(probe);
  const { startTime } = holder;
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

/*
 * The line of waiters. Polling alone is not fair: a holder that releases the lock and asks again at once takes it back
 * within microseconds, before a polling waiter looks, and can do so until the waiter times out. So a waitForLock that
 * found the lock busy announces itself in `<lock>.next`, a record like the lock's ({@link LockHolder} plus a token
 * naming this one call), whose `createdAt` is when it began to wait; and a waitForLock leaves a free lock to the
 * waiter announced there while that is live and fresh. The announced waiter refreshes the file's mtime at every poll
 * and removes it once it holds the lock (or gives up). One place in line is enough for two processes; with more, the
 * longest waiting one takes the place over from a younger one at its next poll, so every waiter is served after at
 * most the waiters older than it, plus those served between two of its polls (1 ms apart while it waits behind
 * another).
 * The record is advice, never needed for mutual exclusion (the lock file gives that): one that is not a regular file
 * or not a record (a link is not followed, a FIFO not waited on), or cannot be read or replaced, is no announcement;
 * one whose process is gone (see `processGone`) or that was not refreshed for NEXT_STALE_MS (a stopped or stuck
 * process) is stale, and the next waiter replaces it.
 */

/** An announcement older than this (not refreshed) no longer holds the lock for its waiter. */
const NEXT_STALE_MS = 500;
/** Longest pause between two polls of a waiter (they start at 1 ms and double). */
const MAX_POLL_MS = 8;

/** A waiter as announced: who, since when (`createdAt`), and which call (`token`). */
interface Waiter extends LockHolder {
  readonly token: string;
}

/**
 * The waiter announced at `next`, with the age of the announcement; undefined when there is none that can be read
 * (see above). When it names `own` (a token), its mtime is renewed first.
 */
function readAnnouncement(next: string, own: string | undefined): { waiter: Waiter; ageMs: number } | undefined {
  let file: OpenedFile | NotRegularFile;
  try {
    file = openRegularFile(next, constants.O_RDONLY);
  } catch {
    return undefined; // missing (the common case: one failed open) or unreadable
  }
  if ('notRegular' in file) return undefined;
  try {
    const raw = readFileSync(file.fd, 'utf8');
    const holder = parseHolder(raw);
    const token = holder === undefined ? undefined : (JSON.parse(raw) as { token?: unknown }).token;
    if (holder === undefined || typeof token !== 'string') return undefined;
    if (token === own) {
      const now = new Date();
      futimesSync(file.fd, now, now);
      return { waiter: { ...holder, token }, ageMs: 0 };
    }
    return { waiter: { ...holder, token }, ageMs: Date.now() - file.stat.mtimeMs };
  } catch {
    return undefined;
  } finally {
    closeSync(file.fd);
  }
}

/** Whether waiter `a` waits longer than `b` (ties broken by token). */
function before(a: Waiter, b: Waiter): boolean {
  return a.createdAt < b.createdAt || (a.createdAt === b.createdAt && a.token < b.token);
}

/** Announces `me` at `next`, replacing what is there (a link or a FIFO is replaced, never followed or opened). */
function announce(next: string, me: Waiter): void {
  const temp = tempBeside(next);
  try {
    writeFileSync(temp, JSON.stringify(me), { flag: 'wx' });
    renameSync(temp, next);
  } catch {
    // A directory in the way, or a folder this process cannot write: it waits without a place in line.
  } finally {
    removeFileIfExists(temp);
  }
}

/**
 * {@link tryLock}, retried while a live process holds the lock, for up to `timeoutMs` (default 10 s), in line with
 * the other callers of waitForLock on that lock: a caller that finds the lock busy announces itself beside it
 * (`<lock>.next`) and polls (every 1 ms, doubling to 8 ms), and the others leave a free lock to the announced
 * waiter, the one that has waited longest, while it is alive and polling (a stuck one for at most 0.5 s). So a
 * caller that holds the lock briefly and asks again at once cannot starve another: each waiter is served after the
 * waiters older than it, within a few hold times. Without contention this costs one failed open. ({@link tryLock}
 * itself does not look at the line.) Resolves to the lock, or to why it was not taken when the time is up (the last
 * try ignores the line); an unreadable lock file is reported at once: waiting would not change it.
 */
export async function waitForLock(path: string, options: LockOptions & { readonly timeoutMs?: number } = {}): Promise<FileLock | LockBusy> {
  const probe = options.probe ?? systemProbe;
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  const next = `${path}.next`;
  let me: Waiter | undefined;
  // A stale announcement seen on the way: removed at the end (if still there), so that it costs later calls nothing.
  let stale: string | undefined;
  let delay = 1;
  try {
    for (;;) {
      const last = Date.now() >= deadline;
      const announced = readAnnouncement(next, me?.token);
      const mine = me !== undefined && announced?.waiter.token === me.token;
      const gone = announced !== undefined && !mine && isStaleAnnouncement(announced, probe);
      if (gone) stale = announced.waiter.token;
      const other = announced === undefined || mine || gone ? undefined : announced.waiter;
      const deferring = other !== undefined && !(me !== undefined && before(me, other));
      if (!deferring || last) {
        const result = tryLock(path, options);
        if (!('busy' in result) || result.reason === 'unreadable' || last) return result;
      }
      me ??= { ...thisProcess(probe), token: randomBytes(8).toString('hex') };
      if (!mine && !deferring) {
        announce(next, me);
        delay = 1;
      }
      // A waiter behind another only reads the announcement, and must see at once when that waiter has the lock and
      // its place is free: before the holder releases it, asks again and, finding no one in line, takes it back.
      await new Promise((resolve) => setTimeout(resolve, deferring ? 1 : delay));
      if (!deferring) delay = Math.min(delay * 2, MAX_POLL_MS);
    }
  } finally {
    if (me !== undefined || stale !== undefined) {
      const token = readAnnouncement(next, undefined)?.waiter.token;
      if (token !== undefined && (token === me?.token || token === stale)) removeFileIfExists(next);
    }
  }
}

/** Whether an announcement no longer holds the lock for its waiter: not refreshed lately, or its process is gone. */
function isStaleAnnouncement(announced: { waiter: Waiter; ageMs: number }, probe: ProcessProbe): boolean {
  return announced.ageMs > NEXT_STALE_MS || (announced.waiter.host === HOST && processGone(announced.waiter, probe));
}

/** `pid 123 on host since <ISO time>`: a holder for an error message. */
export function describeHolder(holder: LockHolder): string {
  return `pid ${holder.pid} on ${holder.host} since ${new Date(holder.createdAt).toISOString()}`;
}
