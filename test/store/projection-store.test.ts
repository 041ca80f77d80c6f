import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StreamEventType, type StreamEvent, type StreamEventTypeValue } from '../../src/events/types.js';
import { EventStore, ProjectionStore, emptyRunMeta, foldRunMeta, foldRunMetaBatch, type RunMeta } from '../../src/store/index.js';
import { SECRETS, makeEvent, tempDir } from './helpers.js';

const RUN = 'run-1';

function runEvents(): StreamEvent[] {
  const e = (seq: number, type: StreamEventTypeValue, extra: Partial<StreamEvent> = {}): StreamEvent =>
    makeEvent(RUN, seq, { type, timestamp: 1000 + seq * 10, payload: {}, ...extra });
  return [
    e(0, 'run.started'),
    e(1, 'node.started', { nodeId: 'a', namespace: 'flow.a' }),
    e(2, 'tool.called'),
    e(3, 'model.completed', { payload: { usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 } } }),
    e(4, 'node.completed', { nodeId: 'a' }),
    e(5, 'node.started', { nodeId: 'b', namespace: 'flow.b' }),
    e(6, 'error', { payload: { message: 'flaky' } }),
    e(7, 'model.completed', { payload: { usage: { inputTokens: 1, outputTokens: 2 } } }),
    e(8, 'node.completed', { nodeId: 'b' }),
    e(9, 'node.started', { nodeId: 'a', namespace: 'flow.a' }),
    e(10, 'node.completed', { nodeId: 'a' }),
    e(11, 'run.failed', { payload: { error: { message: 'boom' } } }),
  ];
}

