/**
 * The Postgres store's chain format (src/store/chain.ts): a log's batches are all of the format its line 0 shows. A
 * reader that starts in the middle of a log (a page) takes the format from line 0, so a batch sealed in the other
 * format (which a reader that guessed the format at its first batch would accept) is a mismatch, as `runs verify`,
 * which reads from the start, finds it.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackpackNode, Flow, runFlow } from '../../src/index.js';
import { loadHashBackend } from '../../src/hash/blake3.js';
import { chainOf, genesis, sealBatch } from '../../src/store/chain.js';
import { PostgresRunStore } from '../../src/store/index.js';
import { freshDatabase } from '../support/pg.js';

class Step extends BackpackNode {
  override exec(): string {
    return 'ok';
  }
}

describe('a Postgres log with one batch sealed in the other chain format', () => {
  let url: string;
  let drop: () => Promise<void>;
  let store: PostgresRunStore;
  let admin: postgres.Sql;
  const ref = { sessionKey: 'default', runId: 'mixed' };
  let row: { first_line: number; body: string };

  beforeAll(async () => {
    ({ url, drop } = await freshDatabase());
    store = new PostgresRunStore({ url });
    admin = postgres(url, { max: 1, onnotice: () => undefined });
    const flow = new Flow();
    const [a, b, c] = ['a', 'b', 'c'].map((id) => flow.addNode(Step, { id }));
    a!.next(b!);
    b!.next(c!);
    await runFlow(flow, { store, runId: ref.runId });
    const rows = await admin<{ first_line: number; body: string }[]>`select first_line, body from backpackflow.event_batches where run_id = ${ref.runId} order by first_line`;
    expect(rows.length).toBeGreaterThanOrEqual(4);
    // A middle row, its lines changed (a value edited) and sealed again from the chain before it, in format v1.
    const previous = rows[1]!;
    row = rows[2]!;
    const chain = chainOf(Buffer.from(previous.body.split('\n').at(-1)!))!;
    const lines = row.body.split('\n').map((line) => (chainOf(Buffer.from(line)) === undefined ? line : `${line.slice(0, line.lastIndexOf(',"chain":"'))}}`));
    lines[0] = lines[0]!.replace('"seq":', '"edited":true,"seq":');
    const sealed = sealBatch(await loadHashBackend('wasm'), Buffer.from(chain, 'hex'), lines, false, { line: row.first_line, format: 'v1' });
    const body = sealed.pieces.map((piece) => piece.toString()).join('').slice(0, -1);
    await admin`update backpackflow.event_batches set body = ${body} where run_id = ${ref.runId} and first_line = ${row.first_line}`;
  });
  afterAll(async () => {
    await store.close();
    await admin.end();
    await drop();
  });

  it('a page inside that batch is an error naming its lines, not the edited lines served as verified', async () => {
    const count = row.body.split('\n').length;
    await expect(store.readPage(ref, count, row.first_line)).rejects.toThrow(new RegExp(`lines ${row.first_line + 1}-${row.first_line + count} do not match the chain hash`));
  });

  it('verify finds it too', async () => {
    const verified = await store.verifyLog(ref);
    expect(verified.ok).toBe(false);
    expect(verified.problem).toMatch(/do not match the chain hash/);
  });
});

describe('a Postgres writer continuing a log whose first line was changed', () => {
  it('refuses it (the first line tells the chain format) and writes nothing', async () => {
    const { url, drop } = await freshDatabase();
    const store = new PostgresRunStore({ url });
    const admin = postgres(url, { max: 1, onnotice: () => undefined });
    try {
      const ref = { sessionKey: 'default', runId: 'first' };
      const flow = new Flow();
      flow.addNode(Step, { id: 'a' });
      await runFlow(flow, { store, runId: ref.runId });
      await admin`update backpackflow.event_batches set body = replace(body, '"resumed":false', '"resumed":true ') where run_id = ${ref.runId} and first_line = 0`;
      const before = await admin`select first_line, body from backpackflow.event_batches where run_id = ${ref.runId} order by first_line`;
      await expect(store.openWriter(ref, { fresh: false })).rejects.toThrow(/its first line does not match its chain hash: the log was changed there; it cannot be continued/);
      expect(await admin`select first_line, body from backpackflow.event_batches where run_id = ${ref.runId} order by first_line`).toEqual(before);
    } finally {
      await store.close();
      await admin.end();
      await drop();
    }
  });
});

describe('a Postgres log in chain format v1 with a batch row deleted and the later rows renumbered', () => {
  it('a page after it is an error, not the later lines served as verified under shifted numbers (v1 does not hash line numbers)', async () => {
    const { url, drop } = await freshDatabase();
    const store = new PostgresRunStore({ url });
    const admin = postgres(url, { max: 1, onnotice: () => undefined });
    try {
      const ref = { sessionKey: 'default', runId: 'renumbered' };
      const flow = new Flow();
      const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((id) => flow.addNode(Step, { id }));
      a!.next(b!);
      b!.next(c!);
      c!.next(d!);
      await runFlow(flow, { store, runId: ref.runId });
      // The log as a writer of format v1 wrote it: every batch sealed again from the genesis on, without line numbers.
      const backend = await loadHashBackend('wasm');
      const rows = await admin<{ first_line: number; body: string }[]>`select first_line, body from backpackflow.event_batches where run_id = ${ref.runId} order by first_line`;
      expect(rows.length).toBeGreaterThanOrEqual(5);
      let chain = genesis(backend, ref.sessionKey, ref.runId);
      for (const row of rows) {
        const lines = row.body.split('\n').map((line) => (chainOf(Buffer.from(line)) === undefined ? line : `${line.slice(0, line.lastIndexOf(',"chain":"'))}}`));
        const sealed = sealBatch(backend, chain, lines, row.first_line === 0, { line: row.first_line, format: 'v1' });
        chain = sealed.head;
        await admin`update backpackflow.event_batches set body = ${sealed.pieces.map((piece) => piece.toString()).join('').slice(0, -1)} where run_id = ${ref.runId} and first_line = ${row.first_line}`;
      }
      expect((await store.verifyLog(ref)).ok).toBe(true);
      // A middle row deleted, the rows after it moved down to close the gap.
      const gone = rows[2]!;
      const count = gone.body.split('\n').length;
      await admin`delete from backpackflow.event_batches where run_id = ${ref.runId} and first_line = ${gone.first_line}`;
      await admin`update backpackflow.event_batches set first_line = first_line - ${count}, last_line = last_line - ${count} where run_id = ${ref.runId} and first_line > ${gone.first_line}`;
      const last = rows.at(-1)!.first_line - count;
      await expect(store.readPage(ref, 1, last)).rejects.toThrow(/do not match the chain hash/);
      expect((await store.verifyLog(ref)).ok).toBe(false);
    } finally {
      await store.close();
      await admin.end();
      await drop();
    }
  });
});
