import { closeSync, constants, futimesSync, linkSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { openRegularFile, type NotRegularFile, type OpenedFile } from './regular-file.js';
import { removeFileIfExists } from './remove.js';
import { removeDeadTemps, tempBeside } from './temp-files.js';
import { systemProbe, type ProcessProbe } from './process-identity.js';
import { randomHex } from './random.js';
import { renewAfterSnapshot } from './snapshot.js';

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
  /** The holder's pid namespace (see {@link ProcessProbe.pidNamespace}), where the system reports one: its pid means
   * something only there. Locks of older versions have none. */
  readonly pidNs?: string;
}

/** A held lock; `release()` removes the lock file if it is still ours (idempotent). */
export interface FileLock {
  readonly path: string;
  readonly holder: LockHolder;
  /**
   * Whether the lock is still this holder's, asked before a write made under it. A process that cannot judge the
   * holder by its pid (another host, boot or pid namespace) takes the lock over once its lease has not been refreshed
   * for `leaseMs`, which happens to a live holder whose event loop was blocked, or whose process was suspended, that
   * long: its refresh timer did not run. So while the last refresh is less than half a lease old, the answer is yes at
   * once (no file is read: a step's commit asks it); after that, the lock file is read again: still this lock's record,
   * its lease is refreshed now and the answer is yes; another record, or none, and it is no (for good: a lock once
   * lost is never taken for held again).
   */
  confirm(): boolean;
  /**
   * Stops the lease refresh and removes the lock file if it is still this holder's record (a lock another process
   * took over is left to it). Idempotent.
   */
  release(): void;
}

/** Why a lock was not taken: `held` by a live holder, `unreadable` (the file is not a lock record), or `contended`
 * (it kept changing hands while stale locks were recovered). */
export interface LockBusy {
  readonly busy: true;
  readonly reason: 'held' | 'unreadable' | 'contended';
  readonly holder?: LockHolder;
  /** Why the holder is judged live (`held`, see {@link LockJudgement}), or what the file is (`unreadable`). */
  readonly why?: string;
}

/** Options of {@link tryLock} and {@link waitForLock}. */
export interface LockOptions {
  /**
   * The lease (default 30 s): a holder refreshes its lock file's mtime every third of this while it lives, and a
   * lock whose holder cannot be checked by pid here (another host, boot or pid namespace; no /proc) is stale once
   * its mtime is this old. A holder checkable by pid (this boot and pid namespace) is judged by its pid and start
   * time instead. Holders and judges of one lock must use the same value, and hosts sharing a folder must agree on
   * the time within it.
   */
  readonly leaseMs?: number;
  /** How processes are identified (tests replace it); default: this system's. */
  readonly probe?: ProcessProbe;
}

const DEFAULT_LEASE_MS = 30_000;
/** This machine's name, as lock records give it (read again in a process restored from a startup snapshot). */
let HOST = hostname();
renewAfterSnapshot(() => {
  HOST = hostname();
});

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

/** The largest time in milliseconds a Date holds. */
const MAX_DATE_MS = 8.64e15;

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
    // A time a Date can hold (±8.64e15 ms), else unknown (0): a record another tool or a damaged disk wrote must not
    // break the messages that quote it.
    createdAt: typeof value.createdAt === 'number' && Number.isFinite(value.createdAt) && Math.abs(value.createdAt) <= MAX_DATE_MS ? value.createdAt : 0,
    ...(typeof value.bootId === 'string' ? { bootId: value.bootId } : {}),
    ...(typeof value.startTime === 'string' ? { startTime: value.startTime } : {}),
    ...(typeof value.pidNs === 'string' ? { pidNs: value.pidNs } : {}),
  };
}

/** A lock's holder as judged now: whether it is gone (its lock stale), and why, in words for a message. */
export interface LockJudgement {
  readonly stale: boolean;
  /** Why it is or is not stale, e.g. `pid 123 is alive and started when the lock records` or
   * `another pid namespace (pid:[4026532179]), not checkable by pid here: its lease was refreshed 2 s ago (stale after 30 s without one)`. */
  readonly why: string;
}

/** Tolerance of the comparison of a process's start with a lock's `createdAt` (start times are a second coarse). */
const START_SLACK_MS = 2_000;

