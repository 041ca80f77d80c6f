/**
 * Hardening of the Postgres store: fencing tokens never repeat for a run id (a run deleted and started again keeps a
 * stale writer of the old run out), the queue keeps no secret of a finished job (its input, its failure message),
 * and the projection row is sealed and checked as the file store's run.meta.json is.
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordRunFlow } from '../../src/cli/backpackflow/flows.js';
import { documentCollector } from '../../src/cli/backpackflow/recipe.js';
import type { StreamEvent } from '../../src/events/types.js';
import { sharedHashBackend } from '../../src/hash/blake3.js';
import { seal } from '../../src/hash/sealed.js';
import { FencedError, ProjectionStoreError, type RunWriter } from '../../src/store/index.js';
import { MIGRATIONS, migrate } from '../../src/store/postgres/migrations.js';
import { RunQueue } from '../../src/store/postgres/queue.js';
import { PostgresRunStore } from '../../src/store/postgres/run-store.js';
import { makeEvent } from '../store/helpers.js';
import { plainEnv } from '../support/env.js';
import { freshDatabase } from '../support/pg.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(root, 'dist', 'cli', 'backpackflow.js');
const MODULES = join(root, 'test', 'pg', 'fixtures', 'pg-hardening-nodes.mjs');

/** A secret of the built-in catalogue (a GitHub token). */
const SECRET = `ghp_${'aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5'}`;

function step(runId: string, seq: number, n: number): StreamEvent[] {
  return [makeEvent(runId, seq, { type: 'node.started', nodeId: `n${n}` }), makeEvent(runId, seq + 1, { type: 'checkpoint.saved', payload: { step: n, position: [], keyframe: false } })];
}

function completed(runId: string, seq: number): StreamEvent[] {
  return [makeEvent(runId, seq, { type: 'run.completed', payload: {} })];
}

