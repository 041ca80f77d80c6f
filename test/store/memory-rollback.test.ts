/**
 * Audit findings 5 and 6: a memory file put back to an older sealed copy of itself (an item, or keyword.json), or a
 * sealed item replaced by plain JSON, is damage: reported with a warning naming the file, never served in silence.
 * Items and keyword.json carry a store-wide generation, and keyword.json each item's checksum; generation.json
 * witnesses the generation the last index reached (see memory-store.ts).
 */
import { copyFileSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sharedHashBackend } from '../../src/hash/blake3.js';
import { openSealed, sealJson } from '../../src/hash/sealed.js';
import { itemsFingerprint } from '../../src/store/memory-fingerprint.js';
import { MemoryStore, type MemoryItem } from '../../src/store/index.js';
import { tempDirAndWarnings } from './helpers.js';

const ctx = tempDirAndWarnings();

const open = (): MemoryStore => new MemoryStore({ dataDir: ctx.tmp.dir, durability: 'never' });
const ids = (items: MemoryItem[]): string[] => items.map((i) => i.id);
const ALPHA: MemoryItem = { id: 'm1', content: 'alpha one', createdAt: 1 };
const BETA: MemoryItem = { id: 'm1', content: 'beta two', createdAt: 2 };
const OTHER: MemoryItem = { id: 'm2', content: 'other words', createdAt: 3 };

/** Writes `first`, keeps a copy of `file` (relative to the memory's paths), writes `then`, puts the copy back. */
async function rolledBack(file: (store: MemoryStore) => string, first: MemoryItem[], then: (store: MemoryStore) => Promise<unknown>): Promise<MemoryStore> {
  const writer = open();
  await writer.writeMany(first);
  const path = file(writer);
  copyFileSync(path, `${ctx.tmp.dir}/copy`);
  await then(writer);
  await writer.close();
  copyFileSync(`${ctx.tmp.dir}/copy`, path);
  return open();
}

const itemFile = (id: string) => (store: MemoryStore) => join(store.paths.itemsDir, `${id}.json`);
const indexFile = (store: MemoryStore) => store.paths.keywordIndex;

describe('an item file put back to an older sealed copy', () => {
  it('is skipped by search and an error from get, naming the file; the other items answer', async () => {
    const store = await rolledBack(itemFile('m1'), [ALPHA, OTHER], (s) => s.write(BETA));
    const path = join(store.paths.itemsDir, 'm1.json');
    const stale = `memory item ${path}: it is not the version the memory index ${store.paths.keywordIndex} records (an older copy put back?)`;
    await expect(store.get('m1')).rejects.toThrow(stale);
    expect(ids(await store.search('beta', 5))).toEqual([]);
    expect(ids(await store.search('alpha', 5))).toEqual([]);
    expect(await store.search('other', 5)).toEqual([OTHER]);
    expect(ctx.warnings).toEqual([`MemoryStoreCorruptItem: skipped ${stale}`]);
    expect(ids((await store.listAll()).items)).toEqual(['m2']);
    expect(ctx.warnings).toHaveLength(2);
  });

  it('a deleted item put back is not resurrected', async () => {
    const store = await rolledBack(itemFile('m1'), [ALPHA, OTHER], (s) => s.delete('m1'));
    const path = join(store.paths.itemsDir, 'm1.json');
    await expect(store.get('m1')).rejects.toThrow(`memory item ${path}: it is not the version`);
    expect(ids((await store.listAll()).items)).toEqual(['m2']);
    expect(ctx.warnings).toEqual([expect.stringContaining(`skipped memory item ${path}: it is not the version`)]);
  });

  it('stays reported when an older keyword.json is rebuilt from the items, and a write of the item repairs it', async () => {
    const writer = open();
    await writer.writeMany([ALPHA, OTHER]);
    const item = join(writer.paths.itemsDir, 'm1.json');
    const oldItem = readFileSync(item);
    await writer.write(BETA);
    const oldIndex = readFileSync(writer.paths.keywordIndex);
    await writer.write({ ...OTHER, content: 'other words again' });
    writeFileSync(item, oldItem);
    writeFileSync(writer.paths.keywordIndex, oldIndex);
    const store = open();
    expect(ids(await store.search('alpha beta other', 5))).toEqual(['m2']);
    expect(ctx.warnings).toEqual([
      expect.stringContaining(`memory index ${store.paths.keywordIndex} is older than the memory`),
      expect.stringContaining(`skipped memory item ${item}: it is not the version`),
    ]);
    await store.write(BETA);
    expect(await open().search('beta', 5)).toEqual([BETA]);
    expect(ctx.warnings).toHaveLength(2);
  });
});

