import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { LockError, type LockHolder } from './errors.js';

/** A held lock; `release()` removes the lock file if it is still ours. */
export interface FileLock {
  readonly path: string;
  readonly holder: LockHolder;
  release(): void;
}

const HOST = hostname();

function readHolder(path: string): LockHolder | 'missing' | 'unreadable' {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'missing';
    throw error;
  }
  try {
    const parsed = JSON.parse(text) as Partial<LockHolder>;
    if (typeof parsed.pid === 'number' && typeof parsed.host === 'string' && typeof parsed.createdAt === 'number') {
      return { pid: parsed.pid, host: parsed.host, createdAt: parsed.createdAt };
    }
  } catch {
    // fall through: written by something else
  }
  return 'unreadable';
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function sameHolder(a: LockHolder, b: LockHolder): boolean {
  return a.pid === b.pid && a.host === b.host && a.createdAt === b.createdAt;
}

function describe(holder: LockHolder): string {
  return `pid ${holder.pid} on ${holder.host} since ${new Date(holder.createdAt).toISOString()}`;
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Takes an exclusive lock file holding `{ pid, host, createdAt }`. The file appears atomically with its content
 * (written to a temp file, then hard-linked to `path`, which fails when `path` exists), so no reader ever sees an
 * empty lock. When the lock exists:
 * - held by a live process (this one included, e.g. a second store instance): {@link LockError} naming the holder;
 * - held by a dead process on this host: stale, recovered. Only the holder of a second lock, `<path>.recover`, may
 *   remove a stale lock, and it checks again under that lock that the file is still the stale one; so two
 *   processes recovering at once never remove a lock that a third has just taken.
 * A lock from another host is never judged stale (its pid means nothing here).
 */
export function acquireLock(path: string, what: string): FileLock {
  const holder: LockHolder = { pid: process.pid, host: HOST, createdAt: Date.now() };
  const temp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(temp, JSON.stringify(holder));
  try {
    for (let attempt = 0; attempt < 500; attempt++) {
      if (tryLink(temp, path)) return makeLock(path, holder);
      const current = readHolder(path);
      if (current === 'missing') continue;
      if (current === 'unreadable') {
        throw new LockError(`${what} is locked by ${path}, whose content is not a lock record; remove it if no writer is running`, { path });
      }
      if (current.host !== HOST || processAlive(current.pid)) {
        const who = current.pid === process.pid && current.host === HOST ? 'another store instance in this process' : describe(current);
        throw new LockError(`${what} already has a writer: ${who} holds ${path}. Close that writer first (one writer per run).`, {
          path,
          holder: current,
        });
      }
      if (!recoverStale(path, current, temp)) sleepSync(2);
    }
    throw new LockError(`could not take ${path} for ${what}: it kept changing hands`, { path });
  } finally {
    rmSync(temp, { force: true });
  }
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

/** Removes `path` if it still holds `stale`, under the recovery lock. Returns false when another process holds that. */
function recoverStale(path: string, stale: LockHolder, temp: string): boolean {
  const recover = `${path}.recover`;
  if (!tryLink(temp, recover)) {
    const other = readHolder(recover);
    // A recoverer that died in the few microseconds it holds the recovery lock would block everyone: clear it.
    if (typeof other === 'object' && other.host === HOST && !processAlive(other.pid)) rmSync(recover, { force: true });
    return false;
  }
  try {
    const current = readHolder(path);
    if (typeof current === 'object' && sameHolder(current, stale)) rmSync(path, { force: true });
  } finally {
    rmSync(recover, { force: true });
  }
  return true;
}

function makeLock(path: string, holder: LockHolder): FileLock {
  let released = false;
  return {
    path,
    holder,
    release(): void {
      if (released) return;
      released = true;
      const current = readHolder(path);
      if (typeof current === 'object' && sameHolder(current, holder)) rmSync(path, { force: true });
    },
  };
}
