import { readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tryLock, type FileLock } from '../../src/fs/index.js';
import { ContextEngine } from '../../src/context/index.js';
import { atTime, openSample, settle, snapshotStore, tempDir, writeTree } from './helpers.js';

describe('workspace lock', () => {
  it('a writer blocked by the lock fails without touching the store', async () => {
    const { root } = await openSample();
    const engine = await ContextEngine.open(root, { lockTimeoutMs: 50 });
    const lock = tryLock(join(root, '.merkle', 'lock')) as FileLock;
    await expect(engine.putFrame('README.md', { type: 't', content: 'x' }, 'w')).rejects.toMatchObject({ code: 'LOCK_TIMEOUT', message: expect.stringContaining(`pid ${process.pid}`) });
    lock.release();
    expect(await engine.listFrames('README.md')).toEqual([]);
  });

  it('a scan that finds nothing changed takes no lock and writes nothing; one that finds a change waits for the lock', async () => {
    const { root } = await openSample();
    const engine = await ContextEngine.open(root, { lockTimeoutMs: 50 });
    const store = join(root, '.merkle');
    const lock = tryLock(join(store, 'lock')) as FileLock;
    try {
      const before = statSync(store).mtimeMs;
      expect(await engine.scan()).toMatchObject({ changed: false, hashed: 0, changedPaths: [] });
      expect(statSync(store).mtimeMs).toBe(before); // no lock file made and removed, nothing written
      writeFileSync(join(root, 'README.md'), 'changed while another writer holds the lock\n');
      await expect(engine.scan()).rejects.toMatchObject({ code: 'LOCK_TIMEOUT' });
    } finally {
      lock.release();
    }
    expect((await engine.scan()).changedPaths).toEqual(['', 'README.md']);
  });

  // A workspace whose entries fell in the racy window of its tree (changed in the tick the scan that wrote it began)
  // is read again by the next scan, which finds it unchanged: that scan records itself, so the one after it is the
  // quick, lockless check again. Before, the window stayed where it was, and every scan read the workspace again.
  it.each([
    { racy: 'every directory and file', dirsAgo: 100 },
    { racy: 'files only (the quick check hands them to the locked scan)', dirsAgo: 110 },
  ])('a scan that re-reads racily clean entries ($racy) records it: the next scan needs no lock and reads nothing', async ({ dirsAgo }) => {
    const root = tempDir();
    writeTree(root, { 'a.txt': 'a\n', 'src/b.ts': 'b\n', 'src/deep/c.ts': 'c\n' });
    settle(root, 100);
    // Every time below is counted from the second settle() dated the files at (read back, so that a second
    // boundary passing between two readings of the clock cannot move one of them).
    const filesAt = Math.floor(statSync(join(root, 'a.txt')).mtimeMs / 1000);
    const at = filesAt + 100 - dirsAgo;
    for (const dir of ['', 'src', 'src/deep']) utimesSync(join(root, dir), at, at);
    // The first scan as if begun in the tick of the files' last change (100 s ago): they are racily clean.
    const scanner = await ContextEngine.open(root);
    const first = await atTime(filesAt * 1000, () => scanner.scan());
    await scanner.close();
    // Another engine (its quick check reads the stored tree, which the first engine holds only as it built it).
    const engine = await ContextEngine.open(root, { lockTimeoutMs: 50 });
    const again = await engine.scan();
    expect(again).toMatchObject({ root: first.root, changed: false, changedPaths: [], hashed: 3 });
    const lock = tryLock(join(root, '.merkle', 'lock')) as FileLock;
    try {
      expect(await engine.scan()).toMatchObject({ root: first.root, changed: false, hashed: 0 });
    } finally {
      lock.release();
    }
    expect((await engine.validate()).ok).toBe(true);
    await engine.close();
  });

  it('a file whose mtime is in the future stays racy, and a scan that re-reads it unchanged writes nothing', async () => {
    const root = tempDir();
    writeTree(root, { 'a.txt': 'a\n', 'later.txt': 'from a clock ahead\n' });
    settle(root, 100);
    const ahead = Math.floor(Date.now() / 1000) + 3600;
    utimesSync(join(root, 'later.txt'), ahead, ahead);
    const engine = await ContextEngine.open(root);
    const first = await engine.scan();
    // The first scan wrote the tree file with its empty journal; the scans after it write neither.
    const journal = join(root, '.merkle', 'tree.journal');
    const written = readFileSync(journal);
    const store = snapshotStore(root);
    for (let i = 0; i < 3; i++) {
      expect(await engine.scan()).toMatchObject({ root: first.root, changed: false, hashed: 1 });
      expect(readFileSync(journal).equals(written)).toBe(true);
      expect(snapshotStore(root)).toEqual(store);
    }
    await engine.close();
  });

  it('racily clean entries changed within two seconds before the scan are re-read but not recorded yet', async () => {
    // Recorded, they would be trusted from then on, though a change made in the same timestamp tick after this scan
    // read them (FAT's tick is 2 s) could keep their mtime.
    const root = tempDir();
    writeTree(root, { 'a.txt': 'a\n', 'src/b.ts': 'b\n' });
    settle(root, 100);
    const engine = await ContextEngine.open(root);
    const first = await engine.scan();
    // Changed at the start of an even second (10 s ago), and scanned half a second later: in that scan's racy window.
    const recent = Math.floor(Date.now() / 2000) * 2 - 10;
    for (const path of ['', 'src', 'a.txt', 'src/b.ts']) utimesSync(join(root, path), recent, recent);
    const later = recent * 1000 + 500;
    await atTime(later, () => engine.scan()); // the stat changed: journaled as a change (the records take the new mtimes)
    const journal = join(root, '.merkle', 'tree.journal');
    const size = statSync(journal).size;
    expect(await atTime(later, () => engine.scan())).toMatchObject({ root: first.root, changed: false, hashed: 2 });
    expect(statSync(journal).size).toBe(size);
    await engine.close();
  });
});

