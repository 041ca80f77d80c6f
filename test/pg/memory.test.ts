/** Memory in Postgres ranks exactly as the file store's BM25 does on the same corpus, and keeps what the file store keeps. */
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidIdError, MemoryStore, MemoryStoreError, PostgresRunStore } from '../../src/store/index.js';
import { PostgresMemoryStore } from '../../src/store/postgres/memory-store.js';
import { SECRETS } from '../store/helpers.js';
import { freshDatabase } from '../support/pg.js';
import { trials } from '../support/soak.js';

const WORDS = ['tide', 'moon', 'ocean', 'gravity', 'wave', 'salt', 'shore', 'current', 'orbit', 'storm', 'river', 'delta'];

describe('Postgres memory', () => {
  let url: string;
  let drop: () => Promise<void>;
  const stores: PostgresRunStore[] = [];
  const dirs: string[] = [];

  beforeAll(async () => ({ url, drop } = await freshDatabase()));
  afterAll(async () => {
    for (const s of stores) await s.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    await drop();
  });

  it('ranks a corpus in the file store\'s BM25 order, with the same scores (property)', async () => {
    let round = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ words: fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 12 }), keywords: fc.array(fc.constantFrom(...WORDS), { maxLength: 2 }) }), { minLength: 1, maxLength: 25 }),
        fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 3 }),
        fc.integer({ min: 1, max: 30 }),
        async (docs, queryWords, topK) => {
          const db = await freshDatabase();
          const store = new PostgresRunStore({ url: db.url });
          const dir = mkdtempSync(join(tmpdir(), 'bpf-pg-memory-'));
          try {
            const items = docs.map((d, i) => ({ id: `m${round}-${String(i).padStart(2, '0')}`, content: d.words.join(' '), keywords: d.keywords, createdAt: 1 }));
            round++;
            const files = new MemoryStore({ dataDir: dir });
            const pg = new PostgresMemoryStore(store);
            await files.writeMany(items);
            await pg.writeMany(items);
            const query = queryWords.join(' ');
            const a = await files.searchScored(query, topK);
            const b = await pg.searchScored(query, topK);
            expect(b.map((h) => [h.item.id, h.score])).toEqual(a.map((h) => [h.item.id, h.score]));
            expect(b.map((h) => h.item)).toEqual(a.map((h) => h.item));
          } finally {
            await store.close();
            await db.drop();
            rmSync(dir, { recursive: true, force: true });
          }
        },
      ),
      { numRuns: trials(5, 40) },
    );
  });

  it('replaces, deletes, redacts and validates as the file store does', async () => {
    const store = new PostgresRunStore({ url });
    stores.push(store);
    const memory = new PostgresMemoryStore(store);
    await memory.write({ id: 'a', content: 'tides follow the moon', createdAt: 1 });
    await memory.write({ id: 'a', content: 'storms follow the wind', createdAt: 1 });
    expect(await memory.search('moon', 5)).toEqual([]);
    expect((await memory.search('storms', 5)).map((i) => i.id)).toEqual(['a']);
    await memory.write({ id: 'b', content: `the key is ${SECRETS.openai}`, metadata: { apiKey: 'plain' }, createdAt: 1 });
    expect(JSON.stringify(await memory.get('b'))).not.toContain(SECRETS.openai);
    expect(JSON.stringify(await memory.get('b'))).not.toContain('plain');
    expect(await memory.delete('a')).toBe(true);
    expect(await memory.delete('a')).toBe(false);
    expect(await memory.get('a')).toBeNull();
    await expect(memory.write({ id: '../x', content: 'x', createdAt: 1 })).rejects.toBeInstanceOf(InvalidIdError);
    await expect(memory.write({ id: 'c', content: 5 as unknown as string })).rejects.toBeInstanceOf(MemoryStoreError);
    await expect(memory.searchScored('x', -1)).rejects.toThrow(/topK/);
  });

  it('skips a damaged item in a search, naming it to onWarning (the Studio shows it) instead of the process', async () => {
    const store = new PostgresRunStore({ url });
    stores.push(store);
    const memory = new PostgresMemoryStore(store);
    await memory.write({ id: 'whole', content: 'salt and shore', createdAt: 1 });
    await memory.write({ id: 'broken', content: 'salt in the river', createdAt: 2 });
    const sql = await store.sql();
    await sql`update backpackflow.memory_items set body = '{' where id = 'broken'`;
    const warnings: string[] = [];
    const hits = await memory.searchScored('salt', 5, { onWarning: (message) => warnings.push(message) });
    expect(hits.map((h) => h.item.id)).toEqual(['whole']);
    expect(warnings).toEqual([expect.stringMatching(/^skipped .*broken/)]);
  });
});
