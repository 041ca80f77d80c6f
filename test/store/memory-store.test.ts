import { existsSync, readFileSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryStore, MemoryStoreError, tokenize, type MemoryItem } from '../../src/store/index.js';
import { SECRETS, tempDir } from './helpers.js';
import { hostname } from 'node:os';

const item = (id: string, content: string, extra: Partial<MemoryItem> = {}): MemoryItem => ({ id, content, createdAt: 1, ...extra });

describe('tokenize', () => {
  it('lowercases, splits on non-alphanumerics, drops short tokens and stopwords', () => {
    expect(tokenize('The Quick-brown fox, a X; jumps_over café 42')).toEqual(['quick', 'brown', 'fox', 'jumps', 'over', 'café', '42']);
  });
});

describe('MemoryStore', () => {
  let tmp: ReturnType<typeof tempDir>;
  let stores: MemoryStore[];
  const open = (): MemoryStore => {
    const store = new MemoryStore({ dataDir: tmp.dir, durability: 'never' });
    stores.push(store);
    return store;
  };
  beforeEach(() => {
    tmp = tempDir();
    stores = [];
  });
  afterEach(async () => {
    for (const s of stores) await s.close();
    tmp.cleanup();
  });

  it('writes items to memory/shared/items/<id>.json and gets them back; null when absent', async () => {
    const store = open();
    await store.write(item('m1', 'hello world', { keywords: ['greeting'], metadata: { source: 'test' }, updatedAt: 2 }));
    expect(await store.get('m1')).toEqual(item('m1', 'hello world', { keywords: ['greeting'], metadata: { source: 'test' }, updatedAt: 2 }));
    expect(await store.get('nope')).toBeNull();
    expect(readdirSync(store.paths.itemsDir)).toEqual(['m1.json']);
  });

  it('ranks by BM25: rarer terms and more occurrences in shorter documents rank higher', async () => {
    const store = open();
    await store.writeMany([
      item('a', 'cat cat cat'),
      item('b', 'cat dog'),
      item('c', 'dog dog bird bird fish fish'),
      item('d', 'cat ' + 'filler '.repeat(30)),
      item('e', 'unrelated words only'),
    ]);
    const hits = await store.searchScored('cat', 10);
    expect(hits.map((h) => h.item.id)).toEqual(['a', 'b', 'd']);
    expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
    // N = 5, df(cat) = 3: idf = ln(1 + (5 - 3 + 0.5) / 3.5); doc a has tf 3, length 3, avgdl = (3+2+6+31+3)/5.
    const avgdl = 45 / 5;
    const idf = Math.log(1 + 2.5 / 3.5);
    const expected = (idf * 3 * 2.2) / (3 + 1.2 * (0.25 + (0.75 * 3) / avgdl));
    expect(hits[0]!.score).toBeCloseTo(expected, 10);
    expect((await store.search('bird dog', 1)).map((i) => i.id)).toEqual(['c']);
    expect(await store.search('absent', 5)).toEqual([]);
  });

  it('breaks ties by id, deterministically', async () => {
    const store = open();
    await store.writeMany(['z', 'b', 'm', 'a'].map((id) => item(id, 'same words here')));
    expect((await store.search('words', 3)).map((i) => i.id)).toEqual(['a', 'b', 'm']);
  });

  it('matches keywords as well as content', async () => {
    const store = open();
    await store.write(item('k', 'plain text', { keywords: ['Postgres', 'migration-plan'] }));
    expect((await store.search('postgres plan', 5)).map((i) => i.id)).toEqual(['k']);
  });

  it('keeps keyword.json in step with writes, replacements and deletes', async () => {
    const store = open();
    await store.write(item('m1', 'alpha beta'));
    await store.write(item('m2', 'beta gamma'));
    await store.write(item('m1', 'delta'));
    expect(await store.delete('m2')).toBe(true);
    expect(await store.delete('m2')).toBe(false);
    const index = JSON.parse(readFileSync(store.paths.keywordIndex, 'utf8')).data;
    expect(index).toMatchObject({ v: 1, N: 1, totalLength: 1, docs: { m1: 1 }, terms: { delta: { m1: 1 } } });
    // With the generation that wrote it and each item's checksum (how an item put back from an older copy is told).
    expect(Object.keys(index.sums)).toEqual(['m1']);
    expect(index.gen).toBeGreaterThan(0);
    expect(await store.get('m2')).toBeNull();
    expect(await open().search('beta', 5)).toEqual([]);
  });

  it('rebuilds the index from the items when it is missing or corrupt', async () => {
    const store = open();
    await store.writeMany([item('a', 'red apple'), item('b', 'green apple')]);
    await store.close();
    const good = readFileSync(store.paths.keywordIndex, 'utf8');
    /** The index's data but its generation (a rebuild is a later write). */
    const indexed = (text: string): unknown => {
      const { gen: _gen, ...rest } = (JSON.parse(text) as { data: Record<string, unknown> }).data;
      return rest;
    };
    rmSync(store.paths.keywordIndex);
    expect((await open().search('apple', 5)).map((i) => i.id)).toEqual(['a', 'b']);
    expect(indexed(readFileSync(store.paths.keywordIndex, 'utf8'))).toEqual(indexed(good));
    writeFileSync(store.paths.keywordIndex, good.slice(0, 20));
    expect((await open().search('green', 5)).map((i) => i.id)).toEqual(['b']);
    writeFileSync(store.paths.keywordIndex, JSON.stringify({ ...JSON.parse(good), N: 7 }));
    expect((await open().search('red', 5)).map((i) => i.id)).toEqual(['a']);
    expect(indexed(readFileSync(store.paths.keywordIndex, 'utf8'))).toEqual(indexed(good));
  });

  it('repairs the index after a crash between item files and index (the pending record)', async () => {
    const store = open();
    await store.writeMany([item('a', 'old words'), item('b', 'bee')]);
    await store.close();
    // What a crash leaves: the record of the ids being changed, the item files changed (as a writer writes them:
    // sealed, here by a store of another directory whose later writes carry later generations), the index not
    // rewritten.
    const other = new MemoryStore({ dataDir: `${tmp.dir}/other`, durability: 'never' });
    await other.writeMany([item('x', 'filler'), item('y', 'filler'), item('z', 'filler')]);
    await other.writeMany([item('a', 'new words'), item('c', 'new item')]);
    await other.close();
    writeFileSync(`${store.paths.indexDir}/pending.json`, JSON.stringify({ ids: ['a', 'b', 'c'] }));
    for (const id of ['a', 'c']) writeFileSync(`${store.paths.itemsDir}/${id}.json`, readFileSync(`${other.paths.itemsDir}/${id}.json`));
    unlinkSync(`${store.paths.itemsDir}/b.json`);
    const fresh = open();
    expect((await fresh.search('new', 5)).map((i) => i.id)).toEqual(['a', 'c']);
    expect(await fresh.search('old', 5)).toEqual([]);
    expect(await fresh.search('bee', 5)).toEqual([]);
    expect(existsSync(`${store.paths.indexDir}/pending.json`)).toBe(false);
    expect(Object.keys(JSON.parse(readFileSync(store.paths.keywordIndex, 'utf8')).data.docs).sort()).toEqual(['a', 'c']);
  });

  it('removes its pending record after each operation', async () => {
    const store = open();
    await store.write(item('a', 'x'));
    await store.delete('a');
    expect(readdirSync(store.paths.indexDir).sort()).toEqual(['generation.json', 'keyword.json']);
  });

  it('validates items and ids before writing anything', async () => {
    const store = open();
    await expect(store.write({ id: 'x', content: 5 } as unknown as MemoryItem)).rejects.toThrow(/invalid memory item "x": content/);
    await expect(store.writeMany([item('ok', 'fine'), item('../x', 'bad')])).rejects.toThrow(/invalid memory id/);
    expect(await store.get('ok')).toBeNull();
    await expect(store.search('x', -1)).rejects.toThrow(MemoryStoreError);
  });

  it('refuses metadata that JSON would not keep as it is (a Map, Set or Date was stored as {}), naming where it is', async () => {
    const store = open();
    const values: [unknown, string][] = [
      [new Map([['k', 'v']]), 'metadata.value: .* got an instance of Map'],
      [new Set(['v']), 'metadata.value: .* got an instance of Set'],
      [new Date(0), 'metadata.value: .* got an instance of Date'],
      [{ deep: [1, NaN] }, 'metadata.value.deep.1: .* got NaN'],
    ];
    for (const [value, message] of values) {
      await expect(store.write({ id: 'm', content: 'apple', metadata: { value } })).rejects.toThrow(new RegExp(message));
    }
    expect(await store.get('m')).toBeNull();
  });

  it('reports a corrupt item file with its path', async () => {
    const store = open();
    await store.write(item('a', 'x'));
    writeFileSync(`${store.paths.itemsDir}/a.json`, '{oops');
    await expect(store.get('a')).rejects.toThrow(/corrupt memory item .*a\.json: not valid JSON/);
  });

  it('never writes secrets in content, keywords or metadata', async () => {
    const store = open();
    await store.write(item('s', `remember ${SECRETS.jwt}`, { keywords: [SECRETS.openai], metadata: { password: 'pw-plain-123' } }));
    const raw = readFileSync(`${store.paths.itemsDir}/s.json`, 'utf8') + readFileSync(store.paths.keywordIndex, 'utf8');
    for (const secret of [SECRETS.jwt, SECRETS.openai, 'pw-plain-123']) expect(raw).not.toContain(secret);
    expect((await store.get('s'))?.content).toBe('remember [REDACTED]');
  });

  it('two stores on one data directory (as two processes) see and keep each other\'s writes', async () => {
    const first = open();
    const second = open();
    await first.write(item('a', 'alpha shared'));
    await second.write(item('b', 'beta shared'));
    await first.write(item('c', 'gamma shared'));
    expect((await second.search('shared', 10)).map((i) => i.id)).toEqual(['a', 'b', 'c']);
    expect((await first.search('beta', 10)).map((i) => i.id)).toEqual(['b']);
    await second.delete('a');
    expect(await first.search('alpha', 10)).toEqual([]);
    expect(Object.keys(JSON.parse(readFileSync(first.paths.keywordIndex, 'utf8')).data.docs).sort()).toEqual(['b', 'c']);
  });

  it('waits for the memory lock and reports its holder after lockTimeoutMs', async () => {
    const store = new MemoryStore({ dataDir: tmp.dir, durability: 'never', lockTimeoutMs: 50 });
    stores.push(store);
    await store.write(item('a', 'x'));
    const lockPath = `${store.paths.indexDir}/keyword.lock`;
    writeFileSync(lockPath, JSON.stringify({ pid: process.pid, host: hostname(), createdAt: Date.now() }));
    await expect(store.write(item('b', 'y'))).rejects.toThrow(/shared memory already has a writer/);
    const waiting = store.write(item('c', 'zed'));
    setTimeout(() => rmSync(lockPath), 10);
    await waiting;
    expect((await store.search('zed', 5)).map((i) => i.id)).toEqual(['c']);
  });
});
