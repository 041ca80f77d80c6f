/**
 * BackpackflowSaver over the Postgres run store: a LangGraph graph checkpointed into the database is a run there,
 * inspected with the built CLI's `runs list/show/state/diff/blame/verify --database-url` exactly as the same graph
 * checkpointed into files is inspected with `--data-dir`; secrets never reach a row; one writer per thread (a second
 * saver is refused, naming the lease holder); an edited row is refused, never served; deleteThread removes the run.
 */
import { emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import fc from 'fast-check';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackpackflowSaver, threadRunId } from '../../src/langgraph/index.js';
import { BackpackNode, Flow } from '../../src/nodes/index.js';
import { loadRunPoint, runFlow, verifyRun } from '../../src/runtime/index.js';
import { PostgresRunStore } from '../../src/store/index.js';
import { cli, cliJson, tempDir } from '../cli/helpers.js';
import { freshDatabase } from '../support/pg.js';
import { buildGraph } from '../langgraph/fixtures/tides-graph.js';

let version = 0;
async function putOne(saver: BackpackflowSaver, threadId: string, values: Record<string, unknown>) {
  version++;
  const versions = Object.fromEntries(Object.keys(values).map((k) => [k, version]));
  const checkpoint = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: values, channel_versions: versions };
  return saver.put({ configurable: { thread_id: threadId, checkpoint_ns: '' } }, checkpoint, { source: 'input', step: -1, parents: {} }, versions);
}

/** What differs between the same graph stored in files and in Postgres: times, ids, where it is stored. */
function normalize(value: unknown, location: string): unknown {
  const text = JSON.stringify(value).split(location).join('<store>');
  return JSON.parse(text, (key, v: unknown) =>
    ['timestamp', 'startedAt', 'endedAt', 'updatedAt', 'durationMs', 'at', 'createdAt', 'id', 'spanId', 'parentSpanId', 'ms', 'totalMs', 'chainHead', 'checkpointId', 'parentId', 'ts'].includes(key) ? 0 : v,
  );
}

const thread = 'tides-thread';
/**
 * The graph's runs here, in Postgres and in files, are compared event by event. With LangGraph's default durability
 * ('async') the order in which a step's checkpoint and the next steps' writes reach a saver depends on timing (two
 * runs of the same graph recorded them in different orders, so at different seqs); 'sync' waits for each.
 */
const invokeConfig = { configurable: { thread_id: thread }, durability: 'sync' } as const;
let url: string;
let drop: () => Promise<void>;
let store: PostgresRunStore;
let sql: postgres.Sql;
const pg = () => ['--database-url', url];

beforeAll(async () => {
  ({ url, drop } = await freshDatabase());
  store = new PostgresRunStore({ url });
  sql = postgres(url, { max: 1, onnotice: () => undefined });
  const saver = new BackpackflowSaver({ store });
  const result = await buildGraph(saver).invoke({ topic: 'tides' }, invokeConfig);
  expect(result.answer).toBe('tides rise twice a day; the moon pulls them');
  await saver.close();
});

afterAll(async () => {
  await sql.end();
  await store.close();
  await drop();
});

