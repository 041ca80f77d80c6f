/**
 * A run's projection (run.meta.json) that is not what its log says: copied in from another run or session, or
 * recording more events than a log that lost its tail. Readers answer from the log, say what is wrong naming the
 * file, write only to the projection of the run asked for, and never erase the evidence of a lost tail.
 */
import { copyFileSync, readFileSync, rmSync, truncateSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { StreamEvent } from '../../src/events/types.js';
import { EventStore, FileRunStore, ProjectionStore, runPaths } from '../../src/store/index.js';
import { makeEvent, tempDir } from './helpers.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => (tmp = tempDir()));
afterEach(() => {
  vi.restoreAllMocks();
  tmp.cleanup();
});

/** Records run `runId` of session `sessionKey`: `batches` batches of 3 events, then its projection. */
async function record(sessionKey: string, runId: string, batches: number): Promise<StreamEvent[]> {
  const store = new EventStore({ dataDir: tmp.dir, sessionKey, runId, durability: 'never' });
  const events: StreamEvent[] = [];
  for (let b = 0; b < batches; b++) {
    const batch = [0, 1, 2].map((i) => makeEvent(runId, events.length + i + 1, { type: b === 0 && i === 0 ? 'run.started' : 'custom', timestamp: 1000 + events.length + i }));
    await store.appendBatch(batch);
    events.push(...batch);
  }
  await store.close();
  await new ProjectionStore({ dataDir: tmp.dir, sessionKey }).generateRunMeta(runId);
  return events;
}

const metaPath = (sessionKey: string, runId: string): string => runPaths(tmp.dir, sessionKey, runId).runMeta;

describe('a projection of another run or session', () => {
  for (const [label, source] of [
    ['another run', ['s', 'r2']],
    ['another session', ['t', 'r1']],
  ] as const) {
    it(`copied in from ${label}: an error naming the file for loadRunMeta; currentRunMeta warns, rebuilds from the log and writes only the run asked for`, async () => {
      await record('s', 'r1', 4);
      await record(source[0], source[1], 2);
      const projections = new ProjectionStore({ dataDir: tmp.dir, sessionKey: 's' });
      const own = await projections.generateRunMeta('r1');
      copyFileSync(metaPath(source[0], source[1]), metaPath('s', 'r1'));
      const foreign = readFileSync(metaPath(source[0], source[1]));

      await expect(projections.loadRunMeta('r1')).rejects.toThrow(
        `corrupt run projection ${metaPath('s', 'r1')}: it is the projection of run ${source[0]}/${source[1]}, not of s/r1`,
      );
      const warnings = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
      const onWarning = vi.fn();
      expect(await new ProjectionStore({ dataDir: tmp.dir, sessionKey: 's' }).currentRunMeta('r1', onWarning)).toEqual(own);
      expect(String(warnings.mock.calls[0]?.[0])).toContain(`corrupt run projection ${metaPath('s', 'r1')}: it is the projection of run ${source[0]}/${source[1]}`);
      expect(onWarning).not.toHaveBeenCalled();
      // The run asked for has its own projection again; the other run's file is untouched.
      expect(await projections.loadRunMeta('r1')).toEqual(own);
      expect(readFileSync(metaPath(source[0], source[1]))).toEqual(foreign);
    });
  }
});

describe('a projection that recorded more events than the log serves (a lost tail)', () => {
  /** r1 recorded with 4 batches of 3 events, its log then cut after the third batch, or inside its last line. */
  async function lostTail(cut: 'batch' | 'torn'): Promise<{ events: StreamEvent[]; stored: Buffer }> {
    const events = await record('s', 'r1', 4);
    const log = runPaths(tmp.dir, 's', 'r1').events;
    const text = readFileSync(log);
    if (cut === 'torn') truncateSync(log, text.length - 20);
    else {
      // Just after the third batch: the fourth is gone whole.
      const lines = text.toString('utf8').split('\n');
      truncateSync(log, Buffer.byteLength(lines.slice(0, 9).join('\n') + '\n'));
    }
    return { events, stored: readFileSync(metaPath('s', 'r1')) };
  }

  for (const cut of ['batch', 'torn'] as const) {
    it(`(${cut === 'batch' ? 'a whole batch cut' : 'a torn last line'}) is reported on every read and never overwritten, until it is deleted`, async () => {
      const { events, stored } = await lostTail(cut);
      // A batch whose last line is torn is not served at all (its chain hash is gone).
      const served = 9;
      for (let read = 0; read < 3; read++) {
        const onWarning = vi.fn();
        const meta = await new ProjectionStore({ dataDir: tmp.dir, sessionKey: 's' }).currentRunMeta('r1', onWarning);
        expect(meta).toMatchObject({ eventCount: served, lastSeq: events[served - 1]!.seq });
        expect(onWarning).toHaveBeenCalledTimes(1);
        expect(onWarning.mock.calls[0]![0]).toContain(`${runPaths(tmp.dir, 's', 'r1').events} serves ${served} events, but the run's projection ${metaPath('s', 'r1')} recorded 12`);
        expect(readFileSync(metaPath('s', 'r1'))).toEqual(stored);
      }
      // Deleting the projection takes the log as it stands for the run.
      const projections = new ProjectionStore({ dataDir: tmp.dir, sessionKey: 's' });
      expect(await projections.delete('r1')).toBe(true);
      const onWarning = vi.fn();
      const rebuilt = await projections.currentRunMeta('r1', onWarning);
      expect(onWarning).not.toHaveBeenCalled();
      expect(rebuilt.eventCount).toBe(served);
      expect(await projections.loadRunMeta('r1')).toEqual(rebuilt);
    });
  }

  it('a writer does not continue the run, naming both files; it does once the projection is deleted', async () => {
    await lostTail('batch');
    // A log whose batch marker does not record how its writer closed it (lost with the tail, or from before it did).
    rmSync(runPaths(tmp.dir, 's', 'r1').pendingBatch);
    const store = new FileRunStore(tmp.dir);
    const error = (await store.openWriter({ sessionKey: 's', runId: 'r1' }, { fresh: false }).catch((e: unknown) => e)) as Error;
    expect(error.message).toContain(`${runPaths(tmp.dir, 's', 'r1').events} serves 9 events, but the run's projection ${metaPath('s', 'r1')} recorded 12`);
    expect(error.message).toMatch(/The run is not continued$/);
    // The lock was given back: a writer opens once the projection is deleted.
    await new ProjectionStore({ dataDir: tmp.dir, sessionKey: 's' }).delete('r1');
    const writer = await store.openWriter({ sessionKey: 's', runId: 'r1' }, { fresh: false });
    expect(writer.eventCount).toBe(9);
    await writer.close();
  });
});
