/**
 * The Postgres store's delete with an expectation (what pruneRuns passes): a run whose log moved on since the caller
 * listed it (a resume, an answer) is left whole with a RunChangedError; one still as listed is deleted. In one
 * statement, so that a writer taking the run meanwhile and the delete exclude each other.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../src/events/types.js';
import { PostgresRunStore } from '../../src/store/postgres/run-store.js';
import { makeEvent } from '../store/helpers.js';
import { freshDatabase } from '../support/pg.js';

function step(runId: string, seq: number, n: number): StreamEvent[] {
  return [makeEvent(runId, seq, { type: 'node.started', nodeId: `n${n}` }), makeEvent(runId, seq + 1, { type: 'checkpoint.saved', payload: { step: n, position: [], keyframe: false } })];
}

describe('Postgres deleteRun with an expectation', () => {
  let url: string;
  let drop: () => Promise<void>;
  let store: PostgresRunStore;
  beforeAll(async () => {
    ({ url, drop } = await freshDatabase());
    store = new PostgresRunStore({ url });
  });
  afterAll(async () => {
    await store.close();
    await drop();
  });

  it('leaves a run whose log moved on since it was listed, and deletes one still as listed', async () => {
    const ref = { sessionKey: 'prune', runId: 'moved' };
    const first = await store.openWriter(ref, { fresh: true });
    await first.commit(step('moved', 1, 1));
    await first.close();
    const listed = (await store.currentRunMeta(ref)).lastSeq;
    // Another process continues the run after the listing.
    const resumed = await store.openWriter(ref, { fresh: false });
    await resumed.commit([...step('moved', 3, 2), makeEvent('moved', 5, { type: 'run.completed', payload: {} })]);
    await resumed.close();
    await expect(store.deleteRun(ref, { lastSeq: listed })).rejects.toThrow(/run prune\/moved changed since it was listed \(its log ends at seq 5 now, not at seq 2\): it is not deleted/);
    expect((await store.currentRunMeta(ref)).status).toBe('completed');
    expect(await store.deleteRun(ref, { lastSeq: 5 })).toBe(true);
    expect(await store.listRuns('prune')).toEqual([]);
    expect(await store.deleteRun(ref, { lastSeq: 5 })).toBe(false);
  });
});