/**
 * Whether the pid `holder` records names a process of this reader's pid space, so that its liveness can be checked
 * here: the holder recorded the boot id and pid namespace this process has (whatever the host name says: a host may
 * be renamed in one boot). A lock of an older format, which records no pid namespace, is checked by pid when it
 * records this boot, or no boot id but this host name (as such locks always were). Anything else (another host,
 * another boot, another pid namespace: a container sharing the volume, even one with the same host name) is judged
 * by its lease.
 */
function pidCheckable(holder: LockHolder, probe: ProcessProbe): boolean {
  const boot = probe.bootId();
  if (holder.pidNs !== undefined) {
    const ns = probe.pidNamespace?.();
    return boot !== undefined && holder.bootId === boot && ns !== undefined && holder.pidNs === ns;
  }
  if (holder.bootId !== undefined) return boot !== undefined && holder.bootId === boot;
  return holder.host === HOST;
}

/**
 * Judges a holder checkable by pid (see {@link pidCheckable}): gone when its pid is dead, or now names a process that
 * started at another time than the recorded one (the pid was reused). A lock of an older format that recorded no
 * start time is gone when the process at its pid started after the lock was taken (a reused pid; see
 * `ProcessProbe.startedAt`). Undefined where the pid is alive and the system cannot say when its process started
 * (no /proc): then the lease decides.
 */
function judgeByPid(holder: LockHolder, probe: ProcessProbe): LockJudgement | undefined {
  if (!probe.alive(holder.pid)) return { stale: true, why: `pid ${holder.pid} is not running` };
  if (holder.startTime !== undefined) {
    const started = probe.startTime(holder.pid);
    if (started === undefined) return undefined;
    return started === holder.startTime
      ? { stale: false, why: `pid ${holder.pid} is alive and started when the lock records` }
      : { stale: true, why: `pid ${holder.pid} is another process now (it started at ${started}, the holder at ${holder.startTime}: the pid was reused)` };
  }
  const startedAt = probe.startedAt?.(holder.pid);
  if (startedAt === undefined || holder.createdAt <= 0) return undefined;
  return startedAt > holder.createdAt + START_SLACK_MS
    ? { stale: true, why: `pid ${holder.pid} started at ${iso(startedAt)}, after the lock was taken (${iso(holder.createdAt)}): the pid was reused (a lock of an older format, without start time)` }
    : { stale: false, why: `pid ${holder.pid} is alive and started before the lock was taken (a lock of an older format, without start time)` };
}

/** Where the holder is, for a message: why its pid cannot be checked here. */
function elsewhere(holder: LockHolder, probe: ProcessProbe): string {
  const boot = probe.bootId();
  if (holder.bootId !== undefined && boot !== undefined && holder.bootId !== boot) {
    return holder.host === HOST ? `another boot of host ${holder.host}, or another machine of that name` : `host ${holder.host} (another machine or boot)`;
  }
  if (holder.pidNs !== undefined && holder.pidNs !== probe.pidNamespace?.()) return `host ${holder.host}, pid namespace ${holder.pidNs} (another container than this process's)`;
  if (holder.host !== HOST) return `host ${holder.host}`;
  return `host ${holder.host}, where this process cannot tell processes apart (no /proc)`;
}

/**
 * Whether the holder of the lock file at `path` is gone, and why (see {@link LockJudgement}). A holder whose pid is
 * meaningful here is judged by it (see {@link pidCheckable} and {@link judgeByPid}). Any other holder, and one whose
 * pid is alive but whose start cannot be read, is judged by its lease: every live holder refreshes its lock file's
 * mtime every third of `leaseMs`, so a lock not refreshed for `leaseMs` is stale, and one refreshed since is held
 * (a lease more than `leaseMs` in the future is stale too: no refresh sets it there, so it would otherwise block for
 * as long). So a dead writer's lock never blocks forever, and a live writer elsewhere keeps its lock while it lives.
 */
