/**
 * When an fsync is made on the event loop and when through the thread pool (src/fs/fsync.ts): direct only while one
 * run's log writer is open in the process and the last sync was quick; the pool with none or several open, after a
 * slow or failed sync, and always for a write that nothing waits for (a background write) or a large file.
 */
import fs, { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DONE, runWriterClosed, runWriterOpened, syncDescriptor, writeFileAtomic } from '../../src/fs/index.js';
import { FileRunStore } from '../../src/store/file-run-store.js';
import { EventStore } from '../../src/store/index.js';
import { makeEvent } from '../store/helpers.js';
import { DIRECT_SYNC_MAX_BYTES, policy } from '../../src/fs/fsync.js';
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
  it('with no run writer open: through the thread pool, a promise that is not DONE', async () => {
    await withFile(async (fd) => {
      const synced = syncDescriptor(fd, 'data');
      expect(synced).not.toBe(DONE);
      await synced;
    });
    expect(calls).toEqual(['fdatasync']);
  });

  it('with exactly one open: the direct call, DONE; with two: the pool again', async () => {
    runWriterOpened();
    try {
      await withFile((fd) => {
        // (The last sync was quick: a slow one, over 1 ms on a loaded machine, sends the next to the pool.)
        policy.quick = true;
        expect(syncDescriptor(fd, 'all')).toBe(DONE);
        policy.quick = true;
        expect(syncDescriptor(fd, 'data')).toBe(DONE);
      });
      runWriterOpened();
      try {
        policy.quick = true;
        await withFile((fd) => syncDescriptor(fd, 'all'));
      } finally {
        runWriterClosed();
      }
    } finally {
      runWriterClosed();
    }
    expect(calls).toEqual(['fsyncSync', 'fdatasyncSync', 'fsync']);
  });

  it('a failed direct sync is a rejected promise, never a throw', async () => {
    runWriterOpened();
    try {
      policy.quick = true;
      const path = join(dir, 'g');
      writeFileSync(path, 'x');
      const fd = openSync(path, 'r');
      closeSync(fd);
      await expect(syncDescriptor(fd, 'all')).rejects.toThrow(/EBADF/);
    } finally {
      runWriterClosed();
    }
  });
});

describe('writeFileAtomic under the policy', () => {
  it("fsyncs the file directly while one run's writer syncs, through the pool for a background write, and writes the content either way", async () => {
    runWriterOpened();
    try {
      policy.quick = true;
      await writeFileAtomic(join(dir, 'a.json'), '{"a":1}', { syncDirectory: false });
      await writeFileAtomic(join(dir, 'b.json'), '{"b":2}', { syncDirectory: false, background: true });
    } finally {
      runWriterClosed();
    }
    expect(calls).toEqual(['fsyncSync', 'fsync']);
    expect(readFileSync(join(dir, 'a.json'), 'utf8')).toBe('{"a":1}');
    expect(readFileSync(join(dir, 'b.json'), 'utf8')).toBe('{"b":2}');
  });
});

describe('the policy after a slow or failed sync', () => {
  it('a failed direct sync that took long sends the next sync to the pool (quick is updated on failure too)', async () => {
    runWriterOpened();
    try {
      policy.quick = true;
      fs.fsyncSync = () => {
        // A stall of 5 ms, then the failure.
        const until = performance.now() + 5;
        while (performance.now() < until);
        throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });
      };
      syncBuiltinESMExports();
      await withFile(async (fd) => {
        await expect(syncDescriptor(fd, 'all')).rejects.toThrow(/EIO/);
        expect(policy.quick).toBe(false);
        Object.assign(fs, { fsyncSync: original.fsyncSync });
        syncBuiltinESMExports();
        const next = syncDescriptor(fd, 'all');
        expect(next).not.toBe(DONE);
        await next;
      });
    } finally {
      runWriterClosed();
    }
  });
});

describe('writeFileAtomic of a large file', () => {
  it(`fsyncs a file of more than ${DIRECT_SYNC_MAX_BYTES} bytes through the pool even while one run writes`, async () => {
    runWriterOpened();
    try {
      policy.quick = true;
      await writeFileAtomic(join(dir, 'small.json'), 'x'.repeat(DIRECT_SYNC_MAX_BYTES), { syncDirectory: false });
      policy.quick = true;
      await writeFileAtomic(join(dir, 'large.json'), 'x'.repeat(DIRECT_SYNC_MAX_BYTES + 1), { syncDirectory: false });
    } finally {
      runWriterClosed();
    }
    expect(calls).toEqual(['fsyncSync', 'fsync']);
    expect(readFileSync(join(dir, 'large.json'), 'utf8').length).toBe(DIRECT_SYNC_MAX_BYTES + 1);
  });
});

describe("a run's writer and the count", () => {
  it("counts a run's writer of any durability while it is open, and uncounts it on close", async () => {
    for (const durability of ['never', 'batch'] as const) {
      const writer = await new FileRunStore(dir).openWriter({ sessionKey: 's', runId: `r-${durability}` }, { fresh: true, durability });
      expect(policy.openWriters).toBe(1);
      await writer.close();
      expect(policy.openWriters).toBe(0);
    }
  });

  it('uncounts a writer whose close failed (its fdatasync did), so the process does not keep the direct path for good', async () => {
    const writer = await new FileRunStore(dir).openWriter({ sessionKey: 's', runId: 'r1' }, { fresh: true, durability: 'batch' });
    expect(policy.openWriters).toBe(1);
    const eio = (): Error => Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
    fs.fdatasyncSync = () => {
      throw eio();
    };
    fs.fdatasync = ((_fd: number, callback: (error: Error) => void) => process.nextTick(callback, eio())) as typeof fs.fdatasync;
    syncBuiltinESMExports();
    await expect(writer.commit([makeEvent('r1', 1)])).rejects.toThrow(/EIO/);
    await expect(writer.close()).rejects.toThrow(/EIO/);
    expect(policy.openWriters).toBe(0);
  });

  it('uncounts a writer whose close failed cutting its reserved space (ftruncate)', async () => {
    const writer = await new FileRunStore(dir).openWriter({ sessionKey: 's', runId: 'r2' }, { fresh: true, durability: 'batch' });
    await writer.commit([makeEvent('r2', 1)]);
    const ftruncateSync = fs.ftruncateSync;
    fs.ftruncateSync = () => {
      throw Object.assign(new Error('EIO: i/o error, ftruncate'), { code: 'EIO' });
    };
    syncBuiltinESMExports();
    try {
      await expect(writer.close()).rejects.toThrow(/EIO/);
    } finally {
      fs.ftruncateSync = ftruncateSync;
      syncBuiltinESMExports();
    }
    expect(policy.openWriters).toBe(0);
  });

  it('an EventStore closed before it was opened refuses an append made in the same tick: nothing stays counted or locked', async () => {
    const store = new EventStore({ dataDir: dir, sessionKey: 's', runId: 'r3', durability: 'batch' });
    const closing = store.close();
    const appending = store.append(makeEvent('r3', 1));
    await closing;
    await expect(appending).rejects.toThrow('event store of run r3 is closed');
    await store.close();
    expect(policy.openWriters).toBe(0);
    // Nothing was locked or written: a new writer takes the run at once.
    const again = new EventStore({ dataDir: dir, sessionKey: 's', runId: 'r3', durability: 'batch' });
    await again.append(makeEvent('r3', 1));
    await again.close();
    expect(policy.openWriters).toBe(0);
  });
});