describe('ProjectionStore', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => (tmp = tempDir()));
  afterEach(() => tmp.cleanup());

  const writeLog = async (events: StreamEvent[]): Promise<void> => {
    const store = new EventStore({ dataDir: tmp.dir, sessionKey: 'sess', runId: RUN, durability: 'never' });
    await store.appendBatch(events);
    await store.close();
  };

  it('generateRunMeta folds the whole log into run.meta.json', async () => {
    await writeLog(runEvents());
    const projections = new ProjectionStore({ dataDir: tmp.dir, sessionKey: 'sess' });
    const meta = await projections.generateRunMeta(RUN);
    expect(meta).toEqual({
      v: 1,
      runId: RUN,
      sessionKey: 'sess',
      status: 'failed',
      startedAt: 1000,
      endedAt: 1110,
      durationMs: 110,
      segments: [{ startedAt: 1000, endedAt: 1110, durationMs: 110, outcome: 'failed' }],
      updatedAt: 1110,
      lastSeq: 11,
      eventCount: 12,
      stepCount: 3,
      nodeCount: 2,
      nodeIds: ['flow.a', 'flow.b'],
      toolCallCount: 1,
      errorCount: 2,
      tokenUsage: { input: 11, output: 7, total: 18 },
      lastNodeId: 'a',
      error: 'boom',
    });
    const path = `${tmp.dir}/sessions/sess/runs/${RUN}/projections/run.meta.json`;
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ checksum: expect.stringMatching(/^[0-9a-f]{64}$/), data: meta });
    expect(await new ProjectionStore({ dataDir: tmp.dir, sessionKey: 'sess' }).loadRunMeta(RUN)).toEqual(meta);
  });

  it('marks a completed run with its duration', async () => {
    const events = [makeEvent(RUN, 0, { type: 'run.started', timestamp: 50 }), makeEvent(RUN, 1, { type: 'run.completed', timestamp: 80 })];
    await writeLog(events);
    const meta = await new ProjectionStore({ dataDir: tmp.dir, sessionKey: 'sess' }).generateRunMeta(RUN);
    expect(meta).toMatchObject({ status: 'completed', startedAt: 50, endedAt: 80, durationMs: 30 });
  });

  it('loadRunMeta returns null when absent and names the path of a corrupt file', async () => {
    const projections = new ProjectionStore({ dataDir: tmp.dir, sessionKey: 'sess' });
    expect(await projections.loadRunMeta(RUN)).toBeNull();
    await projections.updateRunMeta(makeEvent(RUN, 0, { type: 'run.started' }));
    const path = `${tmp.dir}/sessions/sess/runs/${RUN}/projections/run.meta.json`;
    const { writeFileSync } = await import('node:fs');
    writeFileSync(path, '{"v":1,"status":"weird"}');
    await expect(new ProjectionStore({ dataDir: tmp.dir, sessionKey: 'sess' }).loadRunMeta(RUN)).rejects.toThrow(
      new RegExp(`corrupt run projection ${path}: .*status`),
    );
  });

  it('generateRunMeta of a run without events is an error naming the run', async () => {
    await expect(new ProjectionStore({ dataDir: tmp.dir, sessionKey: 'sess' }).generateRunMeta('nothing')).rejects.toThrow(/sess\/nothing has no events/);
  });

  it('updateRunMeta persists each step, survives a new instance, and ignores events already folded', async () => {
    const events = runEvents();
    const first = new ProjectionStore({ dataDir: tmp.dir, sessionKey: 'sess', durability: 'never' });
    for (const event of events.slice(0, 6)) await first.updateRunMeta(event);
    const second = new ProjectionStore({ dataDir: tmp.dir, sessionKey: 'sess', durability: 'never' });
    await second.updateRunMeta(events[3]!);
    for (const event of events.slice(6)) await second.updateRunMeta(event);
    await writeLog(events);
    const full = await new ProjectionStore({ dataDir: tmp.dir, sessionKey: 'sess' }).generateRunMeta(RUN);
    expect(await second.loadRunMeta(RUN)).toEqual(full);
  });

  it('updateRunMeta folds every event even when the caller does not await each call', async () => {
    const events = runEvents();
    const projections = new ProjectionStore({ dataDir: tmp.dir, sessionKey: 'sess', durability: 'never' });
    await Promise.all(events.map((event) => projections.updateRunMeta(event)));
    expect(await projections.loadRunMeta(RUN)).toEqual(events.reduce(foldRunMeta, emptyRunMeta('sess', RUN)));
  });

  it('never writes a secret quoted in an error message', async () => {
    const projections = new ProjectionStore({ dataDir: tmp.dir, sessionKey: 'sess' });
    await projections.updateRunMeta(makeEvent(RUN, 0, { type: 'run.started' }));
    await projections.updateRunMeta(makeEvent(RUN, 1, { type: 'run.failed', payload: { error: `401 for ${SECRETS.bearer}` } }));
    const raw = readFileSync(`${tmp.dir}/sessions/sess/runs/${RUN}/projections/run.meta.json`, 'utf8');
    expect(raw).not.toContain(SECRETS.bearer.slice(7));
    expect((await projections.loadRunMeta(RUN))?.error).toBe('401 for [REDACTED]');
  });

  it('an update with persist: false is folded at once, after every update queued before it', async () => {
    const events = runEvents();
    const projections = new ProjectionStore({ dataDir: tmp.dir, sessionKey: 'sess', durability: 'never' });
    // The first update loads (nothing on disk) and writes; the next ones are issued while it is still queued.
    const first = projections.updateRunMetaBatch(RUN, events.slice(0, 2));
    const second = projections.updateRunMetaBatch(RUN, events.slice(2, 5), { persist: false });
    expect((await first).lastSeq).toBe(1);
    expect((await second).lastSeq).toBe(4);
    // Loaded and idle: folded before the promise is awaited, so a flush right after it writes it.
    const third = projections.updateRunMetaBatch(RUN, events.slice(5), { persist: false });
    await projections.flush(RUN);
    const full = events.reduce(foldRunMeta, emptyRunMeta('sess', RUN));
    expect(await projections.loadRunMeta(RUN)).toEqual(full);
    expect(await third).toEqual(full);
  });

  it('updateRunMeta with persist: false defers the write to flush', async () => {
    const projections = new ProjectionStore({ dataDir: tmp.dir, sessionKey: 'sess', durability: 'never' });
    await projections.updateRunMeta(makeEvent(RUN, 0, { type: 'run.started' }), { persist: false });
    expect(await projections.loadRunMeta(RUN)).toBeNull();
    await projections.flush(RUN);
    expect((await projections.loadRunMeta(RUN))?.lastSeq).toBe(0);
  });

  it('property: folding a batch at once equals folding its events one by one, and never modifies its input', () => {
    const deepFreeze = <T>(value: T): T => {
      if (value !== null && typeof value === 'object') for (const child of Object.values(value)) deepFreeze(child);
      return Object.freeze(value);
    };
    const types = Object.values(StreamEventType);
    const eventArb = fc.record({
      type: fc.constantFrom(...types),
      node: fc.option(fc.constantFrom('a', 'b', 'c'), { nil: undefined }),
      seq: fc.integer({ min: 0, max: 40 }),
      usage: fc.option(fc.record({ inputTokens: fc.nat(100), outputTokens: fc.nat(100) }), { nil: undefined }),
    });
    fc.assert(
      fc.property(fc.array(eventArb, { maxLength: 30 }), fc.array(fc.integer({ min: 1, max: 8 }), { minLength: 1, maxLength: 10 }), (specs, cuts) => {
        // seqs may repeat or go back: those events are already folded and change nothing.
        const events = specs.map((s, i): StreamEvent => {
          const event: StreamEvent = { v: 1, id: `e${i}`, seq: s.seq, timestamp: i * 3, runId: RUN, type: s.type, payload: s.usage ? { usage: s.usage } : {} };
          if (s.node) event.nodeId = s.node;
          return deepFreeze(event);
        });
        const oneByOne = events.reduce(foldRunMeta, emptyRunMeta('sess', RUN));
        let batched: RunMeta = deepFreeze(emptyRunMeta('sess', RUN));
        for (let i = 0, c = 0; i < events.length; i += cuts[c++ % cuts.length]!) {
          const size = cuts[c % cuts.length]!;
          const before = JSON.stringify(batched);
          const next = foldRunMetaBatch(batched, events.slice(i, i + size));
          expect(JSON.stringify(batched)).toBe(before);
          batched = deepFreeze(next);
        }
        expect(batched).toEqual(oneByOne);
      }),
      { numRuns: 200 },
    );
  });

  it('property: folding events one by one (persisting and reloading) equals the full fold', async () => {
    const types = Object.values(StreamEventType);
    const eventArb = fc.record({
      type: fc.constantFrom(...types),
      node: fc.option(fc.constantFrom('a', 'b', 'c', 'd'), { nil: undefined }),
      gap: fc.integer({ min: 0, max: 5 }),
      usage: fc.option(fc.record({ inputTokens: fc.nat(100), outputTokens: fc.nat(100) }), { nil: undefined }),
    });
    let runNo = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(eventArb, { minLength: 1, maxLength: 30 }), fc.integer({ min: 1, max: 30 }), async (specs, reloadAt) => {
        const runId = `prop-${runNo++}`;
        let time = 0;
        const events = specs.map((s, seq) => {
          time += s.gap;
          const event: StreamEvent = { v: 1, id: `e${seq}`, seq, timestamp: time, runId, type: s.type, payload: s.usage ? { usage: s.usage } : {} };
          if (s.node) event.nodeId = s.node;
          return event;
        });
        const full = events.reduce(foldRunMeta, emptyRunMeta('sess', runId));
        let projections = new ProjectionStore({ dataDir: tmp.dir, sessionKey: 'sess', durability: 'never' });
        for (const [i, event] of events.entries()) {
          if (i === reloadAt) projections = new ProjectionStore({ dataDir: tmp.dir, sessionKey: 'sess', durability: 'never' });
          await projections.updateRunMeta(event);
        }
        expect(await projections.loadRunMeta(runId)).toEqual(full);
      }),
      { numRuns: 40 },
    );
  });
});
