/** Issue 13: one damaged memory item never makes every search fail. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryStore, MemoryStoreError } from '../../src/store/index.js';
import { tempDir } from './helpers.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => (tmp = tempDir()));
afterEach(() => {
  vi.restoreAllMocks();
  tmp.cleanup();
});

async function seeded(): Promise<MemoryStore> {
  const store = new MemoryStore({ dataDir: tmp.dir, durability: 'never' });
  await store.writeMany([
    { id: 'best', content: 'harbour tides tides tides', createdAt: 1 },
    { id: 'next', content: 'harbour tides tides', createdAt: 1 },
    { id: 'last', content: 'harbour tides', createdAt: 1 },
  ]);
  await store.close();
  return new MemoryStore({ dataDir: tmp.dir, durability: 'never' });
}

describe('a damaged memory item', () => {
  it('is skipped by search with a warning naming its file, and the next best item takes its place', async () => {
    const store = await seeded();
    const path = join(store.paths.itemsDir, 'best.json');
    writeFileSync(path, '{"id":"best","content":');
    const warnings = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    expect((await store.search('tides', 2)).map((i) => i.id)).toEqual(['next', 'last']);
    expect(warnings).toHaveBeenCalledWith(expect.stringContaining(`corrupt memory item ${path}: not valid JSON`), 'MemoryStoreCorruptItem');
    expect((await store.search('tides', 5)).map((i) => i.id)).toEqual(['next', 'last']);
    // Asked for by id, it is an error naming the file.
    await expect(store.get('best')).rejects.toThrow(`corrupt memory item ${path}`);
  });

  it('is skipped when the index is rebuilt from the items, and search still answers', async () => {
    const store = await seeded();
    writeFileSync(join(store.paths.itemsDir, 'next.json'), JSON.stringify({ id: 'next', content: 42 }));
    writeFileSync(store.paths.keywordIndex, 'garbage');
    const warnings = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    expect((await store.search('tides', 5)).map((i) => i.id)).toEqual(['best', 'last']);
    expect(warnings.mock.calls.map((c) => String(c[0]))).toContainEqual(expect.stringMatching(/corrupt memory item .*next\.json: content/));
  });

  it('a link or a FIFO in an item\'s place is a damaged item: skipped by search with a warning naming it, never read through', async () => {
    const store = await seeded();
    const best = join(store.paths.itemsDir, 'best.json');
    const next = join(store.paths.itemsDir, 'next.json');
    // The item's own file moved out of the memory and linked back: a reader would find it intact through the link.
    renameSync(best, join(tmp.dir, 'elsewhere.json'));
    symlinkSync(join(tmp.dir, 'elsewhere.json'), best);
    rmSync(next);
    execFileSync('mkfifo', [next]);
    const warnings = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    expect((await store.search('tides', 5)).map((i) => i.id)).toEqual(['last']);
    const said = warnings.mock.calls.map((c) => String(c[0]));
    expect(said).toContainEqual(expect.stringContaining(`corrupt memory item ${best}: it is a symbolic link, not a regular file`));
    expect(said).toContainEqual(expect.stringContaining(`corrupt memory item ${next}: it is a FIFO (named pipe), not a regular file`));
    await expect(store.get('best')).rejects.toThrow(`corrupt memory item ${best}`);
  });

  it('a link in place of the keyword index or its witness is a damaged index: rebuilt from the items with a warning, never read through', async () => {
    const store = await seeded();
    const index = store.paths.keywordIndex;
    renameSync(index, join(tmp.dir, 'index-elsewhere.json'));
    symlinkSync(join(tmp.dir, 'index-elsewhere.json'), index);
    const witness = join(store.paths.indexDir, 'generation.json');
    renameSync(witness, join(tmp.dir, 'witness-elsewhere.json'));
    symlinkSync(join(tmp.dir, 'witness-elsewhere.json'), witness);
    const warnings = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    expect((await store.search('tides', 5)).map((i) => i.id)).toEqual(['best', 'next', 'last']);
    expect(warnings.mock.calls.map((c) => String(c[0]))).toContainEqual(expect.stringContaining(`rebuilding corrupt memory index ${index}: ${index} is a symbolic link, not a regular file`));
  });

  it('a folder in an item\'s place: delete refuses it before anything changes, naming it, and the memory goes on', async () => {
    const store = await seeded();
    const folder = join(store.paths.itemsDir, 'best.json');
    rmSync(folder);
    mkdirSync(folder);
    vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    await expect(store.delete('best')).rejects.toThrow(`${folder} is a folder, not a memory item: it is not removed`);
    await expect(store.delete('best')).rejects.toBeInstanceOf(MemoryStoreError);
    // Nothing half done: the next operations answer as before.
    expect(await store.delete('next')).toBe(true);
    expect((await store.search('tides', 5)).map((i) => i.id)).toEqual(['last']);
  });

  it.each(['keyword.json', 'generation.json', 'pending.json'])(
    'a folder in place of index/%s: reads answer from the rebuilt index with a warning; writes are refused before anything changes, naming it',
    async (name) => {
      const store = await seeded();
      const folder = join(store.paths.indexDir, name);
      rmSync(folder, { force: true });
      mkdirSync(folder);
      writeFileSync(join(folder, 'keep.txt'), 'not the store\'s');
      const warnings = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
      const itemsBefore = readdirSync(store.paths.itemsDir).sort();
      // Reads: the items are all there, from an index kept in memory when it cannot be stored.
      expect((await store.get('best'))?.content).toBe('harbour tides tides tides');
      expect((await store.search('tides', 5)).map((i) => i.id)).toEqual(['best', 'next', 'last']);
      if (name === 'keyword.json') {
        expect(warnings.mock.calls.map((c) => String(c[0]))).toContainEqual(expect.stringContaining(`could not store the rebuilt memory index ${folder}`));
      }
      // Writes: a clear error naming the folder, and nothing changed.
      for (const change of [() => store.write({ id: 'more', content: 'harbour' }), () => store.delete('best'), () => store.deleteWhere(() => true)]) {
        const error = await change().then(() => undefined, (e: unknown) => e);
        expect(error).toBeInstanceOf(MemoryStoreError);
        expect(String((error as Error).message)).toContain(`${folder} is a folder, where the memory's index file goes: nothing was changed`);
      }
      expect(readdirSync(store.paths.itemsDir).sort()).toEqual(itemsBefore);
      expect(readdirSync(folder)).toEqual(['keep.txt']);
      // Moved away, the memory goes on.
      rmSync(folder, { recursive: true });
      await store.write({ id: 'more', content: 'harbour' });
      expect((await new MemoryStore({ dataDir: tmp.dir, durability: 'never' }).search('harbour', 5)).map((i) => i.id)).toContain('more');
    },
  );
});
