/**
 * Postgres memory rows are checked as the file store's item files are (audit s21b M3): sealed bodies, the body's id
 * against its row, a damaged row skipped by search with a warning naming it; rows written before seals still read,
 * with a warning. And two writers of overlapping items in opposite orders never deadlock into a lost batch (M4).
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStoreError, PostgresRunStore } from '../../src/store/index.js';
import { PostgresMemoryStore } from '../../src/store/postgres/memory-store.js';
import { freshDatabase } from '../support/pg.js';

let url: string;
let drop: () => Promise<void>;
let admin: postgres.Sql;
const stores: PostgresRunStore[] = [];
beforeAll(async () => {
  ({ url, drop } = await freshDatabase());
  admin = postgres(url, { max: 1, onnotice: () => undefined });
});
afterAll(async () => {
  for (const s of stores) await s.close();
  await admin.end();
  await drop();
});

function memory(): PostgresMemoryStore {
  const store = new PostgresRunStore({ url });
  stores.push(store);
  return new PostgresMemoryStore(store);
}

/** The process warnings of `type` emitted while `action` runs. */
async function processWarnings<T>(type: string, action: () => Promise<T>): Promise<{ value: T | Error; warnings: string[] }> {
  const warnings: string[] = [];
  const listener = (w: Error): void => void (w.name === type && warnings.push(w.message));
  process.on('warning', listener);
  try {
    const value = await action().catch((error: unknown) => error as Error);
    await new Promise((resolve) => setImmediate(resolve));
    return { value, warnings };
  } finally {
    process.off('warning', listener);
  }
}

