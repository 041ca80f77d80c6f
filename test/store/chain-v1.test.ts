/**
 * Logs written before line numbers were hashed into the chain (format 'v1', see src/store/chain.ts) stay readable,
 * verifiable and continuable: a writer continues one in its own format, and a change to one is still found.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadHashBackend } from '../../src/hash/blake3.js';
import { chainFormatOf, genesis } from '../../src/store/chain.js';
import { EventStore } from '../../src/store/index.js';
import { makeEvent, rewriteAsChainV1, tempDirAndWarnings } from './helpers.js';

const state = tempDirAndWarnings();

async function formatOf(store: EventStore): Promise<string | undefined> {
  const backend = await loadHashBackend('wasm');
  const first = readFileSync(store.paths.events, 'utf8').split('\n')[0]!;
  return chainFormatOf(backend, genesis(backend, 's', 'old'), Buffer.from(first));
}

/** A closed log of 40 events in batches of 4 with an index entry every 5 lines, rewritten in format v1. */
async function v1Log(): Promise<EventStore> {
  const open = () => new EventStore({ dataDir: state.tmp.dir, sessionKey: 's', runId: 'old', indexInterval: 5 });
  const store = open();
  for (let b = 0; b < 10; b++) await store.appendBatch([1, 2, 3, 4].map((i) => makeEvent('old', b * 4 + i)));
  await store.close();
  expect(await formatOf(store)).toBe('v2');
  await rewriteAsChainV1(store.paths.events, 's', 'old');
  expect(await formatOf(store)).toBe('v1');
  return open();
}

describe('an event log in chain format v1', () => {
  it('is read whole and page by page from its index, and verifies', async () => {
    const store = await v1Log();
    expect((await store.readAll()).map((e) => e.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    for (const offset of [0, 5, 17, 33]) expect((await store.readPage(4, offset)).map((e) => e.seq)).toEqual([1, 2, 3, 4].map((i) => offset + i));
    const verified = await store.verify();
    expect(verified).toMatchObject({ ok: true, chain: 'verified', lines: 40, verifiedLines: 40 });
    expect(state.warnings).toEqual([]);
  });

  it('is continued in format v1 by a writer, and the whole log still verifies', async () => {
    const store = await v1Log();
    await store.appendBatch([41, 42, 43].map((seq) => makeEvent('old', seq)));
    await store.close();
    expect(await formatOf(store)).toBe('v1');
    const reopened = new EventStore({ dataDir: state.tmp.dir, sessionKey: 's', runId: 'old' });
    expect(await reopened.verify()).toMatchObject({ ok: true, chain: 'verified', lines: 43, verifiedLines: 43 });
    expect((await reopened.readPage(3, 40)).map((e) => e.seq)).toEqual([41, 42, 43]);
  });

  it('a changed line is still found, by verify and by readers', async () => {
    const store = await v1Log();
    const text = readFileSync(store.paths.events, 'utf8');
    writeFileSync(store.paths.events, text.replace('"seq":22,', '"seq":92,'));
    const verified = await store.verify();
    expect(verified.ok).toBe(false);
    expect(verified.problem).toContain('lines 21-24 do not match the chain hash on line 24');
    await expect(store.readPage(4, 20)).rejects.toThrow(/lines 21-24 do not match the chain hash/);
  });
});

describe('an index entry whose line number no batch proves', () => {
  it('a read from an edited entry into the unsealed tail of a log warns about the same lines as a read without the index', async () => {
    const open = () => new EventStore({ dataDir: state.tmp.dir, sessionKey: 's', runId: 'tail', indexInterval: 5 });
    const store = open();
    for (let b = 0; b < 10; b++) await store.appendBatch([1, 2, 3, 4].map((i) => makeEvent('tail', b * 4 + i)));
    await store.close();
    // The last batch loses its seal (same size: the field renamed), so its lines come after the last chain hash.
    const text = readFileSync(store.paths.events, 'utf8');
    const at = text.lastIndexOf(',"chain":"');
    writeFileSync(store.paths.events, `${text.slice(0, at)},"chaim":"${text.slice(at + 10)}`);
    const warningsOf = async (): Promise<{ page: number[]; warnings: string[] }> => {
      const warnings: string[] = [];
      const page = (await open().readPage(3, 37, { onWarning: (m) => warnings.push(m) })).map((e) => e.seq);
      return { page, warnings };
    };
    const pristine = readFileSync(store.paths.index, 'utf8');
    const untouched = await warningsOf();
    expect(untouched).toEqual({ page: [], warnings: [expect.stringContaining('lines 37-40 come after its last chain hash (line 36)')] });
    // The entry of line 35 claims line 36 (its offset and seq unchanged).
    writeFileSync(store.paths.index, pristine.replace('{"line":35,', '{"line":36,'));
    expect(readFileSync(store.paths.index, 'utf8')).not.toBe(pristine);
    expect(await warningsOf()).toEqual(untouched);
  });
});