export function judgeHolder(path: string, holder: LockHolder, options: LockOptions = {}): LockJudgement {
  const probe = options.probe ?? systemProbe;
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const checkable = pidCheckable(holder, probe);
  if (checkable) {
    const byPid = judgeByPid(holder, probe);
    if (byPid !== undefined) return byPid;
  }
  const where = checkable ? `pid ${holder.pid} is alive, but its start cannot be read here` : `${elsewhere(holder, probe)}, not checkable by pid here`;
  const mtime = statSync(path, { throwIfNoEntry: false })?.mtimeMs;
  if (mtime === undefined) return { stale: true, why: `${where}; its lock file is gone` };
  const age = Date.now() - mtime;
  const lease = `stale after ${seconds(leaseMs)} without one`;
  if (age > leaseMs) return { stale: true, why: `${where}: its lease was last refreshed ${seconds(age)} ago (${lease})` };
  if (age < -leaseMs) return { stale: true, why: `${where}: its lease time is ${seconds(-age)} in the future, which no refresh sets (${lease})` };
  return { stale: false, why: `${where}: its lease was refreshed ${seconds(Math.max(0, age))} ago (${lease})` };
}

function seconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}

/** `ms` as an ISO date, or the number as it is when no Date holds it. */
function iso(ms: number): string {
  return Number.isFinite(ms) && Math.abs(ms) <= MAX_DATE_MS ? new Date(ms).toISOString() : String(ms);
}

/** Whether a process that wrote `holder` is gone, as far as its pid tells (used for waiters' announcements). */
function processGone(holder: LockHolder, probe: ProcessProbe): boolean {
  return pidCheckable(holder, probe) && judgeByPid(holder, probe)?.stale === true;
}

/** What the lock file at `path` says now: no lock, a holder and its judgement, or a file that is not a lock record. */
export type LockState =
  | { readonly state: 'free' }
  | { readonly state: 'unreadable'; readonly why: string }
  | { readonly state: 'held' | 'stale'; readonly holder: LockHolder; readonly why: string };

/**
 * The lock file at `path` as {@link tryLock} judges it, without taking it: `free` (no lock file), `held` by a live
 * holder, `stale` (its holder is gone: the next {@link tryLock} recovers it), or `unreadable` (not a lock record: it
 * blocks writers, and is reported as such). `why` says why, for a message.
 */
export function inspectLock(path: string, options: LockOptions = {}): LockState {
  const read = readLockFile(path);
  if (read === 'missing') return { state: 'free' };
  if (read.holder === undefined) return { state: 'unreadable', why: unreadableWhy(path) };
  const judged = judgeHolder(path, read.holder, options);
  return { state: judged.stale ? 'stale' : 'held', holder: read.holder, why: judged.why };
}

function unreadableWhy(path: string): string {
  return `${path} is not a lock record (not a regular file, or not a holder's JSON); no writer can take it while it is there: remove it if no writer is running`;
}

/**
 * Whether a live holder holds the lock file at `path` now (judged as {@link tryLock} judges staleness), without
 * taking it: false when there is no lock or its holder is gone. A file that is not a lock record counts as held (it
 * blocks writers). See {@link inspectLock} for why.
 */
export function lockHeld(path: string, options: LockOptions = {}): boolean {
  const state = inspectLock(path, options).state;
  return state === 'held' || state === 'unreadable';
}

/**
 * Whether `holder` is this very process (another lock of this process, e.g. a second store instance): its pid is
 * checkable here (same boot and pid namespace) and is this process's, started when this one did.
 */
export function heldByThisProcess(holder: LockHolder, probe: ProcessProbe = systemProbe): boolean {
  if (holder.pid !== process.pid || !pidCheckable(holder, probe)) return false;
  return holder.startTime === undefined || holder.startTime === probe.startTime(process.pid);
}

