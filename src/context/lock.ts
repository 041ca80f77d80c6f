import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { ContextError } from './errors.js';

interface LockHolder {
  pid: number;
  host: string;
  time: string;
  token: string;
}

/** Options for {@link acquireLock}. */
export interface LockOptions {
  /** Give up after this long (default 10 s). */
  readonly timeoutMs?: number;
}

/**
 * Takes the workspace write lock: a file created whole (see `tryCreate`) holding pid, host, time and a random token.
 * Waits (with backoff) while another live writer holds it; a lock left by a dead process on this host is recovered
 * (see `recoverStale`).
 * Returns the release function, which removes the file only while it is still ours.
 */
export async function acquireLock(file: string, options: LockOptions = {}): Promise<() => void> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const me: LockHolder = { pid: process.pid, host: hostname(), time: new Date().toISOString(), token: randomBytes(8).toString('hex') };
  const body = JSON.stringify(me);
  const deadline = Date.now() + timeoutMs;
  let delay = 2;
  for (;;) {
    if (tryCreate(file, body, me.token)) return () => releaseLock(file, body);
    const held = readHolder(file);
    if (held !== undefined && isStale(held.holder) && recoverStale(file, held.raw, body, me.token)) continue;
    if (Date.now() >= deadline) {
      const who = held === undefined ? 'another writer' : `pid ${held.holder.pid} on ${held.holder.host} since ${held.holder.time}`;
      throw new ContextError(
        'LOCK_TIMEOUT',
        `workspace lock ${file} is held by ${who}; waited ${timeoutMs} ms. If that process is gone, delete the file.`,
        { file },
      );
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 50);
  }
}

/**
 * Creates the lock file whole or not at all: the body goes to a private temp file that is then hard-linked to the
 * lock path (link fails if the path exists). Writing the lock path directly could leave an empty file behind a
 * crash between create and write, which no one could ever judge stale.
 */
function tryCreate(file: string, body: string, token: string): boolean {
  const temp = `${file}.${process.pid}.${token}.tmp`;
  writeFileSync(temp, body);
  try {
    linkSync(temp, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return false;
  } finally {
    tryUnlink(temp);
  }
}

/**
 * Removes `file` if it still holds `staleRaw`, under a second lock, `<file>.recover`, checking again under it: so two
 * processes recovering at once never remove a lock that a third has just taken (as the event store's lock does).
 * False when another process holds the recovery lock; one left by a dead process is cleared.
 */
function recoverStale(file: string, staleRaw: string, body: string, token: string): boolean {
  const recover = `${file}.recover`;
  if (!tryCreate(recover, body, token)) {
    const other = readHolder(recover);
    if (other !== undefined && isStale(other.holder) && readHolder(recover)?.raw === other.raw) tryUnlink(recover);
    return false;
  }
  try {
    if (readHolder(file)?.raw === staleRaw) tryUnlink(file);
  } finally {
    releaseLock(recover, body);
  }
  return true;
}

function releaseLock(file: string, body: string): void {
  if (readHolder(file)?.raw === body) tryUnlink(file);
}

function readHolder(file: string): { raw: string; holder: LockHolder } | undefined {
  try {
    const raw = readFileSync(file, 'utf8');
    return { raw, holder: JSON.parse(raw) as LockHolder };
  } catch {
    // Missing (released just now): try again.
    return undefined;
  }
}

function isStale(holder: LockHolder): boolean {
  if (holder.host !== hostname() || typeof holder.pid !== 'number') return false;
  try {
    process.kill(holder.pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

function tryUnlink(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // Already gone: someone else released or recovered it.
  }
}
