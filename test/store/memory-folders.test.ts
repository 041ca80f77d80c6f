/**
 * The memory store's folders (`memory`, `memory/shared`, `items`, `index`) must be real directories: one that is a
 * symbolic link to a folder outside the data directory is not read, written or deleted through (a MemoryFolderError
 * naming it, as RunFolderError for a run), and one replaced by a file is named as such, not a raw errno message.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemoryFolderError, MemoryStore } from '../../src/store/index.js';
import { makeTempDir } from '../support/temp.js';

async function seeded(): Promise<{ dataDir: string; outside: string; items: string; index: string }> {
  const dataDir = makeTempDir('memory-folders-', 'test');
  const outside = makeTempDir('memory-outside-', 'test');
  const s = new MemoryStore({ dataDir });
  await s.write({ id: 'a', content: 'apple one' });
  await s.write({ id: 'b', content: 'apple two' });
  await s.close();
  const root = join(dataDir, 'memory', 'shared');
  return { dataDir, outside, items: join(root, 'items'), index: join(root, 'index') };
}

/** Moves `dir`'s files into `outside` and puts a symlink to `outside` in its place. */
function linkOut(dir: string, outside: string): void {
  for (const f of readdirSync(dir)) renameSync(join(dir, f), join(outside, f));
  rmSync(dir, { recursive: true });
  symlinkSync(outside, dir);
}

describe('memory folders that are not real directories', () => {
  it('a write through items/ replaced by a symlink is refused, and nothing is created outside the data directory', async () => {
    const { dataDir, outside, items } = await seeded();
    linkOut(items, outside);
    const s = new MemoryStore({ dataDir, lockTimeoutMs: 1000 });
    await expect(s.write({ id: 'c', content: 'apple three' })).rejects.toThrow(/items.*(symbolic link|not a directory)/);
    await s.close();
    expect(existsSync(join(outside, 'c.json'))).toBe(false);
  });

  it('a delete through items/ replaced by a symlink removes no file outside the data directory', async () => {
    const { dataDir, outside, items } = await seeded();
    linkOut(items, outside);
    const s = new MemoryStore({ dataDir, lockTimeoutMs: 1000 });
    await s.delete('a').catch(() => undefined);
    await s.close();
    expect(existsSync(join(outside, 'a.json'))).toBe(true);
  });

  it('a write through index/ replaced by a symlink is refused, and the lock and index are not written outside', async () => {
    const { dataDir, outside, index } = await seeded();
    linkOut(index, outside);
    const before = readdirSync(outside).sort();
    const s = new MemoryStore({ dataDir, lockTimeoutMs: 1000 });
    await expect(s.write({ id: 'c', content: 'apple three' })).rejects.toThrow(/index.*(symbolic link|not a directory)/);
    await s.close();
    expect(readdirSync(outside).sort()).toEqual(before);
  });

  it('index/ replaced by a regular file: the error says what is there, not a raw EEXIST from mkdir', async () => {
    const { dataDir, index } = await seeded();
    rmSync(index, { recursive: true });
    writeFileSync(index, 'x');
    const s = new MemoryStore({ dataDir, lockTimeoutMs: 1000 });
    const error = await s.write({ id: 'c', content: 'apple three' }).then(() => undefined, (e: Error) => e);
    await s.close();
    expect(error?.message).toMatch(/index is a regular file, not a directory/);
    expect(error?.message).not.toMatch(/EEXIST|ENOTDIR/);
  });

  it('the whole memory folder a symbolic link: a search and a write are refused before anything is read or written', async () => {
    const { dataDir, outside } = await seeded();
    const memory = join(dataDir, 'memory');
    renameSync(memory, join(outside, 'memory'));
    symlinkSync(join(outside, 'memory'), memory);
    const s = new MemoryStore({ dataDir, lockTimeoutMs: 1000 });
    await expect(s.search('apple', 5)).rejects.toBeInstanceOf(MemoryFolderError);
    await expect(s.write({ id: 'c', content: 'apple three' })).rejects.toThrow(/memory is a symbolic link to .*not a directory/);
    await s.close();
    expect(existsSync(join(outside, 'memory', 'shared', 'items', 'c.json'))).toBe(false);
  });

  it('items/ replaced by a regular file: search says what is there, not a raw ENOTDIR from scandir', async () => {
    const { dataDir, items } = await seeded();
    rmSync(items, { recursive: true });
    mkdirSync(join(dataDir, 'x'));
    writeFileSync(items, 'x');
    const s = new MemoryStore({ dataDir, lockTimeoutMs: 1000 });
    const error = await s.search('apple', 5).then(() => undefined, (e: Error) => e);
    await s.close();
    expect(error?.message).toMatch(/items is a regular file, not a directory/);
    expect(error?.message).not.toMatch(/ENOTDIR/);
  });
});