describe('Postgres store hardening', () => {
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

  async function seqs(store: PostgresRunStore, ref: { sessionKey: string; runId: string }): Promise<number[]> {
    const out: number[] = [];
    for await (const { event } of store.readVerified(ref)) out.push(event.seq);
    return out;
  }

  describe('fencing tokens', () => {
    it('a writer of a deleted run is fenced out of the run started again under its id, however often that happens', async () => {
      let case_ = 0;
      const operator = open({ owner: 'operator' });
      const worker = open({ owner: 'worker' });
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 3 }), fc.boolean(), async (cycles, stepsBefore, sameStore) => {
          const ref = { sessionKey: 'fence', runId: `cycle-${case_++}` };
          const stale: RunWriter[] = [];
          let writer: RunWriter | undefined;
          for (let cycle = 0; cycle <= cycles; cycle++) {
            // A new run under the id: by the deleting store itself (a LangGraph deleteThread), or by another worker.
            const store = sameStore ? operator : worker;
            writer = await store.openWriter(ref, { fresh: true });
            for (let i = 0; i < stepsBefore; i++) await writer.commit(step(ref.runId, 1 + 2 * i, i + 1));
            if (cycle === cycles) break;
            stale.push(writer);
            // The writer stalls past its lease; the run is deleted.
            await admin`update backpackflow.runs set lease_expires_at = now() - interval '1 second' where session_key = ${ref.sessionKey} and run_id = ${ref.runId}`;
            expect(await operator.deleteRun(ref)).toBe(true);
          }
          // Every stale writer wakes up and writes on: nothing of it is stored, the new run keeps its lease.
          for (const old of stale) {
            await expect(old.commit(step(ref.runId, 1 + 2 * stepsBefore, stepsBefore + 1))).rejects.toBeInstanceOf(FencedError);
            await old.close();
          }
          const run = await operator.currentRunMeta(ref);
          expect(run.eventCount).toBe(2 * stepsBefore);
          expect(await operator.writerAlive(ref)).toBe(true);
          await writer!.commit([...step(ref.runId, 1 + 2 * stepsBefore, stepsBefore + 1), ...completed(ref.runId, 3 + 2 * stepsBefore)]);
          await writer!.close();
          expect(await seqs(operator, ref)).toEqual(Array.from({ length: 2 * stepsBefore + 3 }, (_, i) => i + 1));
          expect((await operator.verifyLog(ref)).ok).toBe(true);
        }),
        { numRuns: 8 },
      );
    });

    it('a database upgraded to migration 6 hands out tokens after every token it had', async () => {
      const older = await freshDatabase();
      const sql = postgres(older.url, { max: 1, onnotice: () => undefined });
      try {
        await migrate(sql, MIGRATIONS.filter((m) => m.version <= 5));
        await sql`insert into backpackflow.runs (session_key, run_id, writer_token) values ('s', 'old', 41)`;
        const store = new PostgresRunStore({ url: older.url });
        try {
          const writer = await store.openWriter({ sessionKey: 's', runId: 'new' }, { fresh: true });
          await writer.close();
          const [row] = await sql<{ writer_token: string }[]>`select writer_token from backpackflow.runs where run_id = 'new'`;
          expect(Number(row!.writer_token)).toBeGreaterThan(41);
        } finally {
          await store.close();
        }
      } finally {
        await sql.end();
        await older.drop();
      }
    });
  });

  describe('the queue keeps no secret of a finished job', () => {
    async function queueRows(sessionKey: string): Promise<{ payload: string | null; outcome: string | null }[]> {
      return await admin<{ payload: string | null; outcome: string | null }[]>`select payload, outcome from backpackflow.queue where session_key = ${sessionKey} order by run_id`;
    }

    it('keeps the input as given until the job is claimed, then stores its payload and outcome redacted when it ends', async () => {
      const store = open();
      const queue = new RunQueue(store);
      const first = { sessionKey: 'secrets', runId: 'a' };
      const second = { sessionKey: 'secrets', runId: 'b' };
      await queue.enqueue(first, 'start', { input: { token: SECRET, n: 1 } });
      await queue.enqueue(second, 'resume', { resume: { answer: `use ${SECRET}` } });
      // Waiting for a worker: the worker needs the input as given.
      expect((await queueRows('secrets'))[0]!.payload).toContain(SECRET);
      const a = await queue.claim('worker-a', 60_000);
      expect(a!.payload).toEqual({ input: { token: SECRET, n: 1 } });
      // Ended by the next claim (one statement), then the second on its own.
      const b = await queue.claim('worker-a', 60_000, { job: a!, outcome: `failed: the service refused the token ${SECRET}` });
      expect(b!.payload).toEqual({ resume: { answer: `use ${SECRET}` } });
      await queue.finish(b!, 'worker-a', `failed: Authorization: Bearer ${SECRET}`);
      const rows = await queueRows('secrets');
      for (const row of rows) expect(`${row.payload} ${row.outcome}`).not.toContain(SECRET);
      expect(JSON.parse(rows[0]!.payload!)).toEqual({ input: { token: '[REDACTED]', n: 1 } });
      expect(rows[0]!.outcome).toBe('failed: the service refused the token [REDACTED]');
      expect((await queue.entries()).filter((e) => e.sessionKey === 'secrets').map((e) => e.outcome)).toEqual(rows.map((r) => r.outcome));
    });

    it('a worker whose run fails quoting a secret prints and stores the failure redacted', async () => {
      const store = open();
      const ref = { sessionKey: 'default', runId: 'refused' };
      const collected = documentCollector();
      const config = { version: '2.0.0', namespace: 'refused', nodes: [{ type: 'Refused', id: 'refused', params: {} }], edges: [] };
      await recordRunFlow(collected, { v: 1, flow: { kind: 'config' }, modules: [MODULES] }, config);
      await new RunQueue(store).enqueue(ref, 'start', { input: { token: SECRET } }, collected.documents);
      const child = spawn(process.execPath, [BIN, 'worker', '--database-url', url, '--modules', MODULES, '--poll-ms', '100', '--exit-when-idle'], { env: plainEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr.on('data', (d: Buffer) => (output += d.toString()));
      expect(await new Promise((resolve) => child.on('exit', resolve))).toBe(0);
      expect(output).toMatch(/default\/refused failed: .*the service refused the token \[REDACTED\]/);
      expect(output).not.toContain(SECRET);
      const [row] = await admin<{ payload: string; outcome: string }[]>`select payload, outcome from backpackflow.queue where session_key = 'default' and run_id = 'refused'`;
      expect(`${row!.payload} ${row!.outcome}`).not.toContain(SECRET);
      expect(row!.outcome).toContain('[REDACTED]');
    });
  });

  describe('the projection row', () => {
    async function recorded(runId: string, steps = 3): Promise<{ store: PostgresRunStore; ref: { sessionKey: string; runId: string } }> {
      const store = open();
      const ref = { sessionKey: 'meta', runId };
      const writer = await store.openWriter(ref, { fresh: true });
      for (let i = 0; i < steps; i++) await writer.commit(step(runId, 1 + 2 * i, i + 1));
      await writer.commit(completed(runId, 1 + 2 * steps));
      await writer.close();
      return { store, ref };
    }

    function warningsOf(): { warnings: string[]; stop: () => void } {
      const warnings: string[] = [];
      const listener = (warning: Error): void => void warnings.push(`${warning.name}: ${warning.message}`);
      process.on('warning', listener);
      return { warnings, stop: () => process.off('warning', listener) };
    }

    it('an edited projection is not served: it is rebuilt from the log, with a warning naming it', async () => {
      const { store, ref } = await recorded('edited');
      await admin`update backpackflow.runs set meta = replace(meta, '"status":"completed"', '"status":"failed"') where session_key = 'meta' and run_id = 'edited'`;
      await expect(store.loadRunMeta(ref)).rejects.toThrow(/corrupt run projection the projection of run meta\/edited in .*: checksum mismatch/);
      const seen = warningsOf();
      try {
        expect((await store.currentRunMeta(ref)).status).toBe('completed');
        await new Promise((resolve) => setImmediate(resolve));
        expect(seen.warnings.join('\n')).toMatch(/ProjectionStoreRebuild: corrupt run projection the projection of run meta\/edited .*checksum mismatch; rebuilding it from the run's log/);
      } finally {
        seen.stop();
      }
    });

    it("another run's projection copied into the row is not served", async () => {
      const { store, ref } = await recorded('copy-target', 3);
      await recorded('copy-source', 3);
      await admin`update backpackflow.runs set meta = (select meta from backpackflow.runs where run_id = 'copy-source') where run_id = 'copy-target'`;
      await expect(store.loadRunMeta(ref)).rejects.toThrow(/it is the projection of run meta\/copy-source, not of meta\/copy-target/);
      await expect(store.loadRunMeta(ref)).rejects.toBeInstanceOf(ProjectionStoreError);
      expect((await store.currentRunMeta(ref, () => undefined)).runId).toBe('copy-target');
    });

    it('a projection written before seals (plain JSON) still reads', async () => {
      const { store, ref } = await recorded('legacy', 2);
      const meta = await store.loadRunMeta(ref);
      await admin`update backpackflow.runs set meta = ${JSON.stringify(meta)} where run_id = 'legacy'`;
      expect(await store.loadRunMeta(ref)).toEqual(meta);
    });

    it('a projection ahead of the log (more events, or a later seq) is reported on every read, kept, and its run not continued', async () => {
      for (const [runId, cut] of [['cut-count', 'events'], ['cut-seq', 'seq']] as const) {
        const { store, ref } = await recorded(runId, 3);
        const before = await store.loadRunMeta(ref);
        if (cut === 'events') {
          // The log loses its last batch.
          await admin`delete from backpackflow.event_batches where run_id = ${runId} and first_line = (select max(first_line) from backpackflow.event_batches where run_id = ${runId})`;
        } else {
          // A sealed projection that recorded a later seq than the log's last at the same count.
          await admin`update backpackflow.runs set meta = ${seal({ ...before, lastSeq: before!.lastSeq + 5 }, await sharedHashBackend())} where run_id = ${runId}`;
        }
        const stored = await admin<{ meta: string }[]>`select meta from backpackflow.runs where run_id = ${runId}`;
        for (let read = 0; read < 2; read++) {
          const warnings: string[] = [];
          await store.currentRunMeta(ref, (w) => warnings.push(w));
          expect(warnings).toHaveLength(1);
          expect(warnings[0]).toMatch(new RegExp(`the log lost its tail .*the projection is kept as the evidence .*run_id = '${runId}'`));
        }
        await expect(open().openWriter(ref, { fresh: false })).rejects.toThrow(/the log lost its tail.*The run is not continued/);
        expect(await admin<{ meta: string }[]>`select meta from backpackflow.runs where run_id = ${runId}`).toEqual(stored);
        expect(await store.writerAlive(ref)).toBe(false);
      }
    });
  });
});
