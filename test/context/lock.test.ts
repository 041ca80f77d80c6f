import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tryLock, type FileLock } from '../../src/fs/index.js';
import { ContextEngine } from '../../src/context/index.js';
import { openSample } from './helpers.js';

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
});
