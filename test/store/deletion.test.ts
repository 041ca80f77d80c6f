/** The stores' deletion and listing methods: deleteLatest, ProjectionStore.delete, MemoryStore.listAll and deleteWhere. */
import { existsSync, writeFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointStore, EventStore, MemoryStore, MemoryStoreError, ProjectionStore, memoryItemPath, type MemoryFilter, type MemoryItem } from '../../src/store/index.js';
import { makeEvent, tempDir } from './helpers.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const checkpoint = (step: number) => ({ v: 1 as const, step, createdAt: 1, position: ['a'], state: { step } });

describe('CheckpointStore.deleteLatest', () => {
  it('removes the latest checkpoint after the saves already called, keeps the historical ones, says whether there was one', async () => {
    const store = new CheckpointStore({ dataDir: tmp.dir, sessionKey: 's', runId: 'r' });
    expect(await store.deleteLatest()).toBe(false);
    await store.saveHistorical(checkpoint(1), 1);
    // Not awaited: the delete still comes after it, so the save does not bring the checkpoint back.
    void store.saveLatest(checkpoint(2));
    expect(await store.deleteLatest()).toBe(true);
    expect(await store.loadLatest()).toBeNull();
    expect(existsSync(store.paths.checkpointLatest)).toBe(false);
    expect(await store.loadHistorical(1)).toMatchObject({ step: 1 });
    expect(await store.deleteLatest()).toBe(false);
  });
});

describe('ProjectionStore.delete', () => {
  it('removes the stored projection; the next read rebuilds the same one from the log', async () => {
    const events = new EventStore({ dataDir: tmp.dir, sessionKey: 's', runId: 'r' });
    await events.appendBatch([makeEvent('r', 1, { type: 'run.started', payload: {} }), makeEvent('r', 2, { type: 'run.completed', payload: {} })]);
    await events.close();
    const store = new ProjectionStore({ dataDir: tmp.dir, sessionKey: 's' });
    const built = await store.generateRunMeta('r');
    expect(await store.delete('r')).toBe(true);
    expect(await store.loadRunMeta('r')).toBeNull();
    expect(await store.delete('r')).toBe(false);
    expect(await store.currentRunMeta('r')).toEqual(built);
    await expect(store.delete('../r')).rejects.toThrow(/invalid runId/);
  });
});

describe('MemoryStore.listAll', () => {
  it('pages through every item in id order, whatever the page size (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,6}$/), { minLength: 0, maxLength: 25 }), fc.integer({ min: 1, max: 7 }), async (ids, limit) => {
        const dir = tempDir();
        try {
          const store = new MemoryStore({ dataDir: dir.dir, durability: 'never' });
          await store.writeMany(ids.map((id) => ({ id, content: `item ${id}`, createdAt: 1 })));
          const seen: string[] = [];
          let after: string | undefined;
          for (let pages = 0; ; pages++) {
            const page = await store.listAll({ limit, after });
            expect(page.items.length).toBeLessThanOrEqual(limit);
            seen.push(...page.items.map((i) => i.id));
            if (page.next === undefined) break;
            after = page.next;
            expect(pages).toBeLessThan(ids.length + 1);
          }
          expect(seen).toEqual([...ids].sort());
          await store.close();
        } finally {
          dir.cleanup();
        }
      }),
      { numRuns: 25 },
    );
  });

  it('skips a damaged item with a warning naming it, and refuses a bad limit or cursor', async () => {
    const store = new MemoryStore({ dataDir: tmp.dir, durability: 'never' });
    await store.writeMany([{ id: 'a', content: 'x' }, { id: 'b', content: 'y' }]);
    writeFileSync(memoryItemPath(store.paths, 'a'), '{broken');
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    try {
      expect((await store.listAll()).items.map((i) => i.id)).toEqual(['b']);
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.join('\n')).toContain(memoryItemPath(store.paths, 'a'));
    await expect(store.listAll({ limit: 0 })).rejects.toThrow(MemoryStoreError);
    await expect(store.listAll({ after: '../x' })).rejects.toThrow(/invalid memory id/);
  });
});