describe('Postgres memory rows', () => {
  it('are stored sealed, as the file store seals its item files', async () => {
    const m = memory();
    await m.write({ id: 'sealed', content: 'tides rise twice a day', createdAt: 1 });
    const [row] = await admin<{ body: string }[]>`select body from backpackflow.memory_items where id = 'sealed'`;
    expect(row!.body).toMatch(/^\{"checksum":"[0-9a-f]{64}","data":\{"id":"sealed",/);
    expect(await m.get('sealed')).toEqual({ id: 'sealed', content: 'tides rise twice a day', createdAt: 1 });
  });

  it("holding another item's body is not served as the item asked for: get names the row, search skips it with a warning", async () => {
    const m = memory();
    await m.write({ id: 'alpha', content: 'mudflats rise twice a day', createdAt: 1 });
    await m.write({ id: 'beta', content: 'the moon pulls the sea', createdAt: 1 });
    await admin`update backpackflow.memory_items set body = (select body from backpackflow.memory_items where id = 'beta') where id = 'alpha'`;
    const error = await m.get('alpha').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MemoryStoreError);
    expect((error as Error).message).toMatch(/memory item 'alpha' \(its row in backpackflow\.memory_items, .*\): it holds item 'beta', not 'alpha'/);
    const warnings: string[] = [];
    const hits = await m.searchScored('mudflats', 5, { onWarning: (w) => warnings.push(w) });
    expect(hits).toEqual([]);
    expect(warnings).toEqual([expect.stringMatching(/^skipped corrupt memory item 'alpha' .*it holds item 'beta'/)]);
    // The damage is local: beta is served under its own id.
    expect((await m.search('pulls', 5)).map((i) => i.id)).toEqual(['beta']);
  });

  it('edited in place is not served: its body no longer matches its checksum', async () => {
    const m = memory();
    await m.write({ id: 'gamma', content: 'salt marsh estuary', createdAt: 1 });
    await m.write({ id: 'delta', content: 'an estuary at low tide', createdAt: 1 });
    await admin`update backpackflow.memory_items set body = replace(body, 'salt marsh estuary', 'wire the money to account 42') where id = 'gamma'`;
    await expect(m.get('gamma')).rejects.toThrow(/corrupt memory item 'gamma' .*its body does not match its checksum \(it was edited\)/);
    const warnings: string[] = [];
    const hits = await m.searchScored('estuary', 5, { onWarning: (w) => warnings.push(w) });
    expect(hits.map((h) => h.item.id)).toEqual(['delta']);
    expect(warnings).toEqual([expect.stringMatching(/^skipped corrupt memory item 'gamma' .*checksum/)]);
    // Written again, it is whole again.
    await m.write({ id: 'gamma', content: 'salt marsh estuary', createdAt: 1 });
    expect((await m.search('marsh', 5)).map((i) => i.content)).toEqual(['salt marsh estuary']);
  });

  it('written before seals (plain JSON) are still served, with a warning that nothing proves them unchanged, and sealed when written again', async () => {
    const m = memory();
    await m.write({ id: 'old', content: 'an orbit of the moon', createdAt: 1 });
    await admin`update backpackflow.memory_items set body = ${JSON.stringify({ id: 'old', content: 'an orbit of the moon', createdAt: 1 })} where id = 'old'`;
    const got = await processWarnings('MemoryStoreUnsealedItem', () => m.get('old'));
    expect(got.value).toEqual({ id: 'old', content: 'an orbit of the moon', createdAt: 1 });
    expect(got.warnings).toEqual([expect.stringMatching(/memory item 'old' .* is not sealed: .*nothing proves it unchanged/)]);
    const warnings: string[] = [];
    expect((await m.searchScored('orbit', 5, { onWarning: (w) => warnings.push(w) })).map((h) => h.item.id)).toEqual(['old']);
    expect(warnings).toEqual([expect.stringMatching(/memory item 'old' .* is not sealed/)]);
    // A plain body holding another id is refused all the same.
    await admin`update backpackflow.memory_items set body = ${JSON.stringify({ id: 'other', content: 'an orbit of the moon', createdAt: 1 })} where id = 'old'`;
    await expect(m.get('old')).rejects.toThrow(/it holds item 'other', not 'old'/);
    await m.write({ id: 'old', content: 'an orbit of the moon', createdAt: 1 });
    const again = await processWarnings('MemoryStoreUnsealedItem', () => m.get('old'));
    expect(again.warnings).toEqual([]);
  });

  it('of one id written twice in one batch keep the last', async () => {
    const m = memory();
    await m.writeMany([
      { id: 'twice', content: 'first storm', createdAt: 1 },
      { id: 'once', content: 'a river delta', createdAt: 1 },
      { id: 'twice', content: 'second storm', createdAt: 2 },
    ]);
    expect(await m.get('twice')).toEqual({ id: 'twice', content: 'second storm', createdAt: 2 });
    expect(await m.search('first', 5)).toEqual([]);
  });
});

describe('Postgres memory, two writers (two pools, as two workers)', () => {
  it('writing the same ids in opposite orders at once never deadlocks: every batch is stored', async () => {
    const a = memory();
    const b = memory();
    const ids = Array.from({ length: 20 }, (_, i) => `w${String(i).padStart(2, '0')}`);
    const items = (order: string[], who: string, round: number) => order.map((id) => ({ id, content: `${who} round${round} tide moon ${id}`, createdAt: 1 }));
    for (let round = 0; round < 10; round++) {
      const results = await Promise.allSettled([a.writeMany(items(ids, 'a', round)), b.writeMany(items([...ids].reverse(), 'b', round))]);
      expect(results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason))).toEqual([]);
      // Each batch is whole: every item is of one writer, and both were stored (the later one is what remains).
      const who = new Set((await Promise.all(ids.map((id) => a.get(id)))).map((item) => item!.content.split(' ')[0]));
      expect(who.size).toBe(1);
      expect((await a.search(`round${round}`, 50)).length).toBe(20);
    }
  });

  it('retries a transaction the server aborts as a deadlock, and stores the batch', async () => {
    const m = memory();
    await m.writeMany([
      { id: 'lock-a', content: 'before', createdAt: 1 },
      { id: 'lock-z', content: 'before', createdAt: 1 },
    ]);
    // A transaction checks for a deadlock once, deadlock_timeout after it starts waiting. The writer's (1 s) comes
    // after the other transaction closes the cycle (300 ms) and long before the other's (10 s): the server aborts the
    // writer's transaction.
    const dbName = new URL(url).pathname.slice(1);
    await admin.unsafe(`alter database "${dbName}" set deadlock_timeout = '1s'`);
    const writer = memory();
    const other = postgres(url, { max: 1, onnotice: () => undefined });
    try {
      let write: Promise<void> | undefined;
      await other.begin(async (tx) => {
        await tx`set local deadlock_timeout = '10s'`;
        await tx`update backpackflow.memory_items set length = length where id = 'lock-z'`;
        // The writer takes lock-a, then waits for lock-z (in id order, as it writes any batch).
        write = writer.writeMany([
          { id: 'lock-a', content: 'after squall', createdAt: 2 },
          { id: 'lock-z', content: 'after squall', createdAt: 2 },
        ]);
        await new Promise((resolve) => setTimeout(resolve, 300));
        // This transaction now waits for lock-a: a deadlock, which aborts the writer's transaction.
        await tx`update backpackflow.memory_items set length = length where id = 'lock-a'`;
      });
      await write;
      // The server did abort a transaction as a deadlock (its statistics reach pg_stat_database within a second or so).
      let deadlocks = 0;
      for (let i = 0; i < 50 && deadlocks === 0; i++) {
        if (i > 0) await new Promise((resolve) => setTimeout(resolve, 100));
        await admin`select pg_stat_clear_snapshot()`;
        const [row] = await admin<{ deadlocks: string }[]>`select deadlocks from pg_stat_database where datname = ${dbName}`;
        deadlocks = Number(row!.deadlocks);
      }
      expect(deadlocks).toBeGreaterThan(0);
    } finally {
      await other.end();
      await admin.unsafe(`alter database "${dbName}" reset deadlock_timeout`);
    }
    expect((await m.search('squall', 5)).map((i) => [i.id, i.content])).toEqual([
      ['lock-a', 'after squall'],
      ['lock-z', 'after squall'],
    ]);
  });
});
