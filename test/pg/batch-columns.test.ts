/**
 * The last_line and last_seq columns of backpackflow.event_batches are not covered by the chain hash: `runs verify`
 * (verifyLog) checks them against each row's text and names the row that disagrees, and a writer takes where the log
 * ends from the last row's text, not from them.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackpackNode, Flow, runFlow } from '../../src/index.js';
import { PostgresRunStore } from '../../src/store/index.js';
import { freshDatabase } from '../support/pg.js';

class Step extends BackpackNode {
  override exec(): string {
    return 'ok';
  }
}

describe('the last_line and last_seq columns of a batch row', () => {
  let url: string;
  let drop: () => Promise<void>;
  let store: PostgresRunStore;
  let admin: postgres.Sql;
  const ref = { sessionKey: 'default', runId: 'cols' };
  let rows: { first_line: number; last_line: number; last_seq: string }[];

  beforeAll(async () => {
    ({ url, drop } = await freshDatabase());
    store = new PostgresRunStore({ url });
    admin = postgres(url, { max: 1, onnotice: () => undefined });
    const flow = new Flow();
    const a = flow.addNode(Step, { id: 'a' });
    const b = flow.addNode(Step, { id: 'b' });
    a.next(b);
    await runFlow(flow, { store, runId: ref.runId });
    rows = await admin`select first_line, last_line, last_seq from backpackflow.event_batches where run_id = ${ref.runId} order by first_line`;
    expect(rows.length).toBeGreaterThanOrEqual(3);
  });
  afterAll(async () => {
    await store.close();
    await admin.end();
    await drop();
  });

  /** Sets `column` of the row starting at `first` to `value` while `body` runs, then puts it back. */
  async function edited(first: number, column: 'last_line' | 'last_seq', value: number, body: () => Promise<void>): Promise<void> {
    const [row] = await admin<{ v: string }[]>`select ${admin(column)}::text as v from backpackflow.event_batches where run_id = ${ref.runId} and first_line = ${first}`;
    await admin`update backpackflow.event_batches set ${admin(column)} = ${value} where run_id = ${ref.runId} and first_line = ${first}`;
    try {
      await body();
    } finally {
      await admin`update backpackflow.event_batches set ${admin(column)} = ${row!.v}::bigint where run_id = ${ref.runId} and first_line = ${first}`;
    }
  }

  it('verify passes the rows as written', async () => {
    expect((await store.verifyLog(ref)).ok).toBe(true);
  });

  it("verify reports a middle row whose last_seq is not its last line's seq, naming the row", async () => {
    const middle = rows[1]!;
    await edited(middle.first_line, 'last_seq', Number(middle.last_seq) + 7, async () => {
      const result = await store.verifyLog(ref);
      expect(result.ok).toBe(false);
      expect(result.problem).toContain(`the row of lines ${middle.first_line + 1}-${middle.last_line + 1} (first_line ${middle.first_line}) has last_seq ${Number(middle.last_seq) + 7}, but its last line has seq ${middle.last_seq}`);
    });
  });

  it('verify reports a row whose last_line does not match its lines, naming the row', async () => {
    const row = rows.find((r) => r.last_line > r.first_line)!;
    await edited(row.first_line, 'last_line', row.first_line, async () => {
      const result = await store.verifyLog(ref);
      expect(result.ok).toBe(false);
      expect(result.problem).toContain(`(first_line ${row.first_line}) has last_line ${row.first_line}, but its text holds ${row.last_line - row.first_line + 1} lines (last_line ${row.last_line})`);
    });
  });

  it("a writer takes where the log ends from the last row's text, not from its columns", async () => {
    const last = rows.at(-1)!;
    await edited(last.first_line, 'last_seq', 5, () =>
      edited(last.first_line, 'last_line', last.last_line + 3, async () => {
        const writer = await store.openWriter(ref, { fresh: false, durability: 'batch' });
        try {
          expect(writer.lastSeq).toBe(Number(last.last_seq));
          expect(writer.eventCount).toBe(last.last_line + 1);
        } finally {
          await writer.close();
        }
      }),
    );
  });
});
