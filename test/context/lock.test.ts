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
});
