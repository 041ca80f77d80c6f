/**
 * Audit s21b L1: index/ (keyword.json with its witness generation.json) put back to an older copy hid the items written
 * since from search, in silence (a search never reads an item the older index does not list). keyword.json now
 * records a fingerprint of items/ (memory-fingerprint.ts), compared when the index is loaded: an index that does not
 * know the folder as it is has the items written after it indexed, with a warning naming them, and only then.
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemoryStore, type MemoryItem } from '../../src/store/index.js';
import { tempDirAndWarnings } from './helpers.js';

const ctx = tempDirAndWarnings();

const open = (dataDir = ctx.tmp.dir): MemoryStore => new MemoryStore({ dataDir, durability: 'never' });
const ids = (items: MemoryItem[]): string[] => items.map((i) => i.id);
const OLD: MemoryItem = { id: 'old', content: 'harbour tide', createdAt: 1 };
const NEW: MemoryItem = { id: 'new', content: 'lighthouse keeper', createdAt: 2 };

/** Writes `first`, keeps copies of keyword.json and generation.json, runs `then`, puts both copies back. */
async function indexPutBack(first: MemoryItem[], then: (store: MemoryStore) => Promise<unknown>): Promise<MemoryStore> {
  const writer = open();
  await writer.writeMany(first);
  const witness = join(writer.paths.indexDir, 'generation.json');
  const copies = [readFileSync(writer.paths.keywordIndex), readFileSync(witness)] as const;
  // Apart in time from the index's write, as a restore from a backup is: the folder's time tells a rewrite in place.
  await new Promise((resolve) => setTimeout(resolve, 30));
  await then(writer);
  await writer.close();
  writeFileSync(writer.paths.keywordIndex, copies[0]);
  writeFileSync(witness, copies[1]);
  return open();
}

describe('index/ put back to an older copy', () => {
  it('an item written since is found by search, with a warning naming the index and the item', async () => {
    const store = await indexPutBack([OLD], (s) => s.write(NEW));
    expect(ids(await store.search('lighthouse', 5))).toEqual(['new']);
    expect(ids(await store.search('harbour', 5))).toEqual(['old']);
    expect(ctx.warnings).toEqual([
      `MemoryStoreIndex: memory index ${store.paths.keywordIndex} is older than the items in ${store.paths.itemsDir}: it did not know 1 item(s) written after it (new), now indexed (an older copy of the index put back?)`,
    ]);
    // Indexed and stored: the next store finds it with no further word.
    expect(ids(await open().search('lighthouse', 5))).toEqual(['new']);
    expect(ctx.warnings).toHaveLength(1);
  });

  it('an item rewritten since is found by its new words, not its old ones', async () => {
    const store = await indexPutBack([OLD], (s) => s.write({ ...OLD, content: 'lighthouse keeper' }));
    expect(ids(await store.search('lighthouse', 5))).toEqual(['old']);
    expect(ids(await store.search('harbour', 5))).toEqual([]);
    expect(ctx.warnings).toEqual([expect.stringContaining('it did not know 1 item(s) written after it (old), now indexed')]);
  });

  it('an item deleted since is not served, and said missing as before (until deleted by id)', async () => {
    const store = await indexPutBack([OLD, NEW], (s) => s.delete('new'));
    expect(ids(await store.search('lighthouse harbour', 5))).toEqual(['old']);
    expect(ctx.warnings).toEqual([expect.stringContaining(`memory item ${join(store.paths.itemsDir, 'new.json')} is missing, though the memory index`)]);
  });
});

describe('the fingerprint costs no read of the items when nothing changed', () => {
  it('a new store searching an untouched memory reads only the items it serves', async () => {
    const writer = open();
    await writer.writeMany([OLD, NEW]);
    await writer.close();
    // Damage in place (the folder's names and time unchanged) that only a read of that item would see.
    const path = join(writer.paths.itemsDir, 'new.json');
    writeFileSync(path, readFileSync(path, 'utf8').replace('lighthouse', 'lightHOUSE'));
    expect(ids(await open().search('harbour', 5))).toEqual(['old']);
    expect(ctx.warnings).toEqual([]);
  });

  it('a memory copied elsewhere (another folder identity) is checked once, in silence, when it matches', async () => {
    const writer = open();
    await writer.writeMany([OLD, NEW]);
    await writer.close();
    const copy = join(ctx.tmp.dir, 'copy');
    cpSync(join(ctx.tmp.dir, 'memory'), join(copy, 'memory'), { recursive: true });
    expect(ids(await open(copy).search('lighthouse harbour', 5)).sort()).toEqual(['new', 'old']);
    expect(ctx.warnings).toEqual([]);
  });
});
