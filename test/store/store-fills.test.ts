/** Issue 20: fields the stores fill themselves. */
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointStore, CheckpointStoreError, MemoryStore, MemoryStoreError } from '../../src/store/index.js';
import { tempDir } from './helpers.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => (tmp = tempDir()));
afterEach(() => tmp.cleanup());

describe('MemoryStore.write fills createdAt', () => {
  it('stamps the current time when the item has none, and keeps a given one', async () => {
    const store = new MemoryStore({ dataDir: tmp.dir, durability: 'never' });
    const before = Date.now();
    await store.write({ id: 'fresh', content: 'tide tables for the harbour', keywords: ['tides'] });
    const after = Date.now();
    await store.writeMany([{ id: 'dated', content: 'older tide notes', createdAt: 42 }]);
    const fresh = await store.get('fresh');
    expect(fresh?.createdAt).toBeGreaterThanOrEqual(before);
    expect(fresh?.createdAt).toBeLessThanOrEqual(after);
    expect(JSON.parse(readFileSync(`${store.paths.itemsDir}/fresh.json`, 'utf8')).data.createdAt).toBe(fresh?.createdAt);
    expect((await store.get('dated'))?.createdAt).toBe(42);
    expect((await store.search('tide', 5)).map((i) => i.id).sort()).toEqual(['dated', 'fresh']);
    // A given createdAt must still be valid.
    await expect(store.write({ id: 'bad', content: 'x', createdAt: -1 })).rejects.toThrow(MemoryStoreError);
    await expect(store.write({ id: 'bad', content: 'x', createdAt: -1 })).rejects.toThrow(/createdAt/);
    await store.close();
  });
});

describe('CheckpointStore.saveLatest fills the session and run', () => {
  const body = { v: 1 as const, step: 3, createdAt: 1, position: ['a'], state: { n: 3 } };

  it('fills sessionKey and runId from the store when the checkpoint has none', async () => {
    const store = new CheckpointStore({ dataDir: tmp.dir, sessionKey: 'sess', runId: 'run-1' });
    await store.saveLatest(body);
    expect(await store.loadLatest()).toEqual({ ...body, sessionKey: 'sess', runId: 'run-1' });
    await store.saveHistorical({ ...body, step: 4 }, 4);
    expect(await store.loadHistorical(4)).toMatchObject({ sessionKey: 'sess', runId: 'run-1', step: 4 });
  });

  it('accepts a checkpoint naming its own session and run, and refuses one naming another', async () => {
    const store = new CheckpointStore({ dataDir: tmp.dir, sessionKey: 'sess', runId: 'run-1' });
    await store.saveLatest({ ...body, sessionKey: 'sess', runId: 'run-1' });
    await expect(store.saveLatest({ ...body, sessionKey: 'other' })).rejects.toThrow(CheckpointStoreError);
    await expect(store.saveLatest({ ...body, runId: 'run-2' })).rejects.toThrow(/checkpoint of run sess\/run-2 cannot be saved in run sess\/run-1/);
    expect((await store.loadLatest())?.runId).toBe('run-1');
  });
});
