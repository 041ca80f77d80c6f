/**
 * PostgresRunStore.logHead keeps the chain hash of a run's last row by the row's version (so that a large, compressed
 * row is not decompressed on every look): a row changed in place, or replaced, is a new version, and its head is read
 * again, never the one kept (see test/support/run-store-conformance.ts for what both stores share).
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresRunStore } from '../../src/store/index.js';
import { makeEvent } from '../store/helpers.js';
import { freshDatabase } from '../support/pg.js';

let url: string;
let drop: () => Promise<void>;
let sql: postgres.Sql;
beforeAll(async () => {
  ({ url, drop } = await freshDatabase());
  sql = postgres(url, { max: 1, onnotice: () => undefined });
});
afterAll(async () => {
  await sql.end();
  await drop();
});

describe('PostgresRunStore.logHead', () => {
  it('reads the head again when the last row is changed in place, deleted, or the run started again, whatever it kept', async () => {
    const store = new PostgresRunStore({ url });
    const ref = { sessionKey: 'heads', runId: 'r' };
    try {
      const w = await store.openWriter(ref, { fresh: true });
      // A large last row (stored compressed).
      await w.commit([makeEvent(ref.runId, 1), makeEvent(ref.runId, 2, { payload: { text: 'abc'.repeat(100_000) } })]);
      const first = w.chainHead;
      await w.commit([makeEvent(ref.runId, 3), makeEvent(ref.runId, 4, { payload: { text: 'def'.repeat(100_000) } })]);
      const second = w.chainHead;
      await w.close();
      expect(await store.logHead(ref)).toBe(second);
      expect(await store.logHead(ref)).toBe(second);

      // The last row's seal changed in place (by hand): a new row version, read again.
      const forged = 'f'.repeat(64);
      await sql`update backpackflow.event_batches set body = regexp_replace(body, '"chain":"[0-9a-f]{64}"}$', ${`"chain":"${forged}"}`}) where session_key = 'heads' and run_id = 'r' and first_line = 2`;
      expect(await store.logHead(ref)).toBe(forged);
      // The last row deleted: the head is the one before.
      await sql`delete from backpackflow.event_batches where session_key = 'heads' and run_id = 'r' and first_line = 2`;
      expect(await store.logHead(ref)).toBe(first);
      // The run deleted and started again with the same lines' numbers: its own head.
      await sql`delete from backpackflow.runs where session_key = 'heads' and run_id = 'r'`;
      expect(await store.logHead(ref)).toBeNull();
      const again = await store.openWriter(ref, { fresh: true });
      await again.commit([makeEvent(ref.runId, 1), makeEvent(ref.runId, 2, { payload: { text: 'xyz'.repeat(100_000) } })]);
      expect(await store.logHead(ref)).toBe(again.chainHead);
      expect(again.chainHead).not.toBe(first);
      await again.close();
    } finally {
      await store.close();
    }
  });
});
