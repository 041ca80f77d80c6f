/** Issue 13: one damaged memory item never makes every search fail. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryStore } from '../../src/store/index.js';
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
});
