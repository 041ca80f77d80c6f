/**
 * When an fsync is made on the event loop and when through the thread pool (src/fs/fsync.ts): direct only while one
 * run's syncing log writer is open in the process; the pool with none or several open, and always for a write that
 * nothing waits for (a background write).
 */
import fs, { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DONE, syncDescriptor, syncingWriterClosed, syncingWriterOpened, writeFileAtomic } from '../../src/fs/index.js';
import { policy } from '../../src/fs/fsync.js';
import { tempDir } from './helpers.js';

const calls: string[] = [];
const original = { fsyncSync: fs.fsyncSync, fsync: fs.fsync, fdatasyncSync: fs.fdatasyncSync, fdatasync: fs.fdatasync };

let dir: string;
/** The policy as other test files of this worker left it (a writer they left open counts): restored after each test. */
let saved: { openWriters: number; quick: boolean };
beforeEach(() => {
  dir = tempDir();
  calls.length = 0;
  saved = { ...policy };
  // Each test starts with no syncing writer open in the process.
  policy.openWriters = 0;
  fs.fsyncSync = (fd) => {
    calls.push('fsyncSync');
    original.fsyncSync(fd);
  };
  fs.fsync = ((fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => {
    calls.push('fsync');
    original.fsync(fd, callback);
  }) as typeof fs.fsync;
  fs.fdatasyncSync = (fd) => {
    calls.push('fdatasyncSync');
    original.fdatasyncSync(fd);
  };
  fs.fdatasync = ((fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => {
    calls.push('fdatasync');
    original.fdatasync(fd, callback);
  }) as typeof fs.fdatasync;
  syncBuiltinESMExports();
});
afterEach(() => {
  Object.assign(policy, saved);
  Object.assign(fs, original);
  syncBuiltinESMExports();
});

/** Runs `body` with a file open, and closes it once what `body` returns has settled. */
async function withFile<T>(body: (fd: number) => T): Promise<Awaited<T>> {
  const path = join(dir, 'f');
  writeFileSync(path, 'x');
  const fd = openSync(path, 'r+');
  try {
    return await body(fd);
  } finally {
    closeSync(fd);
  }
}

describe('syncDescriptor', () => {
  it('with no syncing writer open: through the thread pool, a promise that is not DONE', async () => {
    await withFile(async (fd) => {
      const synced = syncDescriptor(fd, 'data');
      expect(synced).not.toBe(DONE);
      await synced;
    });
    expect(calls).toEqual(['fdatasync']);
  });

  it('with exactly one open: the direct call, DONE; with two: the pool again', async () => {
    syncingWriterOpened();
    try {
      await withFile((fd) => {
        // (The last sync was quick: a slow one, over 1 ms on a loaded machine, sends the next to the pool.)
        policy.quick = true;
        expect(syncDescriptor(fd, 'all')).toBe(DONE);
        policy.quick = true;
        expect(syncDescriptor(fd, 'data')).toBe(DONE);
      });
      syncingWriterOpened();
      try {
        policy.quick = true;
        await withFile((fd) => syncDescriptor(fd, 'all'));
      } finally {
        syncingWriterClosed();
      }
    } finally {
      syncingWriterClosed();
    }
    expect(calls).toEqual(['fsyncSync', 'fdatasyncSync', 'fsync']);
  });

  it('a failed direct sync is a rejected promise, never a throw', async () => {
    syncingWriterOpened();
    try {
      policy.quick = true;
      const path = join(dir, 'g');
      writeFileSync(path, 'x');
      const fd = openSync(path, 'r');
      closeSync(fd);
      await expect(syncDescriptor(fd, 'all')).rejects.toThrow(/EBADF/);
    } finally {
      syncingWriterClosed();
    }
  });
});

describe('writeFileAtomic under the policy', () => {
  it("fsyncs the file directly while one run's writer syncs, through the pool for a background write, and writes the content either way", async () => {
    syncingWriterOpened();
    try {
      policy.quick = true;
      await writeFileAtomic(join(dir, 'a.json'), '{"a":1}', { syncDirectory: false });
      await writeFileAtomic(join(dir, 'b.json'), '{"b":2}', { syncDirectory: false, background: true });
    } finally {
      syncingWriterClosed();
    }
    expect(calls).toEqual(['fsyncSync', 'fsync']);
    expect(readFileSync(join(dir, 'a.json'), 'utf8')).toBe('{"a":1}');
    expect(readFileSync(join(dir, 'b.json'), 'utf8')).toBe('{"b":2}');
  });
});
