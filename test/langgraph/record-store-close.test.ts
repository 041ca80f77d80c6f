/**
 * Closing a RunStoreRecordStore closes every run writer it opened, even when one of those closes fails: the others
 * would otherwise keep their locks (and their place in the process's fsync policy, src/fs/fsync.ts) for good.
 */
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { afterEach, describe, expect, it } from 'vitest';
import { policy } from '../../src/fs/fsync.js';
import { RunStoreRecordStore } from '../../src/langgraph/index.js';
import { makeEvent, tempDir } from '../store/helpers.js';

const original = { ftruncateSync: fs.ftruncateSync };
afterEach(() => {
  Object.assign(fs, original);
  syncBuiltinESMExports();
});

describe('RunStoreRecordStore.close', () => {
  it('closes every writer when the first close fails, then reports that failure', async () => {
    const tmp = tempDir();
    const before = policy.openWriters;
    const records = new RunStoreRecordStore({ dataDir: tmp.dir, sessionKey: 's', durability: 'batch' });
    await records.openForWrite('t1');
    await records.openForWrite('t2');
    await records.append('t1', [makeEvent('t1', 1)]);
    await records.append('t2', [makeEvent('t2', 1)]);
    expect(policy.openWriters).toBe(before + 2);
    // A disk that now fails: each close fails cutting its log's reserved space.
    fs.ftruncateSync = () => {
      throw Object.assign(new Error('EIO: i/o error, ftruncate'), { code: 'EIO' });
    };
    syncBuiltinESMExports();
    await expect(records.close()).rejects.toThrow(/EIO/);
    // Both closes ran (each uncounts its writer, failed or not), not only the first.
    expect(policy.openWriters).toBe(before);
    tmp.cleanup();
  });
});
