/**
 * Audit finding 6: damage to long-term memory is reported, never answered in silence. Item files and keyword.json are
 * sealed with their checksum; an item must hold the id its file is named after; an item the index lists whose file
 * is gone is reported. Stores written before seals (plain JSON) still read, and are sealed as they are used.
 */
import { copyFileSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KeywordIndex, MemoryStore, type MemoryItem } from '../../src/store/index.js';
import { tokensOf } from '../../src/store/memory-store.js';
import { tempDirAndWarnings } from './helpers.js';

const ctx = tempDirAndWarnings();

const ITEMS: MemoryItem[] = [
  { id: 'tides', content: 'tides rise twice daily near the coast', createdAt: 1 },
  { id: 'moon', content: 'ocean tides follow the moon', createdAt: 2 },
  { id: 'weather', content: 'mountain weather changes fast', createdAt: 3 },
];

const open = (): MemoryStore => new MemoryStore({ dataDir: ctx.tmp.dir, durability: 'never' });

async function seeded(): Promise<MemoryStore> {
  const writer = open();
  await writer.writeMany(ITEMS);
  await writer.close();
  return open();
}

const ids = (items: MemoryItem[]): string[] => items.map((i) => i.id);

describe('memory damage is reported', () => {
  it('an item file edited: skipped by search, an error from get, both naming the file', async () => {
    const store = await seeded();
    const path = join(store.paths.itemsDir, 'moon.json');
    writeFileSync(path, readFileSync(path, 'utf8').replace('the moon', 'the sun'));
    expect(ids(await store.search('tides', 5))).toEqual(['tides']);
    expect(ctx.warnings).toEqual([`MemoryStoreCorruptItem: skipped corrupt memory item ${path}: checksum mismatch`]);
    await expect(store.get('moon')).rejects.toThrow(`corrupt memory item ${path}: checksum mismatch`);
    expect(await store.get('tides')).toEqual(ITEMS[0]);
  });

  it("another item's file copied over an item: the stored id must be the file's", async () => {
    const store = await seeded();
    const path = join(store.paths.itemsDir, 'tides.json');
    copyFileSync(join(store.paths.itemsDir, 'weather.json'), path);
    expect(ids(await store.search('tides', 5))).toEqual(['moon']);
    expect(ctx.warnings).toEqual([`MemoryStoreCorruptItem: skipped corrupt memory item ${path}: it holds item 'weather', not 'tides' (another item's file copied over it?)`]);
    await expect(store.get('tides')).rejects.toThrow(`corrupt memory item ${path}: it holds item 'weather'`);
    expect(await store.get('weather')).toEqual(ITEMS[2]);
  });

  it('an item file deleted while the index lists it: search, get and listAll warn naming it', async () => {
    const store = await seeded();
    const path = join(store.paths.itemsDir, 'moon.json');
    unlinkSync(path);
    const lost = `MemoryStoreMissingItem: memory item ${path} is missing, though the memory index ${store.paths.keywordIndex} lists it (deleted outside the store?); delete('moon') drops it from the index`;
    expect(ids(await store.search('tides', 5))).toEqual(['tides']);
    expect(ctx.warnings).toEqual([lost]);
    expect(await store.get('moon')).toBeNull();
    expect(ctx.warnings).toEqual([lost, lost]);
    expect(ids((await store.listAll()).items)).toEqual(['tides', 'weather']);
    expect(ctx.warnings).toEqual([lost, lost, lost]);
    // Deleting it by id drops it from the index: no more warnings.
    expect(await store.delete('moon')).toBe(false);
    expect(await store.get('moon')).toBeNull();
    expect(ids(await open().search('tides', 5))).toEqual(['tides']);
    expect(ctx.warnings).toHaveLength(3);
  });

  it('listAll warns only about the lost items of its page', async () => {
    const store = await seeded();
    unlinkSync(join(store.paths.itemsDir, 'weather.json'));
    expect(await store.listAll({ limit: 1 })).toEqual({ items: [ITEMS[1]], next: 'moon' });
    expect(ctx.warnings).toEqual([]);
    expect(await store.listAll({ after: 'moon' })).toEqual({ items: [ITEMS[0]] });
    expect(ctx.warnings).toEqual([expect.stringContaining(`memory item ${join(store.paths.itemsDir, 'weather.json')} is missing`)]);
  });

  it('keyword.json edited (a term renamed): rebuilt from the items with a warning naming it, the answer unchanged', async () => {
    const store = await seeded();
    const before = await store.searchScored('tides', 5);
    const path = store.paths.keywordIndex;
    writeFileSync(path, readFileSync(path, 'utf8').replaceAll('"tides"', '"tidez"'));
    const fresh = open();
    expect(await fresh.searchScored('tides', 5)).toEqual(before);
    expect(ctx.warnings).toEqual([`MemoryStoreIndex: rebuilding corrupt memory index ${path}: checksum mismatch`]);
    // The rebuilt index is sealed again: the next reader trusts it.
    expect(await open().searchScored('tides', 5)).toEqual(before);
    expect(ctx.warnings).toHaveLength(1);
  });

  it('no warning and the same answers when nothing is damaged', async () => {
    const store = await seeded();
    expect(ids(await store.search('tides', 5))).toEqual(['moon', 'tides']);
    expect(ids((await store.listAll()).items)).toEqual(['moon', 'tides', 'weather']);
    expect(await store.get('nope')).toBeNull();
    expect(ctx.warnings).toEqual([]);
  });

  it('an item deleted by another store meanwhile is not reported', async () => {
    const store = await seeded();
    await store.search('tides', 5);
    await open().delete('moon');
    expect(ids(await store.search('tides', 5))).toEqual(['tides']);
    expect(await store.get('moon')).toBeNull();
    expect(ctx.warnings).toEqual([]);
  });
});

