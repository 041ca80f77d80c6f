import { readFileSync, readlinkSync } from 'node:fs';
import { renewAfterSnapshot } from './snapshot.js';

/**
 * What a lock needs to know about processes on this host, so that it can tell a lock holder that is still running
 * from one that died (and whose pid the system may have given to another process since).
 */
export interface ProcessProbe {
  /** Id of the current boot (Linux: /proc/sys/kernel/random/boot_id), or undefined where it cannot be read. */
  bootId(): string | undefined;
  /** When process `pid` started, as an opaque string (Linux: /proc/<pid>/stat field 22, clock ticks since boot),
   * or undefined where it cannot be read (no /proc, or no such process). */
  startTime(pid: number): string | undefined;
  /** Whether a process `pid` exists (signal 0: a process we may not signal exists too). */
  alive(pid: number): boolean;
  /**
   * The pid namespace this process lives in (Linux: the target of /proc/self/ns/pid, `pid:[<inode>]`), or undefined
   * where it cannot be read. A pid means something only inside its namespace: two containers sharing a host name and
   * a volume each have their own pid 1, 2, ... A probe without it knows no namespace, and checks no holder by pid
   * (see `src/fs/lock.ts`).
   */
  pidNamespace?(): string | undefined;
  /**
   * When process `pid` started, in ms since the epoch (Linux: the boot time `btime` of /proc/stat plus field 22 of
   * /proc/<pid>/stat in USER_HZ ticks, 100 a second; about a second coarse), or undefined where it cannot be read.
   */
  startedAt?(pid: number): number | undefined;
}

let bootIdCache: string | undefined | null = null;

function readBootId(): string | undefined {
  if (bootIdCache === null) {
    try {
      bootIdCache = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || undefined;
    } catch {
      bootIdCache = undefined;
    }
  }
  return bootIdCache;
}

let pidNamespaceCache: string | undefined | null = null;

function readPidNamespace(): string | undefined {
  if (pidNamespaceCache === null) {
    try {
      pidNamespaceCache = readlinkSync('/proc/self/ns/pid') || undefined;
    } catch {
      pidNamespaceCache = undefined;
    }
  }
  return pidNamespaceCache;
}

/**
 * Field 22 (starttime) of `/proc/<pid>/stat`. The second field, the command name, is in parentheses and may itself
 * hold spaces and parentheses, so the fields are counted from the last ')'.
 */
export function parseStatStartTime(stat: string): string | undefined {
  const close = stat.lastIndexOf(')');
  if (close < 0) return undefined;
  // After ')' come fields 3, 4, ...: field 22 is the 20th of them.
  const field = stat.slice(close + 2).split(' ')[19];
  return field !== undefined && /^\d+$/.test(field) ? field : undefined;
}

/** This process's start time, read once: it never changes while the process lives (worker threads share it). */
let ownStartTime: { pid: number; value: string | undefined } | undefined;

function readStartTime(pid: number): string | undefined {
  if (pid === process.pid) {
    if (ownStartTime?.pid !== pid) ownStartTime = { pid, value: readProcStartTime(pid) };
    return ownStartTime.value;
  }
  return readProcStartTime(pid);
}

function readProcStartTime(pid: number): string | undefined {
  try {
    return parseStatStartTime(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** USER_HZ: the unit of /proc/<pid>/stat's times (100 on every Linux port Node runs on). */
const USER_HZ = 100;
let bootTimeCache: number | undefined | null = null;

// What these caches hold describes the process that filled them: one restored from a startup snapshot reads its own.
renewAfterSnapshot(() => {
  bootIdCache = null;
  pidNamespaceCache = null;
  ownStartTime = undefined;
  bootTimeCache = null;
});

/** When this boot began (ms since the epoch, whole seconds), from `btime` in /proc/stat. */
function readBootTime(): number | undefined {
  if (bootTimeCache === null) {
    try {
      const btime = /^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'))?.[1];
      bootTimeCache = btime === undefined ? undefined : Number(btime) * 1000;
    } catch {
      bootTimeCache = undefined;
    }
  }
  return bootTimeCache;
}

function readStartedAt(pid: number): number | undefined {
  const ticks = readStartTime(pid);
  const boot = readBootTime();
  return ticks === undefined || boot === undefined ? undefined : boot + (Number(ticks) * 1000) / USER_HZ;
}

/**
 * Field 3 (state) of `/proc/<pid>/stat`: one letter, `Z` for a zombie (dead, not yet reaped by its parent), `X` for
 * dead; undefined where it cannot be read.
 */
export function parseStatState(stat: string): string | undefined {
  const close = stat.lastIndexOf(')');
  return close < 0 ? undefined : stat.charAt(close + 2) || undefined;
}

/**
 * Whether `pid` is a running process: it exists (signal 0) and, where /proc tells, is not a zombie. A killed writer
 * whose parent has not reaped it yet (forever, under a PID 1 that never reaps) still answers signal 0 and keeps its
 * start time, but it holds nothing any more.
 */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return true; // no /proc (or the process just went): signal 0 said it exists
  }
  const state = parseStatState(stat);
  return state !== 'Z' && state !== 'X';
}

/** The probe of this system: /proc where there is one, pid liveness everywhere. */
export const systemProbe: ProcessProbe = { bootId: readBootId, startTime: readStartTime, alive: processAlive, pidNamespace: readPidNamespace, startedAt: readStartedAt };
