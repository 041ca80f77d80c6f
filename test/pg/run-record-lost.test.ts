/**
 * A run whose event rows are gone but whose record remains (its projection, its keyframes) is an existing run on
 * Postgres, as the file store's close marker makes it one: runFlow, forkRun, openNewRun, assertNewRun and the queue's
 * start refuse its id with a RunExistsError saying what is left, and nothing of it is overwritten (audit s21b M2).
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forkRun, openNewRun, runFlow } from '../../src/index.js';
import { PostgresRunStore, RunExistsError } from '../../src/store/index.js';
import { RunQueue } from '../../src/store/postgres/queue.js';
import { buildJournalFlow } from '../runtime/fixtures/journal-flow.js';
import { freshDatabase } from '../support/pg.js';

let store: PostgresRunStore;
let drop: () => Promise<void>;
let admin: postgres.Sql;
beforeAll(async () => {
  const db = await freshDatabase();
  drop = db.drop;
  store = new PostgresRunStore({ url: db.url });
  admin = postgres(db.url, { max: 1, onnotice: () => undefined });
});
afterAll(async () => {
  await admin.end();
  await store.close();
  await drop();
});

/** The rows of run `runId` that record it: its projection and its keyframes. */
async function record(runId: string): Promise<{ meta: string | null; keyframes: string[] }> {
  const [run] = await admin<{ meta: string | null }[]>`select meta from backpackflow.runs where run_id = ${runId}`;
  const keyframes = await admin<{ body: string }[]>`select body from backpackflow.keyframes where run_id = ${runId} order by step`;
  return { meta: run?.meta ?? null, keyframes: keyframes.map((k) => k.body) };
}

/** Records run `runId` (3 rounds), then deletes its event rows. */
async function lostRun(runId: string): Promise<{ meta: string | null; keyframes: string[] }> {
  await runFlow(buildJournalFlow({ rounds: 3 }), { store, runId, input: { topic: 'tides' }, keyframeInterval: 1 });
  await admin`delete from backpackflow.event_batches where run_id = ${runId}`;
  const before = await record(runId);
  expect(before.meta).toContain('"eventCount"');
  expect(before.keyframes.length).toBeGreaterThan(0);
  return before;
}

describe('a run whose event rows are all gone while its projection and keyframes remain', () => {
  it('is not started again under its id by runFlow: a RunExistsError saying what remains, and its record is left as it was', async () => {
    const before = await lostRun('lost');
    const error = await runFlow(buildJournalFlow({ rounds: 1 }), { store, runId: 'lost', input: { topic: 'new' } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RunExistsError);
    const message = (error as Error).message;
    expect(message).toContain('the event log of run default/lost');
    expect(message).toMatch(/the projection of run default\/lost .* records \d+ events \(up to seq \d+\) and \d+ keyframes? of it remains?, but it now holds no events/);
    expect(message).toContain("'backpackflow runs verify lost'");
    expect(message).toContain('it is not started again under its id');
    expect(await record('lost')).toEqual(before);
    // Nor through assertNewRun, openNewRun (the CLI's and the worker's start) or the queue.
    await expect(store.assertNewRun({ sessionKey: 'default', runId: 'lost' })).rejects.toBeInstanceOf(RunExistsError);
    await expect(openNewRun({ store, runId: 'lost' })).rejects.toBeInstanceOf(RunExistsError);
    await expect(new RunQueue(store).enqueue({ sessionKey: 'default', runId: 'lost' }, 'start', { input: { topic: 'new' } })).rejects.toThrow(RunExistsError);
    expect(await admin`select 1 from backpackflow.queue where run_id = 'lost'`).toHaveLength(0);
    expect(await record('lost')).toEqual(before);
    // The writer's lease was given back: deleting the run frees the id for a new run.
    expect(await store.deleteRun({ sessionKey: 'default', runId: 'lost' })).toBe(true);
    await expect(runFlow(buildJournalFlow({ rounds: 1 }), { store, runId: 'lost', input: { topic: 'new' } })).resolves.toMatchObject({ status: 'completed' });
  });

  it('is not the target of a fork', async () => {
    await runFlow(buildJournalFlow({ rounds: 2 }), { store, runId: 'source', input: { topic: 'waves' } });
    const before = await lostRun('fork-target');
    await expect(forkRun(buildJournalFlow({ rounds: 2 }), { store, runId: 'source', atStep: 1, newRunId: 'fork-target' })).rejects.toBeInstanceOf(RunExistsError);
    expect(await record('fork-target')).toEqual(before);
  });

  it('is refused when only its keyframes remain (its projection cleared), and when its projection is damaged', async () => {
    await lostRun('frames-only');
    await admin`update backpackflow.runs set meta = null where run_id = 'frames-only'`;
    await expect(runFlow(buildJournalFlow({ rounds: 1 }), { store, runId: 'frames-only' })).rejects.toThrow(/\d+ keyframes? of it remains?, but it now holds no events.*delete it \(delete from backpackflow\.runs where session_key = 'default' and run_id = 'frames-only'/);
    await admin`delete from backpackflow.runs where session_key = 'default' and run_id = 'frames-only'`;
    expect(await record('frames-only')).toEqual({ meta: null, keyframes: [] });
    await lostRun('damaged-meta');
    await admin`update backpackflow.runs set meta = replace(meta, '"status"', '"statuz"') where run_id = 'damaged-meta'`;
    await expect(runFlow(buildJournalFlow({ rounds: 1 }), { store, runId: 'damaged-meta' })).rejects.toThrow(/the projection of run default\/damaged-meta .* is stored \(corrupt run projection .*checksum mismatch\)/);
  });

  it('is resumed, not started again, by a worker that claims a start queued before its events were lost', async () => {
    // A start queued and run (its worker died after some steps), then its event rows lost: the claim says it was
    // started, so a worker resumes it (which fails naming the loss) rather than start it under its id for ever.
    const queue = new RunQueue(store);
    await queue.enqueue({ sessionKey: 'default', runId: 'queued-lost' }, 'start', { input: { topic: 'tides' } });
    await admin`update backpackflow.queue set state = 'claimed', claimed_by = 'dead', claimed_until = now() - interval '1 second' where run_id = 'queued-lost'`;
    await lostRun('queued-lost');
    const job = await queue.claim('w', 10_000);
    expect(job).toMatchObject({ runId: 'queued-lost', kind: 'start', hadEvents: true });
  });

  it('leaves the row of a queued start (documents, no projection) free for the start', async () => {
    const queue = new RunQueue(store);
    await queue.enqueue({ sessionKey: 'default', runId: 'queued' }, 'start', { input: { topic: 'tides' } }, { flow: { v: 1 } });
    await store.assertNewRun({ sessionKey: 'default', runId: 'queued' });
    const job = await queue.claim('w2', 10_000);
    expect(job).toMatchObject({ runId: 'queued', hadEvents: false });
    const newRun = await openNewRun({ store, runId: 'queued' });
    await expect(runFlow(buildJournalFlow({ rounds: 1 }), { newRun, input: { topic: 'tides' } })).resolves.toMatchObject({ status: 'completed' });
  });
});
