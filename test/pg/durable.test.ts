/** Durable runs on Postgres record, read back, resume and fork exactly as they do in files. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forkRun, listRuns, loadRunPoint, resumeRun, runFlow, type RunLocation } from '../../src/index.js';
import type { StreamEvent } from '../../src/events/types.js';
import { FileRunStore, PostgresRunStore, RunExistsError, type RunStore } from '../../src/store/index.js';
import { buildJournalFlow } from '../runtime/fixtures/journal-flow.js';
import { freshDatabase } from '../support/pg.js';

/** An event without what differs between two runs of the same flow (ids, times, spans). */
function shape(event: StreamEvent): unknown {
  const { id: _id, timestamp: _t, spanId: _s, parentSpanId: _p, ...rest } = event;
  return JSON.parse(JSON.stringify(rest, (key, value: unknown) => (['durationMs', 'startedAt', 'endedAt', 'at', 'ts', 'createdAt', 'updatedAt', 'timestamp'].includes(key) ? 0 : value)));
}

async function events(store: RunStore, runId: string): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const { event } of store.readVerified({ sessionKey: 'default', runId })) out.push(shape(event));
  return out;
}

describe('durable runs on Postgres', () => {
  let pg: PostgresRunStore;
  let files: FileRunStore;
  let dataDir: string;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const db = await freshDatabase();
    drop = db.drop;
    pg = new PostgresRunStore({ url: db.url });
    dataDir = mkdtempSync(join(tmpdir(), 'bpf-pg-durable-'));
    files = new FileRunStore(dataDir);
  });
  afterAll(async () => {
    await pg.close();
    await drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const on = (store: RunStore): RunLocation => ({ store });

  it('records the same events, projection and states as the file store, keyframes included', async () => {
    for (const store of [pg, files]) await runFlow(buildJournalFlow({ rounds: 7 }), { ...on(store), runId: 'same', keyframeInterval: 3, input: { topic: 'tides' } });
    expect(await events(pg, 'same')).toEqual(await events(files, 'same'));
    expect(await pg.keyframeSteps({ sessionKey: 'default', runId: 'same' })).toEqual(await files.keyframeSteps({ sessionKey: 'default', runId: 'same' }));
    const metaOf = async (store: RunStore): Promise<unknown> => shape((await listRuns(on(store))).find((m) => m.runId === 'same') as unknown as StreamEvent);
    expect(await metaOf(pg)).toEqual(await metaOf(files));
    for (let step = 0; step <= 9; step++) {
      const [a, b] = await Promise.all([loadRunPoint({ ...on(pg), runId: 'same', step }), loadRunPoint({ ...on(files), runId: 'same', step })]);
      expect(shape(a as unknown as StreamEvent)).toEqual(shape(b as unknown as StreamEvent));
    }
    await expect(runFlow(buildJournalFlow({ rounds: 1 }), { ...on(pg), runId: 'same' })).rejects.toBeInstanceOf(RunExistsError);
  });

  it('resumes an aborted run from its last step and forks from a recorded one', async () => {
    const controller = new AbortController();
    const flow = buildJournalFlow({ rounds: 6, delayMs: 20 });
    let steps = 0;
    flow.eventStreamer.on('checkpoint.saved', () => {
      if (++steps === 3) controller.abort();
    });
    await expect(runFlow(flow, { ...on(pg), runId: 'stopped', signal: controller.signal })).rejects.toThrow();
    const listed = (await listRuns(on(pg))).find((m) => m.runId === 'stopped');
    expect(listed?.status).toBe('stopped');
    const resumed = await resumeRun(buildJournalFlow({ rounds: 6 }), { ...on(pg), runId: 'stopped' });
    expect(resumed.status).toBe('completed');
    const whole = await runFlow(buildJournalFlow({ rounds: 6 }), { ...on(pg), runId: 'whole' });
    expect(resumed.steps).toBe(whole.steps);
    const [a, b] = await Promise.all([loadRunPoint({ ...on(pg), runId: 'stopped' }), loadRunPoint({ ...on(pg), runId: 'whole' })]);
    expect(a.state.items['journal']?.value).toEqual(b.state.items['journal']?.value);
    const fork = await forkRun(buildJournalFlow({ rounds: 6 }), { ...on(pg), runId: 'whole', atStep: 2, newRunId: 'forked' });
    expect(fork.status).toBe('completed');
    const listedFork = (await listRuns(on(pg))).find((m) => m.runId === 'forked');
    expect(listedFork?.forkedFrom).toEqual({ runId: 'whole', step: 2 });
  });

  it('sends one statement per step, and refuses a recorded run id within the statement that takes the lease, leaving the run untouched', async () => {
    const db = await freshDatabase();
    const statements: string[] = [];
    const counted = new PostgresRunStore({ url: db.url, onStatement: (query) => statements.push(query) });
    try {
      await counted.listRuns();
      // A warm pool: each new connection of the driver sends a statement of its own (its types) the first time.
      await runFlow(buildJournalFlow({ rounds: 2 }), { store: counted, runId: 'warm' });
      statements.length = 0;
      const result = await runFlow(buildJournalFlow({ rounds: 7 }), { store: counted, runId: 'counted' });
      // Taking the lease (and checking the id is new), the start's record, one per step, the end's record.
      expect(statements).toHaveLength(1 + 1 + result.steps + 1);
      expect(statements.filter((q) => q.includes('backpackflow.commit_step'))).toHaveLength(result.steps + 2);
      const ref = { sessionKey: 'default', runId: 'counted' };
      const before = { events: await events(counted, 'counted'), meta: await counted.loadRunMeta(ref) };
      statements.length = 0;
      const flow = buildJournalFlow({ rounds: 1 });
      await expect(runFlow(flow, { store: counted, runId: 'counted' })).rejects.toBeInstanceOf(RunExistsError);
      // One statement: the lease's, which found the run's events and took nothing.
      expect(statements).toHaveLength(1);
      expect(await events(counted, 'counted')).toEqual(before.events);
      expect(await counted.loadRunMeta(ref)).toEqual(before.meta);
      expect(await counted.writerAlive(ref)).toBe(false);
      await expect(forkRun(buildJournalFlow({ rounds: 7 }), { store: counted, runId: 'counted', atStep: 2, newRunId: 'warm' })).rejects.toBeInstanceOf(RunExistsError);
      expect((await counted.currentRunMeta({ sessionKey: 'default', runId: 'warm' })).status).toBe('completed');
    } finally {
      await counted.close();
      await db.drop();
    }
  });
});