describe('keyword.json put back to an older sealed copy', () => {
  it('is rebuilt from the items with a warning naming it, and every search answers from the items', async () => {
    const store = await rolledBack(indexFile, [ALPHA, OTHER], (s) => s.write(BETA));
    expect(await store.search('beta', 5)).toEqual([BETA]);
    expect(ctx.warnings).toEqual([expect.stringMatching(/^MemoryStoreIndex: memory index .*keyword\.json is older than the memory \(generation 1, .*generation\.json says 2\)/)]);
    expect(ids(await store.search('alpha', 5))).toEqual([]);
    expect(await store.get('m1')).toEqual(BETA);
    // Rebuilt and sealed again: no more warnings.
    expect(await open().search('beta', 5)).toEqual([BETA]);
    expect(ctx.warnings).toHaveLength(1);
  });

  it('an item deleted since is not listed', async () => {
    const store = await rolledBack(indexFile, [ALPHA, OTHER], (s) => s.delete('m1'));
    expect(ids(await store.search('alpha other', 5))).toEqual(['m2']);
    expect(ctx.warnings).toEqual([expect.stringContaining(`memory index ${store.paths.keywordIndex} is older than the memory`)]);
  });

  it('together with generation.json: the folder of items tells at load, and the item written since is indexed', async () => {
    const writer = open();
    await writer.writeMany([ALPHA, OTHER]);
    const genPath = join(writer.paths.indexDir, 'generation.json');
    const [index, gen] = [readFileSync(writer.paths.keywordIndex), readFileSync(genPath)];
    await new Promise((resolve) => setTimeout(resolve, 30)); // another tick of the file system's clock
    await writer.write(BETA);
    writeFileSync(writer.paths.keywordIndex, index);
    writeFileSync(genPath, gen);
    const store = open();
    expect(await store.search('alpha', 5)).toEqual([]);
    expect(ctx.warnings).toEqual([
      `MemoryStoreIndex: memory index ${store.paths.keywordIndex} is older than the items in ${store.paths.itemsDir}: it did not know 1 item(s) written after it (m1), now indexed (an older copy of the index put back?)`,
    ]);
    expect(await store.search('beta', 5)).toEqual([BETA]);
    expect(ctx.warnings).toHaveLength(1);
  });

  it('together with generation.json, the folder unchanged to the index (a rewrite in the same clock tick): an item newer than the index tells, and the index is rebuilt', async () => {
    const writer = open();
    await writer.writeMany([ALPHA, OTHER]);
    const genPath = join(writer.paths.indexDir, 'generation.json');
    const [index, gen] = [readFileSync(writer.paths.keywordIndex, 'utf8'), readFileSync(genPath)];
    await writer.write(BETA);
    // The older index, as if its fingerprint of items/ were the folder's now.
    const backend = await sharedHashBackend();
    const opened = openSealed(index, backend);
    if (!opened.ok) throw new Error(opened.problem);
    const names = readdirSync(writer.paths.itemsDir).filter((n) => n.endsWith('.json'));
    writeFileSync(writer.paths.keywordIndex, sealJson(JSON.stringify({ ...(opened.data as object), items: itemsFingerprint(writer.paths.itemsDir, names, backend) }), backend));
    writeFileSync(genPath, gen);
    const store = open();
    expect(await store.search('alpha', 5)).toEqual([BETA]);
    expect(ctx.warnings).toEqual([
      `MemoryStoreIndex: memory index ${store.paths.keywordIndex} is older than memory item ${join(store.paths.itemsDir, 'm1.json')} (an older copy put back?); rebuilding it from the items`,
    ]);
    expect(await store.search('beta', 5)).toEqual([BETA]);
    expect(await store.search('alpha', 5)).toEqual([]);
    expect(ctx.warnings).toHaveLength(1);
  });
});

describe('a sealed item replaced by plain JSON', () => {
  it('is damage, not an item written before seals: skipped with a warning naming it, never sealed', async () => {
    const writer = open();
    await writer.writeMany([ALPHA, OTHER]);
    const path = join(writer.paths.itemsDir, 'm1.json');
    const plain = JSON.stringify({ id: 'm1', content: 'gamma three', createdAt: 5 });
    writeFileSync(path, plain);
    const store = open();
    const notSealed = `corrupt memory item ${path}: not sealed, though the memory is (plain JSON written over a sealed item?)`;
    await expect(store.get('m1')).rejects.toThrow(notSealed);
    expect(ids(await store.search('gamma alpha other', 5))).toEqual(['m2']);
    expect(ctx.warnings).toEqual([`MemoryStoreCorruptItem: skipped ${notSealed}`]);
    await store.write({ id: 'm3', content: 'more', createdAt: 6 });
    expect(readFileSync(path, 'utf8')).toBe(plain);
  });
});

describe('no false warnings', () => {
  it('two stores on one directory, writing, deleting and searching in turn', async () => {
    const a = open();
    const b = open();
    await a.write(ALPHA);
    expect(await b.search('alpha', 5)).toEqual([ALPHA]);
    await b.write(BETA);
    expect(await a.get('m1')).toEqual(BETA);
    expect(await a.search('beta', 5)).toEqual([BETA]);
    await a.delete('m1');
    await b.write(OTHER);
    expect(await b.get('m1')).toBeNull();
    expect(await a.search('other beta', 5)).toEqual([OTHER]);
    expect(await open().search('other', 5)).toEqual([OTHER]);
    expect(ctx.warnings).toEqual([]);
  });
});
