import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireLock } from '../../src/context/lock.js';
import { openSample, tempDir } from './helpers.js';
import { ContextEngine } from '../../src/context/index.js';

describe('workspace lock', () => {
  it('serializes holders and releases only its own lock file', async () => {
    const file = join(tempDir(), 'lock');
    const release = await acquireLock(file);
    const order: string[] = [];
    const second = acquireLock(file, { timeoutMs: 2000 }).then((r) => {
      order.push('second');
      r();
    });
    await new Promise((r) => setTimeout(r, 30));
    order.push('first releases');
    release();
    await second;
    expect(order).toEqual(['first releases', 'second']);
    expect(existsSync(file)).toBe(false);
  });

  it('recovers a lock left by a dead process and times out on a live holder with a clear error', async () => {
    const file = join(tempDir(), 'lock');
    writeFileSync(file, JSON.stringify({ pid: 2 ** 22 + 12345, host: hostname(), time: 'then', token: 'x' }));
    const release = await acquireLock(file, { timeoutMs: 500 });
    await expect(acquireLock(file, { timeoutMs: 50 })).rejects.toMatchObject({
      code: 'LOCK_TIMEOUT',
      message: expect.stringContaining(`pid ${process.pid}`),
    });
    release();
  });

  it('processes racing to recover a stale lock take it one at a time', async () => {
    const dir = tempDir();
    const file = join(dir, 'lock');
    const log = join(dir, 'log');
    writeFileSync(file, JSON.stringify({ pid: 2 ** 22 + 4321, host: hostname(), time: 'then', token: 'stale' }));
    writeFileSync(log, '');
    const fixture = join(import.meta.dirname, 'fixtures', 'take-lock.ts');
    const codes = await Promise.all(
      Array.from({ length: 6 }, () => new Promise<number | null>((resolve) => {
        execFile(process.execPath, ['--import', 'tsx', fixture, file, log], (error) => resolve(error === null ? 0 : 1));
      })),
    );
    expect(codes).toEqual([0, 0, 0, 0, 0, 0]);
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(12);
    // Mutual exclusion: every enter is followed by the same process's exit before anyone else enters.
    for (let i = 0; i < lines.length; i += 2) {
      expect(lines[i]).toMatch(/^enter \d+$/);
      expect(lines[i + 1]).toBe(lines[i]!.replace('enter', 'exit'));
    }
    expect(existsSync(file)).toBe(false);
    expect(existsSync(`${file}.recover`)).toBe(false);
  }, 30_000);

  it('a writer blocked by the lock fails without touching the store', async () => {
    const { root } = await openSample();
    const engine = await ContextEngine.open(root, { lockTimeoutMs: 50 });
    const release = await acquireLock(join(root, '.merkle', 'lock'));
    await expect(engine.putFrame('README.md', { type: 't', content: 'x' }, 'w')).rejects.toMatchObject({ code: 'LOCK_TIMEOUT' });
    release();
    expect(await engine.listFrames('README.md')).toEqual([]);
  });
});