describe('MemoryStore.deleteWhere', () => {
  const items: MemoryItem[] = [
    { id: 'old-a', content: 'tides and moon', keywords: ['sea'], metadata: { run: 'r1', kind: 'fact' }, createdAt: 100 },
    { id: 'old-b', content: 'boiling water', keywords: ['heat'], metadata: { run: 'r2', kind: 'fact' }, createdAt: 200 },
    { id: 'new-c', content: 'tides again', keywords: ['sea'], metadata: { run: 'r1', kind: 'note' }, createdAt: 900 },
  ];

  it('deletes the items matching every criterion, keeps the index in step, and a dry run deletes nothing', async () => {
    const store = new MemoryStore({ dataDir: tmp.dir, durability: 'never' });
    await store.writeMany(items);
    expect(await store.deleteWhere({ keyword: 'sea', createdBefore: 500 }, { dryRun: true })).toEqual(['old-a']);
    expect(await store.get('old-a')).not.toBeNull();
    expect(await store.deleteWhere({ metadata: { run: 'r1', kind: 'fact' } })).toEqual(['old-a']);
    expect((await store.search('tides', 5)).map((i) => i.id)).toEqual(['new-c']);
    expect(await store.deleteWhere({ createdBefore: new Date(1000) })).toEqual(['new-c', 'old-b']);
    expect((await store.listAll()).items).toEqual([]);
    expect((await store.search('boiling tides', 5))).toEqual([]);
    // A fresh store (index read from disk) agrees.
    expect(await new MemoryStore({ dataDir: tmp.dir }).search('tides', 5)).toEqual([]);
  });

  it('takes a predicate; refuses an empty filter (it would delete everything)', async () => {
    const store = new MemoryStore({ dataDir: tmp.dir, durability: 'never' });
    await store.writeMany(items);
    await expect(store.deleteWhere({})).rejects.toThrow(/needs at least one criterion/);
    expect(await store.deleteWhere((item) => item.content.includes('water'))).toEqual(['old-b']);
    expect(await store.deleteWhere({ ids: ['nope'] })).toEqual([]);
    expect((await store.listAll()).items.map((i) => i.id)).toEqual(['new-c', 'old-a']);
  });

  it('refuses a filter of the wrong shape before deleting anything, naming the criterion', async () => {
    const store = new MemoryStore({ dataDir: tmp.dir, durability: 'never' });
    await store.writeMany([...items, { id: 'o', content: 'o' }, { id: 'l', content: 'l' }, { id: 'd', content: 'd' }]);
    const bad: [unknown, RegExp][] = [
      // A string is not a list: new Set('old') would be the ids 'o', 'l' and 'd'.
      [{ ids: 'old' }, /ids must be an array of memory ids, got a string/],
      [{ ids: ['old-a', 5] }, /ids\[1\] must be a memory id/],
      [{ keyword: 5 }, /keyword must be a string, got a number/],
      [{ createdBefore: '2026-01-01' }, /createdBefore must be a valid Date or ms since the epoch, got a string/],
      [{ createdBefore: new Date('nope') }, /createdBefore .* got an invalid Date/],
      [{ metadata: ['run'] }, /metadata must be an object/],
      [{ metadata: { run: undefined } }, /metadata.run has no JSON value/],
      // A misspelt criterion would be ignored, deleting every item of the keyword.
      [{ keyword: 'sea', createdBfore: 500 }, /unknown filter field\(s\) "createdBfore"/],
      [['old-a'], /takes a filter object or a predicate, got an array/],
    ];
    for (const [filter, message] of bad) {
      await expect(store.deleteWhere(filter as MemoryFilter), JSON.stringify(filter)).rejects.toThrow(message);
    }
    expect((await store.listAll()).items.map((i) => i.id)).toEqual(['d', 'l', 'new-c', 'o', 'old-a', 'old-b']);
  });
});