describe('a LangGraph thread stored in Postgres, inspected with backpackflow runs --database-url', () => {
  it('is a run in the database: events chained in rows (one per step), its projection beside them, no lease left behind', async () => {
    const [run] = await sql<{ meta: string | null; lease_owner: string | null }[]>`select meta, lease_owner from backpackflow.runs where session_key = 'default' and run_id = ${thread}`;
    expect(run?.lease_owner).toBeNull();
    expect(JSON.parse(run!.meta!).data).toMatchObject({ runId: thread, status: 'completed' });
    const [{ count }] = (await sql`select count(*)::int as count from backpackflow.event_batches where run_id = ${thread}`) as unknown as [{ count: number }];
    expect(count).toBeGreaterThan(4);
    expect((await verifyRun({ store, runId: thread })).status).toBe('verified');
  });

  it('runs list shows the thread as a completed run', async () => {
    const runs = await cliJson<Array<{ runId: string; status: string }>>(['runs', 'list', ...pg()]);
    expect(runs.map((r) => [r.runId, r.status])).toEqual([[thread, 'completed']]);
  });

  it('runs state/diff/blame name the graph node that wrote each channel, at which step', async () => {
    const last = await cliJson<{ step: number; items: Array<{ key: string; provenance: { nodeId: string; namespace: string } }> }>(['runs', 'state', thread, ...pg()]);
    expect(last.step).toBe(4);
    expect(Object.fromEntries(last.items.map((i) => [i.key, i.provenance.nodeId]))).toEqual({ topic: '__start__', facts: 'check', answer: 'write' });
    const diff = await cliJson<{ changes: Array<{ key: string; change: string; by: { nodeId: string } }> }>(['runs', 'diff', thread, '--from', '2', '--to', '4', ...pg()]);
    expect(diff.changes.map((c) => [c.key, c.change, c.by.nodeId])).toEqual([
      ['facts', 'modified', 'check'],
      ['answer', 'added', 'write'],
    ]);
    const blame = await cliJson<{ writes: Array<{ step: number; nodeId: string; namespace: string }> }>(['runs', 'blame', thread, 'facts', ...pg()]);
    expect(blame.writes.map((w) => [w.step, w.nodeId, w.namespace])).toEqual([
      [2, 'research', 'langgraph.research'],
      [3, 'check', 'langgraph.check'],
    ]);
    const show = await cli(['runs', 'show', thread, ...pg()]);
    expect(show.code, show.stderr).toBe(0);
    for (const node of ['research', 'check', 'write']) expect(show.stdout).toContain(`${node} langgraph.${node}`);
    const verify = await cli(['runs', 'verify', thread, ...pg()]);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    expect(verify.stdout).toContain('verified');
  });

  it('every runs command gives the same output as for the same graph checkpointed into files', async () => {
    const dataDir = tempDir();
    const files = new BackpackflowSaver({ dataDir });
    await buildGraph(files).invoke({ topic: 'tides' }, invokeConfig);
    await files.close();
    const commands = [
      ['runs', 'list'],
      ['runs', 'show', thread],
      ['runs', 'state', thread, '--step', '3'],
      ['runs', 'diff', thread, '--from', '0', '--to', '4'],
      ['runs', 'blame', thread, 'answer'],
      ['runs', 'events', thread, '--type', 'backpack.packed'],
    ];
    for (const command of commands) {
      const [a, b] = await Promise.all([cliJson([...command, '--data-dir', dataDir]), cliJson([...command, ...pg()])]);
      expect(normalize(b, url.replace(/\/[^/]*$/, '')), command.join(' ')).toEqual(normalize(a, dataDir));
    }
  });

  it('a second saver continues the thread from the database; an updateState write is blamed on __update__', async () => {
    const other = new PostgresRunStore({ url });
    const saver = new BackpackflowSaver({ store: other });
    const graph = buildGraph(saver);
    expect((await graph.getState({ configurable: { thread_id: thread } })).values.answer).toBe('tides rise twice a day; the moon pulls them');
    await graph.updateState({ configurable: { thread_id: thread } }, { answer: 'edited by hand' }, 'write');
    await saver.close();
    await other.close();
    const blame = await cliJson<{ writes: Array<{ step: number; nodeId: string }> }>(['runs', 'blame', thread, 'answer', ...pg()]);
    expect(blame.writes.map((w) => [w.step, w.nodeId])).toEqual([
      [4, 'write'],
      [5, '__update__'],
    ]);
  });
});