describe('a memory written before seals (plain JSON items and index)', () => {
  /** Writes `items` and their index the way the previous version did. */
  function writeLegacy(store: MemoryStore, items: MemoryItem[]): void {
    const index = new KeywordIndex();
    for (const item of items) {
      writeFileSync(join(store.paths.itemsDir, `${item.id}.json`), JSON.stringify(item));
      index.set(item.id, tokensOf(item));
    }
    writeFileSync(store.paths.keywordIndex, JSON.stringify(index.toJSON()));
    rmSync(join(store.paths.indexDir, 'generation.json'));
  }

  async function legacy(): Promise<MemoryStore> {
    const store = await seeded();
    writeLegacy(store, ITEMS);
    return open();
  }

  it('reads as it is, without warnings, and is sealed at its first use', async () => {
    const store = await legacy();
    const itemPath = join(store.paths.itemsDir, 'moon.json');
    expect(JSON.parse(readFileSync(itemPath, 'utf8'))).toEqual(ITEMS[1]);
    expect(ids(await store.search('tides', 5))).toEqual(['moon', 'tides']);
    expect(await store.get('weather')).toEqual(ITEMS[2]);
    expect(ctx.warnings).toEqual([]);
    for (const file of [itemPath, store.paths.keywordIndex]) expect(Object.keys(JSON.parse(readFileSync(file, 'utf8')))).toEqual(['checksum', 'data']);
    expect(JSON.parse(readFileSync(itemPath, 'utf8')).data).toEqual({ ...ITEMS[1], gen: 1 });
    // Sealed now: an edit is caught.
    writeFileSync(itemPath, readFileSync(itemPath, 'utf8').replace('moon', 'sun'));
    expect(ids(await open().search('tides', 5))).toEqual(['tides']);
    expect(ctx.warnings).toEqual([expect.stringContaining(`corrupt memory item ${itemPath}: checksum mismatch`)]);
  });

  it('an item edited before the upgrade: the index written with it tells, naming both files', async () => {
    const store = await seeded();
    writeLegacy(store, ITEMS);
    const path = join(store.paths.itemsDir, 'moon.json');
    writeFileSync(path, JSON.stringify({ ...ITEMS[1], content: 'ocean waves follow the wind' }));
    expect(ids(await open().search('tides', 5))).toEqual(['tides']);
    expect(ctx.warnings).toEqual([
      `MemoryStoreMismatch: memory item ${path} does not match the memory index ${store.paths.keywordIndex} written by an earlier version: one of them was edited or put back; the index is rebuilt from the items`,
    ]);
  });

  it('its index edited (a term renamed), an item deleted or swapped: each is reported', async () => {
    const store = await seeded();
    writeLegacy(store, ITEMS);
    writeFileSync(store.paths.keywordIndex, readFileSync(store.paths.keywordIndex, 'utf8').replace('"mountain"', '"mountaix"'));
    unlinkSync(join(store.paths.itemsDir, 'moon.json'));
    copyFileSync(join(store.paths.itemsDir, 'weather.json'), join(store.paths.itemsDir, 'tides.json'));
    const fresh = open();
    expect(ids(await fresh.search('mountain tides', 5))).toEqual(['weather']);
    expect(ctx.warnings.sort()).toEqual([
      expect.stringMatching(/^MemoryStoreCorruptItem: skipped corrupt memory item .*tides\.json: it holds item 'weather'/),
      expect.stringMatching(/^MemoryStoreMismatch: memory item .*weather\.json does not match the memory index/),
      expect.stringMatching(/^MemoryStoreMissingItem: memory item .*moon\.json is missing/),
    ]);
  });

  it('items a crash left pending are not taken for edits', async () => {
    const store = await seeded();
    writeLegacy(store, ITEMS);
    writeFileSync(join(store.paths.indexDir, 'pending.json'), JSON.stringify({ ids: ['moon', 'weather'] }));
    writeFileSync(join(store.paths.itemsDir, 'moon.json'), JSON.stringify({ ...ITEMS[1], content: 'the moon pulls the sea' }));
    unlinkSync(join(store.paths.itemsDir, 'weather.json'));
    expect(ids(await open().search('moon tides', 5))).toEqual(['moon', 'tides']);
    expect(ctx.warnings).toEqual([]);
  });

  it('once sealed, a plain item written later is damage (finding 6): skipped, never sealed', async () => {
    const store = await seeded();
    const path = join(store.paths.itemsDir, 'moon.json');
    writeFileSync(path, JSON.stringify(ITEMS[1]));
    const reader = open();
    await expect(reader.get('moon')).rejects.toThrow(`corrupt memory item ${path}: not sealed, though the memory is`);
    await reader.write({ id: 'other', content: 'something else', createdAt: 4 });
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual(ITEMS[1]);
    expect(ids(await reader.search('tides', 5))).toEqual(['tides']);
    expect(ctx.warnings).toEqual([expect.stringContaining(`skipped corrupt memory item ${path}: not sealed`)]);
  });
});
