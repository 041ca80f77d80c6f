/**
 * FileRunStore.logHead, the cheap identity of a log (the LangGraph saver looks at it on every read of a thread it does
 * not write): read from the log's end (the last line's seal), from the batch marker while a writer keeps space
 * reserved after the data, or from the committed end that readers use (a torn line, a batch in flight); in each case
 * the chain hash of the last event the readers serve (see test/support/run-store-conformance.ts for what both stores
 * share).
 */
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../src/events/types.js';
import { FileRunStore } from '../../src/store/file-run-store.js';
import { runPaths } from '../../src/store/paths.js';
import type { RunStore } from '../../src/store/run-store.js';
import { makeEvent, tempDir } from './helpers.js';

const ref = { sessionKey: 's1', runId: 'run-a' };

/** The chain of the last event the readers serve (what a reader that then read the log would hold), or null. */
async function servedHead(store: RunStore, run = ref): Promise<string | null> {
  let head: string | null = null;
  for await (const { chain } of store.readVerified(run, { onWarning: () => undefined })) head = chain ?? null;
  return head;
}

function batch(seq: number, n: number, payload: Record<string, unknown> = {}): StreamEvent[] {
  return Array.from({ length: n }, (_, i) => makeEvent(ref.runId, seq + i, { payload: { n: seq + i, ...payload } }));
}

describe('FileRunStore.logHead', () => {
  let dir: string;
  let cleanup: () => void;
  let store: FileRunStore;
  beforeEach(() => {
    ({ dir, cleanup } = tempDir());
    store = new FileRunStore(dir);
  });
  afterEach(() => cleanup());

  it('is the chain the readers serve up to, while a writer holds the log (space reserved after it) and after it closed it, whatever the length of the last line', async () => {
    for (const durability of ['batch', 'never'] as const) {
      const run = { ...ref, runId: `run-${durability}` };
      const w = await store.openWriter(run, { fresh: true, durability });
      expect(await store.logHead(run)).toBeNull();
      let seq = 1;
      for (const size of [10, 5_000, 200_000, 10]) {
        await w.commit(batch(seq, 3, { text: 'x'.repeat(size) }).map((e) => ({ ...e, runId: run.runId })));
        seq += 3;
        expect(await store.logHead(run)).toBe(w.chainHead);
      }
      const head = w.chainHead;
      await w.close();
      expect(await store.logHead(run)).toBe(head);
    }
  });

  it('is not moved by a torn line after the log, nor by a batch in flight; it moves when the batch is whole', async () => {
    const paths = runPaths(dir, ref.sessionKey, ref.runId);
    const w = await store.openWriter(ref, { fresh: true });
    await w.commit(batch(1, 2));
    const head = w.chainHead;
    await w.close();
    expect(await store.logHead(ref)).toBe(head);

    appendFileSync(paths.events, '{"v":1,"torn');
    expect(await store.logHead(ref)).toBe(head);
    expect(await servedHead(store)).toBe(head);

    // What a writer in the middle of a 3-event batch shows: the marker, and two of its lines (not sealed).
    writeFileSync(paths.events, readFileSync(paths.events, 'utf8').replace('{"v":1,"torn', ''));
    const size = readFileSync(paths.events).length;
    const lines = batch(3, 3).map((e) => JSON.stringify(e) + '\n');
    writeFileSync(paths.pendingBatch, JSON.stringify({ gen: 99, start: size, end: size + lines.join('').length }));
    appendFileSync(paths.events, lines[0]! + lines[1]!);
    expect(await store.logHead(ref)).toBe(head);
    expect(await servedHead(store)).toBe(head);

    // A writer continues it (cutting what the crash left) and commits: the head is its own.
    const again = await store.openWriter(ref, { fresh: false });
    await again.commit(batch(3, 3));
    expect(await store.logHead(ref)).toBe(again.chainHead);
    expect(again.chainHead).not.toBe(head);
    await again.close();
    expect(await store.logHead(ref)).toBe(await servedHead(store));
  });

  it('always names the chain of the last event served, across commits, closes and torn tails (property)', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(fc.record({ commit: fc.integer({ min: 1, max: 4 }), size: fc.constantFrom(0, 3_000, 70_000) }), fc.constant('close' as const), fc.constant('torn' as const)), { maxLength: 12 }),
        async (ops) => {
          const run = { ...ref, runId: `p${n++}` };
          const paths = runPaths(dir, run.sessionKey, run.runId);
          let writer: Awaited<ReturnType<RunStore['openWriter']>> | undefined;
          let seq = 1;
          try {
            for (const op of ops) {
              if (op === 'close') {
                await writer?.close();
                writer = undefined;
              } else if (op === 'torn') {
                if (writer === undefined && seq > 1) appendFileSync(paths.events, '{"v":1,"id":"half');
              } else {
                writer ??= await store.openWriter(run, { fresh: false });
                await writer.commit(batch(seq, op.commit, { text: 'y'.repeat(op.size) }).map((e) => ({ ...e, runId: run.runId })));
                seq += op.commit;
              }
              const head = await store.logHead(run);
              expect(head).toBe(await servedHead(store, run));
              if (writer !== undefined) expect(head).toBe(writer.chainHead);
            }
          } finally {
            await writer?.close();
          }
        },
      ),
      { numRuns: 30 },
    );
  });
});
