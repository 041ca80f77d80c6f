/**
 * When the event log's writer asks the disk to sync: once for what was written since the last sync, never for
 * nothing (a second flush, or the close after a step's flush, which only cuts the reserved space).
 */
import fs, { readFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventStore } from '../../src/store/index.js';
import { runPaths } from '../../src/store/paths.js';
import { makeEvent, tempDir } from './helpers.js';

/**
 * Syncs counted by wrapping node:fs's own functions (and updating the named ESM exports every module imports): the
 * test files share their worker's module cache, so mocking the module would miss a store loaded earlier.
 */
const syncs = { count: 0 };
const original = { fdatasyncSync: fs.fdatasyncSync, fdatasync: fs.fdatasync };

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
  syncs.count = 0;
  fs.fdatasyncSync = (fd) => {
    syncs.count++;
    original.fdatasyncSync(fd);
  };
  fs.fdatasync = ((fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => {
    syncs.count++;
    original.fdatasync(fd, callback);
  }) as typeof fs.fdatasync;
  syncBuiltinESMExports();
});
afterEach(() => {
  Object.assign(fs, original);
  syncBuiltinESMExports();
  tmp.cleanup();
});

describe('event log syncs', () => {
  it("'batch': a flush syncs what was written, a second flush and the close sync nothing, and the log is whole", async () => {
    const store = new EventStore({ dataDir: tmp.dir, sessionKey: 'default', runId: 'r', durability: 'batch' });
    await store.open();
    const opened = syncs.count;
    await store.appendBatch([makeEvent('r', 1), makeEvent('r', 2)]);
    expect(syncs.count - opened).toBe(0);
    await store.flush();
    expect(syncs.count - opened).toBe(1);
    await store.flush();
    await store.close();
    expect(syncs.count - opened).toBe(1);
    // The close cut the reserved space all the same: the file ends with its last line.
    const text = readFileSync(runPaths(tmp.dir, 'default', 'r').events, 'utf8');
    expect(text.endsWith('}\n')).toBe(true);
    expect(text.includes('\0')).toBe(false);
    const reopened = new EventStore({ dataDir: tmp.dir, sessionKey: 'default', runId: 'r' });
    expect((await reopened.readPage(10, 0)).map((e) => e.seq)).toEqual([1, 2]);
    await reopened.close();
  });

  it("'batch': lines appended after the last flush are synced by the close", async () => {
    const store = new EventStore({ dataDir: tmp.dir, sessionKey: 'default', runId: 'r', durability: 'batch' });
    await store.open();
    await store.appendBatch([makeEvent('r', 1), makeEvent('r', 2)]);
    await store.flush();
    const flushed = syncs.count;
    await store.append(makeEvent('r', 3));
    await store.close();
    expect(syncs.count - flushed).toBe(1);
  });

  it("'always': every append syncs once, and the close after them syncs nothing more", async () => {
    const store = new EventStore({ dataDir: tmp.dir, sessionKey: 'default', runId: 'r', durability: 'always' });
    await store.open();
    const opened = syncs.count;
    await store.append(makeEvent('r', 1));
    await store.append(makeEvent('r', 2));
    const appended = syncs.count - opened;
    // A batch of more than one line also syncs its marker first (see BatchMarker); single lines sync the log alone.
    expect(appended).toBe(2);
    await store.close();
    expect(syncs.count - opened).toBe(appended);
  });

  it("'never' never syncs", async () => {
    const store = new EventStore({ dataDir: tmp.dir, sessionKey: 'default', runId: 'r', durability: 'never' });
    await store.open();
    await store.appendBatch([makeEvent('r', 1), makeEvent('r', 2)]);
    await store.flush();
    await store.close();
    expect(syncs.count).toBe(0);
  });
});