/** This process as a {@link LockHolder}, now. */
function thisProcess(probe: ProcessProbe): LockHolder {
  const startTime = probe.startTime(process.pid);
  const bootId = probe.bootId();
  const pidNs = probe.pidNamespace?.();
  return {
    pid: process.pid,
    host: HOST,
    createdAt: Date.now(),
    ...(bootId === undefined ? {} : { bootId }),
    ...(startTime === undefined ? {} : { startTime }),
    ...(pidNs === undefined ? {} : { pidNs }),
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
 * startTime, pidNs, token }` and appears atomically with its content (written to a temp file, then hard-linked to
 * `path`, which fails when `path` exists), so no reader ever sees an empty lock. The holder refreshes the file's mtime
 * (its lease) every third of `leaseMs` until it releases it. The new holder removes the temp files killed
 * processes left in the lock's folder (see `removeDeadTemps`). A stale lock (see {@link judgeHolder}: pid liveness and
 * process start time where the pid means something here, else the lease) is recovered: only the holder of a second lock, `<path>.recover`,
 * may remove it, and it checks again under that lock that the file is still the stale one; so two processes
 * recovering at once never remove a lock that a third has just taken. A live holder (this process included) is
 * reported, never waited for: see {@link waitForLock}.
 */
export function tryLock(path: string, options: LockOptions = {}): FileLock | LockBusy {
  const probe = options.probe ?? systemProbe;
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const holder = thisProcess(probe);
  const raw = JSON.stringify({ ...holder, token: randomHex(8) });
  const temp = tempBeside(path);
  // A new file (never a link or a file someone placed under that name: O_EXCL).
  writeFileSync(temp, raw, { flag: 'wx' });
  try {
    for (let attempt = 0; attempt < 500; attempt++) {
      if (tryLink(temp, path)) {
        sweepDeadTemps(dirname(path), probe);
        return makeLock(path, holder, raw, leaseMs);
      }
      const current = readLockFile(path);
      if (current === 'missing') continue;
      if (current.holder === undefined) return { busy: true, reason: 'unreadable', why: unreadableWhy(path) };
      const judged = judgeHolder(path, current.holder, { probe, leaseMs });
      if (!judged.stale) return { busy: true, reason: 'held', holder: current.holder, why: judged.why };
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
    if (other !== 'missing' && other.holder !== undefined && judgeHolder(recover, other.holder, { probe, leaseMs }).stale) {
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

/**
 * The lease: a process that cannot check this holder by pid (another host, boot or pid namespace) knows it lives by
 * the lock file's mtime, refreshed here every third of `leaseMs` (an unref'd timer: it keeps no process alive). Only
 * the file that still holds this lock's record is touched (read and refreshed through one descriptor), never one
 * that another process put there after judging this one gone. A holder whose event loop is blocked for longer than
 * the lease loses it to such a process, and learns it at its next write ({@link FileLock.confirm}).
 */
function refreshLease(path: string, raw: string, now: number): 'refreshed' | 'lost' | 'failed' {
  let file: OpenedFile | NotRegularFile;
  try {
    file = openRegularFile(path, constants.O_RDONLY);
  } catch (error) {
    // Released, or removed by a process that judged this holder gone.
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'lost' : 'failed';
  }
  if ('notRegular' in file) return 'lost';
  try {
    if (readFileSync(file.fd, 'utf8') !== raw) return 'lost';
    const time = new Date(now);
    futimesSync(file.fd, time, time);
    return 'refreshed';
  } catch {
    return 'failed'; // left for the next refresh
  } finally {
    closeSync(file.fd);
  }
}

function makeLock(path: string, holder: LockHolder, raw: string, leaseMs: number): FileLock {
  let released = false;
  let lost = false;
  /** When the lease was last refreshed (the lock file's mtime then): when the lock was taken, at first. */
  let refreshedAt = Date.now();
  const refresh = (now: number): void => {
    const result = refreshLease(path, raw, now);
    if (result === 'refreshed') refreshedAt = now;
    else if (result === 'lost') lost = true;
  };
  const timer = setInterval(() => {
    if (!lost) refresh(Date.now());
  }, Math.max(1, Math.floor(leaseMs / 3)));
  timer.unref();
  return {
    path,
    holder,
    confirm(): boolean {
      if (released || lost) return false;
      const now = Date.now();
      const age = now - refreshedAt;
      if (age >= 0 && age < leaseMs / 2) return true;
      refresh(now);
      // A refresh that failed (an I/O error) leaves the lock this holder's while its lease has not run out.
      return !lost && now - refreshedAt < leaseMs && now >= refreshedAt;
    },
    release(): void {
      if (released) return;
      released = true;
      clearInterval(timer);
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
      me ??= { ...thisProcess(probe), token: randomHex(8) };
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
  return announced.ageMs > NEXT_STALE_MS || processGone(announced.waiter, probe);
}

/** `pid 123 on host since <ISO time>`: a holder for an error message. */
export function describeHolder(holder: LockHolder): string {
  return `pid ${holder.pid} on ${holder.host} since ${iso(holder.createdAt)}`;
}
