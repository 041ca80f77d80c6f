/**
 * BackpackflowSaver over Postgres threads that lost rows (audit s21b M1, L2; the files twin is
 * test/langgraph/damage.test.ts): a thread whose last batch rows are gone is an error naming the run's log and its
 * projection, never an older checkpoint served as the latest; a list across threads skips a damaged one, naming it.
 */
import { emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import { beforeAll, describe, expect, it } from 'vitest';
import { BackpackflowSaver } from '../../src/langgraph/index.js';
import { databaseForFile } from '../support/pg.js';

let version = 0;
async function putOne(saver: BackpackflowSaver, threadId: string, values: Record<string, unknown>) {
  version++;
  const versions = Object.fromEntries(Object.keys(values).map((k) => [k, version]));
  const checkpoint = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: values, channel_versions: versions };
  return saver.put({ configurable: { thread_id: threadId, checkpoint_ns: '' } }, checkpoint, { source: 'input', step: -1, parents: {} }, versions);
}

const db = databaseForFile();
beforeAll(async () => {
  await db.store.sql();
});

/** Deletes the last `count` batch rows of a run (a restore from a replica that lagged, a bad retention DELETE). */
async function dropLastBatches(session: string, runId: string, count: number): Promise<void> {
  const rows = await db.sql<{ first_line: number }[]>`select first_line from backpackflow.event_batches where session_key = ${session} and run_id = ${runId} order by first_line desc limit ${count}`;
  await db.sql`delete from backpackflow.event_batches where session_key = ${session} and run_id = ${runId} and first_line = any(${db.sql.array(rows.map((r) => r.first_line))}::int[])`;
}

describe('BackpackflowSaver on Postgres, a thread whose last batch rows are gone', () => {
  it('getTuple is an error naming the run in the database and its projection, not the previous checkpoint', async () => {
    const saver = new BackpackflowSaver({ store: db.store, sessionKey: 'tail' });
    await putOne(saver, 't', { topic: 'tides' });
    await putOne(saver, 't', { topic: 'waves' });
    await putOne(saver, 't', { topic: 'storm' });
    await saver.close();
    // The storm checkpoint's batch and the close's run.completed.
    await dropLastBatches('tail', 't', 2);
    const again = new BackpackflowSaver({ store: db.store, sessionKey: 'tail' });
    const error = await again.getTuple({ configurable: { thread_id: 't' } }).then(
      (tuple) => tuple?.checkpoint.channel_values['topic'],
      (e: Error) => e,
    );
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toContain(db.store.describeProjection({ sessionKey: 'tail', runId: 't' }));
    expect(message).toContain(db.store.describeLog({ sessionKey: 'tail', runId: 't' }));
    expect(message).toMatch(/records events up to seq \d+, but .* serves them up to seq \d+: the log was cut or damaged/);
    await again.close().catch(() => undefined);
  });

  it('a list across the threads skips it, naming it, and lists the others', async () => {
    const saver = new BackpackflowSaver({ store: db.store, sessionKey: 'list' });
    await putOne(saver, 'healthy', { topic: 'tides' });
    await putOne(saver, 'cut', { topic: 'rain' });
    await putOne(saver, 'cut', { topic: 'hail' });
    await saver.close();
    await dropLastBatches('list', 'cut', 2);
    const warnings: string[] = [];
    const listener = (w: Error): void => void warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', listener);
    const again = new BackpackflowSaver({ store: db.store, sessionKey: 'list' });
    const listed: unknown[] = [];
    try {
      for await (const tuple of again.list({ configurable: {} })) listed.push(tuple.checkpoint.channel_values['topic']);
      await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      process.off('warning', listener);
    }
    expect(listed).toEqual(['tides']);
    expect(warnings.filter((w) => w.includes('skipped damaged run list/cut'))).toHaveLength(1);
    await again.close();
  });
});
