/** What the Postgres run store adds to the conformance suite: fencing, damage detection, migrations. */
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckpointStoreError, EventStoreError, FencedError, LockError, ProjectionStoreError } from '../../src/store/index.js';
import { MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { PostgresRunStore } from '../../src/store/postgres/run-store.js';
import { RunQueue } from '../../src/store/postgres/queue.js';
import type { StreamEvent } from '../../src/events/types.js';
import { makeEvent } from '../store/helpers.js';
import { freshDatabase } from '../support/pg.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const run = promisify(execFile);

async function until(done: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function batch(runId: string, seq: number, step: number): StreamEvent[] {
  return [makeEvent(runId, seq, { type: 'node.started', nodeId: `n${step}` }), makeEvent(runId, seq + 1, { type: 'checkpoint.saved', payload: { step, position: [], keyframe: false } })];
}

describe('Postgres run store', () => {
  let url: string;
  let drop: () => Promise<void>;
  let admin: postgres.Sql;
  const stores: PostgresRunStore[] = [];
  const open = (options: { leaseMs?: number; owner?: string } = {}): PostgresRunStore => {
    const store = new PostgresRunStore({ url, ...options });
    stores.push(store);
    return store;
  };

  beforeAll(async () => {
    ({ url, drop } = await freshDatabase());
    admin = postgres(url, { max: 1, onnotice: () => undefined });
  });
  afterAll(async () => {
    for (const store of stores) await store.close();
    await admin.end();
    await drop();
  });

  it('fences a writer whose lease was taken over: its commits are refused and nothing of them is stored', async () => {
    const ref = { sessionKey: 's', runId: 'fenced' };
    const a = await open({ owner: 'worker-a' }).openWriter(ref, { fresh: true });
    await a.commit(batch(ref.runId, 1, 1));
    // Worker A stalls past its lease (a GC pause, a partition): its lease runs out and worker B takes the run.
    await admin`update backpackflow.runs set lease_expires_at = now() - interval '1 second' where run_id = ${ref.runId}`;
    const b = await open({ owner: 'worker-b' }).openWriter(ref, { fresh: false });
    expect(b.lastSeq).toBe(2);
    await b.commit(batch(ref.runId, 3, 2));
    // A wakes up and writes what it believes is step 2, then step 3: both refused.
    await expect(a.commit(batch(ref.runId, 3, 2))).rejects.toBeInstanceOf(FencedError);
    await expect(a.commit(batch(ref.runId, 5, 3))).rejects.toThrow(/cannot go on/);
    await b.commit(batch(ref.runId, 5, 3));
    await b.close();
    await a.close();
    const store = open();
    const read: string[] = [];
    for await (const { event } of store.readVerified(ref)) read.push(`${event.seq}:${event.nodeId ?? ''}`);
    expect(read).toEqual(['1:n1', '2:', '3:n2', '4:', '5:n3', '6:']);
    expect((await store.loadRunMeta(ref))!.lastSeq).toBe(6);
  });

  it('refuses a second writer while the lease is live, naming the holder', async () => {
    const ref = { sessionKey: 's', runId: 'held' };
    const a = await open({ owner: 'worker-a' }).openWriter(ref, { fresh: true });
    await expect(open({ owner: 'worker-b' }).openWriter(ref, { fresh: false })).rejects.toThrow(LockError);
    await expect(open().openWriter(ref, { fresh: false })).rejects.toThrow(/worker-a/);
    await a.close();
  });

  it('keeps the lease of a live writer renewed past its length', async () => {
    const ref = { sessionKey: 's', runId: 'renewed' };
    const a = await open({ leaseMs: 300 }).openWriter(ref, { fresh: true });
    await new Promise((resolve) => setTimeout(resolve, 900));
    await expect(open().openWriter(ref, { fresh: false })).rejects.toBeInstanceOf(LockError);
    await a.commit(batch(ref.runId, 1, 1));
    await a.close();
  });

  it('gives the lease up with the batch that ends the run: closing sends no statement, and another writer may take the run at once', async () => {
    const ref = { sessionKey: 's', runId: 'ended' };
    const statements: string[] = [];
    const store = new PostgresRunStore({ url, owner: 'worker-a', onStatement: (q) => statements.push(q) });
    stores.push(store);
    const a = await store.openWriter(ref, { fresh: true });
    await a.commit(batch(ref.runId, 1, 1));
    expect(await store.writerAlive(ref)).toBe(true);
    await a.commit([makeEvent(ref.runId, 3, { type: 'run.completed', payload: { durationMs: 1, steps: 1, action: 'done' } })]);
    expect(await store.writerAlive(ref)).toBe(false);
    const before = statements.length;
    await a.close();
    expect(statements.length).toBe(before);
    const b = await open({ owner: 'worker-b' }).openWriter(ref, { fresh: false });
    expect(b.lastSeq).toBe(3);
    await b.close();
  });

  it('keeps the lease past the last batch while a keyframe is still to be written, and gives it up on close', async () => {
    const ref = { sessionKey: 's', runId: 'ended-keyframe' };
    const store = open({ owner: 'worker-a' });
    const a = await store.openWriter(ref, { fresh: true });
    await a.commit(batch(ref.runId, 1, 1));
    const save = a.takeKeyframe({ step: 1, createdAt: 1, position: [], state: { kind: 'keyframe', backpack: { a: 1 } } });
    await a.commit([makeEvent(ref.runId, 3, { type: 'run.failed', payload: { durationMs: 1, error: { name: 'Error', message: 'boom' } } })]);
    expect(await store.writerAlive(ref)).toBe(true);
    await save.write();
    await a.close();
    expect(await store.writerAlive(ref)).toBe(false);
    expect(await store.keyframeSteps(ref)).toEqual([1]);
  });

  it('never lets a lease, keyframe or claim that commits without waiting for the disk change how a step commits', async () => {
    // One connection: every statement below runs on it, so a setting left behind would reach the step's commit.
    const store = new PostgresRunStore({ url, maxConnections: 1 });
    stores.push(store);
    const sql = await store.sql();
    const setting = async (): Promise<string> => (await sql<{ s: string }[]>`select current_setting('synchronous_commit') as s`)[0]!.s;
    const ref = { sessionKey: 's', runId: 'sync' };
    const w = await store.openWriter(ref, { fresh: true });
    expect(await setting()).toBe('on');
    await w.commit(batch(ref.runId, 1, 1));
    await w.takeKeyframe({ step: 1, createdAt: 1, position: [], state: { kind: 'keyframe', backpack: {} } }).write();
    expect(await setting()).toBe('on');
    await w.close();
    const queue = new RunQueue(store);
    await queue.enqueue({ sessionKey: 's', runId: 'sync-job' }, 'start', {});
    const job = await queue.claim('worker-a', 60_000);
    expect(await setting()).toBe('on');
    await queue.finish(job!, 'worker-a', 'completed');
    expect(await setting()).toBe('on');
  });

  it("with durability 'never' stores and fences steps as with 'batch', and refuses a durability it does not know", async () => {
    const ref = { sessionKey: 's', runId: 'lazy' };
    const store = open({ owner: 'worker-a' });
    const a = await store.openWriter(ref, { fresh: true, durability: 'never' });
    await a.commit(batch(ref.runId, 1, 1));
    await admin`update backpackflow.runs set lease_expires_at = now() - interval '1 second' where run_id = ${ref.runId}`;
    const b = await open({ owner: 'worker-b' }).openWriter(ref, { fresh: false, durability: 'never' });
    await expect(a.commit(batch(ref.runId, 3, 2))).rejects.toBeInstanceOf(FencedError);
    await b.commit(batch(ref.runId, 3, 2));
    await b.close();
    await a.close();
    const seqs: number[] = [];
    for await (const { event } of store.readVerified(ref)) seqs.push(event.seq);
    expect(seqs).toEqual([1, 2, 3, 4]);
    await expect(store.openWriter({ sessionKey: 's', runId: 'lazy-bad' }, { fresh: true, durability: 'sometimes' as never })).rejects.toThrow(/durability must be 'always', 'batch' or 'never', got "sometimes"/);
  });

  it('reports an edited or deleted event row and never serves it', async () => {
    const ref = { sessionKey: 's', runId: 'edited' };
    const store = open();
    const w = await store.openWriter(ref, { fresh: true });
    for (let step = 1; step <= 3; step++) await w.commit(batch(ref.runId, step * 2 - 1, step));
    await w.close();
    // Each step's batch is one row (migration 5); line 3 (numbered from 0: 2) is the first line of the second.
    await admin`update backpackflow.event_batches set body = replace(body, '"n2"', '"nX"') where run_id = ${ref.runId} and first_line = 2`;
    const read = async (options = {}): Promise<number[]> => {
      const out: number[] = [];
      for await (const { event } of store.readVerified(ref, options)) out.push(event.seq);
      return out;
    };
    await expect(read()).rejects.toThrow(/lines 3-4 do not match the chain hash on line 4/);
    const warnings: string[] = [];
    expect(await read({ onCorrupt: 'skip', onWarning: (w: string) => warnings.push(w) })).toEqual([1, 2, 5, 6]);
    expect(warnings.join('\n')).toContain('run s/edited');
    // Line 5 (the first of the third batch) cut out of its row.
    await admin`update backpackflow.event_batches set body = substr(body, strpos(body, E'\n') + 1), first_line = 5 where run_id = ${ref.runId} and first_line = 4`;
    await expect(read({ from: 4 })).rejects.toThrow(EventStoreError);
    await expect(read({ from: 4 })).rejects.toThrow(/line 5 is missing \(the next stored line is 6\)/);
  });

  it('reports a row stored over the one before it (a line stored twice)', async () => {
    const ref = { sessionKey: 's', runId: 'overlapped' };
    const store = open();
    const w = await store.openWriter(ref, { fresh: true });
    for (let step = 1; step <= 3; step++) await w.commit(batch(ref.runId, step * 2 - 1, step));
    await w.close();
    await admin`update backpackflow.event_batches set first_line = 3 where run_id = ${ref.runId} and first_line = 4`;
    await expect(store.readPage(ref, 10, 0)).rejects.toThrow(/line 4 is stored twice: the log was changed there/);
    const verified = await store.verifyLog(ref);
    expect(verified).toMatchObject({ ok: false, verifiedLines: 4, firstBadLine: 5 });
    expect(verified.problem).toMatch(/run s\/overlapped.*line 4 is stored twice/);
  });

  it('refuses, as fenced, a commit whose first line another writer stored first, even with a token that is still the run\'s', async () => {
    const ref = { sessionKey: 's', runId: 'overtaken' };
    const store = open({ owner: 'worker-a' });
    const a = await store.openWriter(ref, { fresh: true });
    await a.commit(batch(ref.runId, 1, 1));
    // Another writer's batch at lines 3-4, stored behind this writer's view of the log (a view read before that
    // writer's commit): the key (run, first line) is taken.
    await admin`insert into backpackflow.event_batches (session_key, run_id, first_line, last_line, last_seq, body) values ('s', ${ref.runId}, 2, 3, 4, 'theirs')`;
    await expect(a.commit(batch(ref.runId, 3, 2))).rejects.toThrow(/another writer stored lines 3-4 first: this writer lost the run/);
    await expect(a.commit(batch(ref.runId, 5, 3))).rejects.toBeInstanceOf(FencedError);
    await a.close();
    const [row] = await admin<{ body: string }[]>`select body from backpackflow.event_batches where run_id = ${ref.runId} and first_line = 2`;
    expect(row!.body).toBe('theirs');
    expect((await admin`select 1 from backpackflow.event_batches where run_id = ${ref.runId} and first_line = 4`).length).toBe(0);
  });

  it('announces a step only while a tail is registered on its run, and a tail registers itself, renewed while it listens', async () => {
    const ref = { sessionKey: 's', runId: 'tailed' };
    const store = open({ leaseMs: 300 });
    const other = { sessionKey: 's', runId: 'untailed' };
    const notices: string[] = [];
    const listener = await (await store.sql()).listen('backpackflow_events', (payload) => notices.push(payload));
    const w = await store.openWriter(ref, { fresh: true });
    const u = await store.openWriter(other, { fresh: true });
    await w.commit(batch(ref.runId, 1, 1));
    await u.commit(batch(other.runId, 1, 1));
    let seen = 0;
    const stop = await store.onCommits(ref, () => seen++);
    // Past the registration's length: renewed while the tail listens.
    await new Promise((resolve) => setTimeout(resolve, 700));
    await w.commit(batch(ref.runId, 3, 2));
    await u.commit(batch(other.runId, 3, 2));
    await until(() => seen === 1);
    await stop();
    // Past the registration's length once its renewals stopped: it has run out.
    await new Promise((resolve) => setTimeout(resolve, 800));
    await w.commit(batch(ref.runId, 5, 3));
    await w.close();
    await u.close();
    await new Promise((resolve) => setTimeout(resolve, 100));
    await listener.unlisten();
    expect(notices).toEqual(['s/tailed']);
    expect(seen).toBe(1);
  });

  it('registers a tail on a run not stored yet, which a fresh writer then takes as any new run', async () => {
    const ref = { sessionKey: 's', runId: 'tailed-early' };
    const store = open();
    let seen = 0;
    const stop = await store.onCommits(ref, () => seen++);
    expect(await store.listRuns('s')).not.toContainEqual(ref);
    const w = await store.openWriter(ref, { fresh: true });
    await w.commit(batch(ref.runId, 1, 1));
    await w.close();
    await until(() => seen === 1);
    await stop();
    expect(await store.listRuns('s')).toContainEqual(ref);
  });

  it('reports a damaged keyframe and a damaged projection, naming them', async () => {
    const ref = { sessionKey: 's', runId: 'damaged' };
    const store = open();
    const w = await store.openWriter(ref, { fresh: true });
    await w.commit(batch(ref.runId, 1, 1));
      await w.takeKeyframe({ step: 1, createdAt: 1, position: [], state: { kind: 'keyframe', backpack: { a: 1 } } }).write();
    await w.close();
    await admin`update backpackflow.keyframes set body = replace(body, '"a":1', '"a":2') where run_id = ${ref.runId}`;
    await expect(store.loadKeyframe(ref, 1)).rejects.toThrow(CheckpointStoreError);
    await expect(store.loadKeyframe(ref, 1)).rejects.toThrow(/keyframe of step 1 of run s\/damaged.*checksum mismatch/);
    await admin`update backpackflow.runs set meta = '{"v":1' where run_id = ${ref.runId}`;
    await expect(store.loadRunMeta(ref)).rejects.toThrow(ProjectionStoreError);
    // The projection is rebuilt from the log when it is damaged.
    expect((await store.currentRunMeta(ref)).eventCount).toBe(2);
  });

  it('claims the oldest ready job with what its worker needs (documents, whether it has events) and marks the previous one done in the same statement', async () => {
    const store = open();
    const queue = new RunQueue(store);
    const first = { sessionKey: 'q', runId: 'first' };
    const second = { sessionKey: 'q', runId: 'second' };
    await queue.enqueue(first, 'start', { input: { x: 1 } }, { flow: { nodes: ['a'] }, recipe: { v: 1 } });
    await queue.enqueue(second, 'resume', {});
    await expect(queue.enqueue(second, 'resume', {})).rejects.toThrow(/already queued/);
    const a = await queue.claim('worker-a', 60_000);
    expect(a).toMatchObject({ ...first, kind: 'start', payload: { input: { x: 1 } }, attempts: 1, hadEvents: false });
    expect(await store.checkDocument(first, 'flow', a!.documents.flow)).toEqual({ nodes: ['a'] });
    expect(await store.checkDocument(first, 'recipe', a!.documents.recipe)).toEqual({ v: 1 });
    const w = await store.openWriter(second, { fresh: true });
    await w.commit(batch(second.runId, 1, 1));
    await w.close();
    // Another owner's claim does not finish worker-a's job.
    const b = await queue.claim('worker-b', 60_000, { job: a!, outcome: 'completed' });
    expect(b).toMatchObject({ ...second, kind: 'resume', documents: {}, hadEvents: true });
    expect((await queue.entries()).filter((e) => e.sessionKey === 'q').map((e) => [e.runId, e.state, e.outcome])).toEqual([['first', 'claimed', null], ['second', 'claimed', null]]);
    expect(await queue.claim('worker-a', 60_000, { job: a!, outcome: 'completed' })).toBeUndefined();
    expect((await queue.entries()).filter((e) => e.sessionKey === 'q').map((e) => [e.runId, e.state, e.outcome])).toEqual([['first', 'done', 'completed'], ['second', 'claimed', null]]);
    // A stored document that is not JSON is an error naming it when the worker asks for it.
    await expect(store.checkDocument(first, 'flow', '{')).rejects.toThrow(/corrupt the flow document of run q\/first/);
  });

  it("queues a start with its documents in one statement, and a refused start records nothing over another's", async () => {
    const store = open();
    const queue = new RunQueue(store);
    const ref = { sessionKey: 'q2', runId: 'queued' };
    await queue.enqueue(ref, 'start', {}, { flow: { who: 'first' }, recipe: { v: 1 } });
    // A second start of the same id, while the first is queued: refused, and the first's documents stay.
    await expect(queue.enqueue(ref, 'start', {}, { flow: { who: 'second' } })).rejects.toThrow(/already queued/);
    expect(await store.loadDocument(ref, 'flow')).toEqual({ who: 'first' });
    // A start of an id a live writer holds (a `run` of the same id in progress): refused, naming the holder.
    const held = { sessionKey: 'q2', runId: 'held' };
    const w = await open({ owner: 'starter' }).openWriter(held, { fresh: true });
    await w.saveDocument('flow', { who: 'running' });
    await expect(queue.enqueue(held, 'start', {}, { flow: { who: 'queued' } })).rejects.toThrow(/q2\/held is being started or run by starter/);
    expect(await store.loadDocument(held, 'flow')).toEqual({ who: 'running' });
    await w.commit(batch(held.runId, 1, 1));
    await w.close();
    // A start of an id that has a recorded run: refused, even with no job queued.
    await expect(queue.enqueue(held, 'start', {}, { flow: { who: 'queued' } })).rejects.toThrow(/already has a recorded run/);
    expect(await store.loadDocument(held, 'flow')).toEqual({ who: 'running' });
    await expect(queue.enqueue(held, 'resume', {}, { flow: {} })).rejects.toThrow(/only a start records documents/);
    expect((await queue.entries()).filter((e) => e.sessionKey === 'q2').map((e) => e.runId)).toEqual(['queued']);
  });

  it('a queued start that races a writer taking the run waits for it, then is refused, and records nothing over its documents', async () => {
    const store = open();
    const queue = new RunQueue(store);
    const ref = { sessionKey: 'q3', runId: 'race' };
    await admin`insert into backpackflow.runs (session_key, run_id) values (${ref.sessionKey}, ${ref.runId})`;
    let enqueued: Promise<unknown> | undefined;
    // Another start takes the lease and records its flow in a transaction that commits while the enqueue runs.
    await admin.begin(async (tx) => {
      await tx`update backpackflow.runs set lease_owner = 'racer', lease_expires_at = now() + interval '1 minute', writer_token = writer_token + 1 where session_key = ${ref.sessionKey} and run_id = ${ref.runId}`;
      await tx`insert into backpackflow.run_documents (session_key, run_id, name, body) values (${ref.sessionKey}, ${ref.runId}, 'flow', '{"who":"racer"}')`;
      enqueued = queue.enqueue(ref, 'start', {}, { flow: { who: 'queued' } }).then(
        () => 'queued',
        (error: unknown) => error,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
    });
    expect(String(await enqueued)).toMatch(/q3\/race is being started or run by racer/);
    expect(await store.loadDocument(ref, 'flow')).toEqual({ who: 'racer' });
    expect((await queue.entries()).filter((e) => e.sessionKey === 'q3')).toEqual([]);
  });

  it("fences a new run's documents: a writer whose lease was taken over records nothing over the new holder's", async () => {
    const ref = { sessionKey: 's', runId: 'docs-fenced' };
    const a = await open({ owner: 'start-a' }).openWriter(ref, { fresh: true });
    await a.saveDocument('flow', { who: 'a' });
    await admin`update backpackflow.runs set lease_expires_at = now() - interval '1 second' where run_id = ${ref.runId}`;
    const b = await open({ owner: 'start-b' }).openWriter(ref, { fresh: true });
    await b.saveDocument('flow', { who: 'b' });
    await expect(a.saveDocument('flow', { who: 'a again' })).rejects.toBeInstanceOf(FencedError);
    expect(await open().loadDocument(ref, 'flow')).toEqual({ who: 'b' });
    await b.close();
    await a.close();
  });

  it("fences a document against a take-over that commits while it is stored: the old writer's document is refused, the new holder's stays", async () => {
    const ref = { sessionKey: 's', runId: 'docs-racing' };
    const a = await open({ owner: 'start-a' }).openWriter(ref, { fresh: true });
    let saved: Promise<unknown> | undefined;
    // Another writer takes the run over and records its flow in a transaction that commits while a's document is stored.
    await admin.begin(async (tx) => {
      await tx`update backpackflow.runs set lease_owner = 'racer', lease_expires_at = now() + interval '1 minute', writer_token = writer_token + 1 where session_key = ${ref.sessionKey} and run_id = ${ref.runId}`;
      await tx`insert into backpackflow.run_documents (session_key, run_id, name, body) values (${ref.sessionKey}, ${ref.runId}, 'flow', '{"who":"racer"}')`;
      saved = a.saveDocument('flow', { who: 'a' }).then(
        () => 'saved',
        (error: unknown) => error,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
    });
    expect(await saved).toBeInstanceOf(FencedError);
    expect(await open().loadDocument(ref, 'flow')).toEqual({ who: 'racer' });
    await a.close().catch(() => undefined);
  });

  it('migrates a new database exactly once when several processes use it first at the same time', async () => {
    const fresh = await freshDatabase();
    try {
      const script = `import { PostgresRunStore } from './src/store/postgres/run-store.ts';
        const store = new PostgresRunStore({ url: process.argv[1] });
        await store.listRuns();
        await store.close();`;
      const children = Array.from({ length: 4 }, () => run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, fresh.url], { cwd: root }));
      await Promise.all(children);
      const sql = postgres(fresh.url, { max: 1, onnotice: () => undefined });
      try {
        const rows = await sql<{ version: number }[]>`select version from backpackflow.migrations order by version`;
        expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
      } finally {
        await sql.end();
      }
    } finally {
      await fresh.drop();
    }
  });

  it('refuses a database whose schema is newer than this code', async () => {
    const fresh = await freshDatabase();
    try {
      const first = new PostgresRunStore({ url: fresh.url });
      await first.listRuns();
      await first.close();
      const sql = postgres(fresh.url, { max: 1, onnotice: () => undefined });
      await sql`insert into backpackflow.migrations (version, name) values (999, 'from the future')`;
      await sql.end();
      const second = new PostgresRunStore({ url: fresh.url });
      await expect(second.listRuns()).rejects.toThrow(/schema version 999.*upgrade backpackflow/);
      await second.close();
    } finally {
      await fresh.drop();
    }
  });
});