describe('BackpackflowSaver on Postgres: what no row may hold, and who may write', () => {
  it('stores a secret redacted in every row, and serves the same redacted value after a restart', async () => {
    const secret = 'ghp_' + 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8';
    const saver = new BackpackflowSaver({ store, sessionKey: 'secrets', keyframeInterval: 1 });
    const config = await putOne(saver, 's', { note: `token ${secret}`, password: 'hunter2' });
    await putOne(saver, 's', { note: 'calm' });
    const before = await saver.getTuple(config);
    await saver.close();
    const rows = await sql`
      select body from backpackflow.event_batches where session_key = 'secrets'
      union all select body from backpackflow.keyframes where session_key = 'secrets'
      union all select meta from backpackflow.runs where session_key = 'secrets'`;
    expect(rows.length).toBeGreaterThan(3);
    for (const row of rows) {
      expect(row['body'] as string).not.toContain(secret);
      expect(row['body'] as string).not.toContain('hunter2');
    }
    expect(before?.checkpoint.channel_values).toEqual({ note: 'token [REDACTED]', password: '[REDACTED]' });
    const again = new BackpackflowSaver({ store, sessionKey: 'secrets' });
    expect((await again.getTuple(config))?.checkpoint.channel_values).toEqual(before?.checkpoint.channel_values);
    await again.close();
    // The keyframes the saver wrote are the ones the runtime reads, sealed and tied to the chain.
    expect(await store.keyframeSteps({ sessionKey: 'secrets', runId: 's' })).toEqual([1]);
    const point = await loadRunPoint({ store, sessionKey: 'secrets', runId: 's', step: 1 });
    expect(point.warnings).toEqual([]);
    expect((await verifyRun({ store, sessionKey: 'secrets', runId: 's' })).status).toBe('verified');
  });

  it('refuses a second writer of a thread while the first holds its lease, naming the holder; then the second continues', async () => {
    const otherStore = new PostgresRunStore({ url, owner: 'second-worker' });
    const first = new BackpackflowSaver({ store, sessionKey: 'writers' });
    const second = new BackpackflowSaver({ store: otherStore, sessionKey: 'writers' });
    try {
      await putOne(first, 't', { a: 1 });
      await expect(putOne(second, 't', { a: 2 })).rejects.toThrow(`run writers/t is being written by ${store.owner}`);
      await first.close();
      await putOne(second, 't', { a: 3 });
      const all = [];
      for await (const t of second.list({ configurable: { thread_id: 't' } })) all.push(t.checkpoint.channel_values);
      expect(all).toEqual([{ a: 3 }, { a: 1 }]);
      // ...and deleting it is refused to anyone else while the second holds it.
      await expect(store.deleteRun({ sessionKey: 'writers', runId: 't' })).rejects.toThrow('is being written by second-worker');
    } finally {
      await second.close();
      await otherStore.close();
    }
    expect((await verifyRun({ store, sessionKey: 'writers', runId: 't' })).status).toBe('verified');
  });

  it('a saver whose lease was taken over has its next checkpoint fenced, and nothing of it stored', async () => {
    const otherStore = new PostgresRunStore({ url, owner: 'taker' });
    const first = new BackpackflowSaver({ store, sessionKey: 'fenced' });
    const taker = new BackpackflowSaver({ store: otherStore, sessionKey: 'fenced' });
    try {
      await putOne(first, 't', { a: 1 });
      // The first writer stalls past its lease (as a paused process would): the lease runs out and another takes it.
      await sql`update backpackflow.runs set lease_expires_at = now() - interval '1 second' where session_key = 'fenced' and run_id = 't'`;
      await putOne(taker, 't', { a: 2 });
      await expect(putOne(first, 't', { a: 'fenced-out-value' })).rejects.toThrow(/lease was taken over by another writer|another writer stored/);
      await putOne(taker, 't', { a: 3 });
      const all = [];
      for await (const t of taker.list({ configurable: { thread_id: 't' } })) all.push(t.checkpoint.channel_values);
      expect(all).toEqual([{ a: 3 }, { a: 2 }, { a: 1 }]);
    } finally {
      await taker.close();
      await first.close().catch(() => undefined);
      await otherStore.close();
    }
    const rows = await sql`select body from backpackflow.event_batches where session_key = 'fenced' and body like '%fenced-out-value%'`;
    expect(rows.length).toBe(0);
    expect((await verifyRun({ store, sessionKey: 'fenced', runId: 't' })).status).toBe('verified');
  });

  it('keeps any thread id as a valid run id of its session, and finds the thread again from another store', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.string({ minLength: 1, maxLength: 40 }), async (threadId) => {
        const sessionKey = `ids-${n++}`;
        const saver = new BackpackflowSaver({ store, sessionKey });
        await putOne(saver, threadId, { topic: 'x' });
        await saver.close();
        expect((await store.listRuns(sessionKey)).map((r) => r.runId)).toEqual([threadRunId(threadId)]);
        const other = new PostgresRunStore({ url, maxConnections: 1 });
        const again = new BackpackflowSaver({ store: other, sessionKey });
        try {
          const tuple = await again.getTuple({ configurable: { thread_id: threadId } });
          expect(tuple?.checkpoint.channel_values).toEqual({ topic: 'x' });
          expect(tuple?.config.configurable?.thread_id).toBe(threadId);
        } finally {
          await again.close();
          await other.close();
        }
      }),
      { numRuns: 10 },
    );
  });

  it('refuses a thread whose run id belongs to an ordinary run in the database, and deleteThread leaves that run alone', async () => {
    const flow = new Flow({ namespace: 'plain' });
    flow.addNode(class Noop extends BackpackNode {}, { id: 'noop' });
    await runFlow(flow, { store, sessionKey: 'mixed', runId: 'shared-id', input: { a: 1 } });
    const saver = new BackpackflowSaver({ store, sessionKey: 'mixed' });
    await expect(putOne(saver, 'shared-id', { topic: 'x' })).rejects.toThrow("run mixed/shared-id is not a LangGraph thread (its log records no thread id); thread 'shared-id' cannot use it");
    await expect(saver.deleteThread('shared-id')).rejects.toThrow('is not a LangGraph thread');
    await saver.close();
    expect((await store.currentRunMeta({ sessionKey: 'mixed', runId: 'shared-id' })).status).toBe('completed');
  });

  it('an edited row is refused with an error naming the run in the database, never served as a checkpoint', async () => {
    const saver = new BackpackflowSaver({ store, sessionKey: 'edited' });
    await putOne(saver, 'd', { topic: 'tides' });
    await putOne(saver, 'd', { topic: 'waves' });
    await saver.close();
    const changed = await sql`update backpackflow.event_batches set body = replace(body, '"waves"', '"storm"') where session_key = 'edited' and body like '%"waves"%'`;
    expect(changed.count).toBeGreaterThan(0);
    const again = new BackpackflowSaver({ store, sessionKey: 'edited' });
    await expect(again.getTuple({ configurable: { thread_id: 'd' } })).rejects.toThrow(store.describeLog({ sessionKey: 'edited', runId: 'd' }));
    await again.close();
  });

  it('deleteThread removes the run, its events and its keyframes from the database', async () => {
    const saver = new BackpackflowSaver({ store, sessionKey: 'gone', keyframeInterval: 1 });
    await putOne(saver, 'x', { a: 1 });
    await putOne(saver, 'y', { a: 2 });
    await saver.deleteThread('x');
    expect(await saver.getTuple({ configurable: { thread_id: 'x' } })).toBeUndefined();
    // The thread can be started again after its deletion.
    await putOne(saver, 'x', { a: 3 });
    await saver.deleteThread('x');
    await saver.close();
    for (const table of ['runs', 'event_batches', 'keyframes']) {
      const rows = await sql`select 1 from ${sql('backpackflow')}.${sql(table)} where session_key = 'gone' and run_id = 'x'`;
      expect(rows.length, table).toBe(0);
    }
    expect((await store.listRuns('gone')).map((r) => r.runId)).toEqual(['y']);
  });
});
