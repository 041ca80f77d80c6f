/**
 * The conformance suite of the RunStore seam: the same tests against the file store (test/store/) and the Postgres
 * store (test/pg/). Each test gets a fresh, empty store from the factory.
 */
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../src/events/types.js';
import { foldRunMetaBatch, emptyRunMeta, InvalidIdError, LockError, RunExistsError, RunGoneError, EventStoreError, RunMetaSchema, StoreError, recordedDigests } from '../../src/store/index.js';
import type { RunStore, RunWriter } from '../../src/store/run-store.js';
import { SECRETS, makeEvent } from '../store/helpers.js';
import { trials } from './soak.js';

/** A fresh store and how to dispose of it. */
export interface StoreUnderTest {
  store: RunStore;
  /** A second handle on the same storage (another process would open its own). */
  reopen: () => RunStore;
  cleanup: () => Promise<void>;
}

const ref = { sessionKey: 's1', runId: 'run-a' };

/** A step's batch: `n` custom events from `seq`, then the step's checkpoint.saved. */
function stepBatch(runId: string, seq: number, step: number, n = 2): StreamEvent[] {
  const out: StreamEvent[] = [];
  for (let i = 0; i < n; i++) out.push(makeEvent(runId, seq + i, { type: 'node.started', nodeId: `n${step}`, namespace: `flow.n${step}` }));
  out.push(makeEvent(runId, seq + n, { type: 'checkpoint.saved', payload: { step, position: [`n${step + 1}`], keyframe: false } }));
  return out;
}

async function readAll(store: RunStore, r = ref): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  for await (const { event } of store.readVerified(r)) out.push(event);
  return out;
}

/** Registers the suite under `name`. */
export function runStoreConformance(name: string, make: () => Promise<StoreUnderTest>): void {
  describe(`RunStore conformance: ${name}`, () => {
    let sut: StoreUnderTest;
    let open: RunWriter[] = [];
    const writer = async (options: { fresh: boolean }, store = sut.store, r = ref): Promise<RunWriter> => {
      const w = await store.openWriter(r, options);
      open.push(w);
      return w;
    };

    beforeEach(async () => {
      sut = await make();
      open = [];
    });
    afterEach(async () => {
      for (const w of open) await w.close().catch(() => undefined);
      await sut.cleanup();
    });

    it('stores committed steps in order, chained, and a reopened writer continues the numbering and the chain', async () => {
      const w = await writer({ fresh: true });
      expect(w.lastSeq).toBeUndefined();
      await w.commit(stepBatch(ref.runId, 1, 1));
      await w.commit(stepBatch(ref.runId, 4, 2));
      expect(w.lastSeq).toBe(6);
      expect(w.eventCount).toBe(6);
      const head = w.chainHead;
      expect(head).toMatch(/^[0-9a-f]{64}$/);
      await w.close();
      const read: { seq: number; line: number; chain: string | undefined }[] = [];
      for await (const { event, line, chain } of sut.store.readVerified(ref)) read.push({ seq: event.seq, line, chain });
      expect(read.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(read.map((r) => r.line)).toEqual([0, 1, 2, 3, 4, 5]);
      expect(read[5]!.chain).toBe(head);
      const again = await writer({ fresh: false }, sut.reopen());
      expect(again.lastSeq).toBe(6);
      expect(again.eventCount).toBe(6);
      expect(again.chainHead).toBe(head);
      await again.commit(stepBatch(ref.runId, 7, 3));
      await again.close();
      expect((await readAll(sut.store)).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    });

    it('reads from a line, pages and counts without serving anything the chain does not vouch for', async () => {
      const w = await writer({ fresh: true });
      for (let step = 1; step <= 10; step++) await w.commit(stepBatch(ref.runId, (step - 1) * 3 + 1, step));
      await w.close();
      expect(await sut.store.countEvents(ref)).toBe(30);
      expect((await sut.store.readPage(ref, 4, 7)).map((e) => e.seq)).toEqual([8, 9, 10, 11]);
      expect(await sut.store.readPage(ref, 5, 29)).toHaveLength(1);
      expect(await sut.store.readPage(ref, 5, 30)).toEqual([]);
      const tail: number[] = [];
      for await (const { event } of sut.store.readVerified(ref, { from: 25 })) tail.push(event.seq);
      expect(tail).toEqual([26, 27, 28, 29, 30]);
      const checkpoints: number[] = [];
      for await (const { event } of sut.store.readVerified(ref, { types: ['checkpoint.saved'] })) checkpoints.push((event.payload as { step: number }).step);
      expect(checkpoints).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      await expect(sut.store.readPage(ref, -1, 0)).rejects.toThrow(/pageSize/);
    });

    it('has one writer per run: a second writer is refused while the first holds the run, and may take it once it is closed', async () => {
      const first = await writer({ fresh: true });
      await first.commit(stepBatch(ref.runId, 1, 1));
      expect(await sut.store.writerAlive(ref)).toBe(true);
      // Who writes it, for `runs show`: this process's pid (a lock) or the writer's lease owner (Postgres).
      expect(await sut.store.describeWriter(ref)).toMatch(new RegExp(`pid ${process.pid} on .*alive|the lease of .*, until \\d{4}-`));
      const other = sut.reopen();
      await expect(other.openWriter(ref, { fresh: false })).rejects.toBeInstanceOf(LockError);
      await first.close();
      expect(await sut.store.writerAlive(ref)).toBe(false);
      expect(await sut.store.describeWriter(ref)).toBeUndefined();
      const second = await writer({ fresh: false }, other);
      await second.commit(stepBatch(ref.runId, 4, 2));
      await second.close();
      expect(await sut.store.countEvents(ref)).toBe(6);
    });

    it("keeps a new run's documents through its writer while it holds the run, and refuses them once the writer is closed", async () => {
      const w = await writer({ fresh: true });
      await w.saveDocument('flow', { nodes: [{ id: 'a' }] });
      await w.saveDocument('recipe', { v: 1, flow: { kind: 'config' }, modules: [] });
      await w.saveDocument('flow', { nodes: [{ id: 'b' }] });
      // A second start of the same id cannot get a writer while this one holds the run, so it cannot record over it.
      await expect(sut.reopen().openWriter(ref, { fresh: true })).rejects.toBeInstanceOf(LockError);
      expect(await sut.reopen().loadDocument(ref, 'flow')).toEqual({ nodes: [{ id: 'b' }] });
      expect(await sut.store.loadDocument(ref, 'recipe')).toEqual({ v: 1, flow: { kind: 'config' }, modules: [] });
      await w.close();
      await expect(w.saveDocument('flow', { nodes: [] })).rejects.toThrow(/closed/);
      expect(await sut.store.loadDocument(ref, 'flow')).toEqual({ nodes: [{ id: 'b' }] });
      // A writer opened and closed without events is not a run.
      expect(await sut.store.listRuns()).toEqual([]);
    });

    it("ties a run's documents to its log: the writer gives their digests for the start record, and a document stored over them later is refused, naming it", async () => {
      const w = await writer({ fresh: true });
      await w.saveDocument('flow', { nodes: [{ id: 'a', note: 'é ✓' }] });
      await w.saveDocument('recipe', { v: 1 });
      expect(Object.keys(w.documents).sort()).toEqual(['flow', 'recipe']);
      expect(w.documents.flow).toMatch(/^[0-9a-f]{64}$/);
      // The start record, as the runtime writes it: right after run.started, in the log's first batch.
      await w.commit([
        makeEvent(ref.runId, 1, { type: 'run.started', payload: { flowNamespace: 'f', entryNodeId: 'a' } }),
        makeEvent(ref.runId, 2, { type: 'checkpoint.saved', payload: { step: 0, position: ['a'], keyframe: false, start: true, documents: { ...w.documents } } }),
      ]);
      await w.close();
      expect(await recordedDigests(sut.store, ref)).toEqual({ digests: w.documents, line: 1 });
      expect(await sut.reopen().loadDocument(ref, 'flow')).toEqual({ nodes: [{ id: 'a', note: 'é ✓' }] });
      // A later writer of the run stores another flow: not the one the run started with.
      const later = await writer({ fresh: false });
      await later.saveDocument('flow', { nodes: [{ id: 'swapped' }] });
      await later.close();
      const refused = sut.reopen().loadDocument(ref, 'flow');
      await expect(refused).rejects.toBeInstanceOf(StoreError);
      await expect(sut.store.loadDocument(ref, 'flow')).rejects.toThrow(`${sut.store.describeDocument(ref, 'flow')} is not the flow document run s1/run-a recorded`);
      expect(await sut.store.loadDocument(ref, 'recipe')).toEqual({ v: 1 });
    });

    it('deletes a run whole: refused while another writer holds it, then gone from every read, and its id free again', async () => {
      const other = sut.reopen();
      const w = await writer({ fresh: true }, other);
      await w.commit(stepBatch(ref.runId, 1, 1));
      await w.takeKeyframe({ step: 1, createdAt: 1, position: [], state: { kind: 'keyframe', backpack: { items: {} } } as never }).write();
      await expect(sut.store.deleteRun(ref)).rejects.toSatisfy((e: unknown) => e instanceof LockError || e instanceof StoreError);
      expect(await sut.store.countEvents(ref)).toBe(3);
      await w.close();
      expect(await sut.store.deleteRun(ref)).toBe(true);
      expect(await sut.store.listRuns(ref.sessionKey)).toEqual([]);
      expect(await sut.store.hasEvents(ref)).toBe(false);
      expect(await sut.store.keyframeSteps(ref)).toEqual([]);
      expect(await readAll(sut.store)).toEqual([]);
      expect(await sut.store.deleteRun(ref)).toBe(false);
      await expect(sut.store.assertNewRun(ref)).resolves.toBeUndefined();
      // A writer that continues the run (a resume that read it before the delete) is refused; nothing comes back.
      await expect(sut.store.openWriter(ref, { fresh: false, existing: true })).rejects.toBeInstanceOf(RunGoneError);
      expect(await sut.store.listRuns(ref.sessionKey)).toEqual([]);
      expect(await sut.store.hasEvents(ref)).toBe(false);
      // And the id is still free for a new run.
      const again = await writer({ fresh: true });
      await again.commit(stepBatch(ref.runId, 1, 1));
      await again.close();
      expect(await sut.store.countEvents(ref)).toBe(3);
    });

    it('refuses to start a run under an id that has events, and to store events out of order or of another run', async () => {
      await sut.store.assertNewRun(ref);
      expect(await sut.store.hasEvents(ref)).toBe(false);
      const w = await writer({ fresh: true });
      await w.commit(stepBatch(ref.runId, 1, 1));
      await expect(w.commit([makeEvent(ref.runId, 3)])).rejects.toThrow(/seq 3, not greater than the last stored seq 3/);
      await expect(w.commit([makeEvent('other-run', 4)])).rejects.toBeInstanceOf(EventStoreError);
      await expect(w.commit([{ ...makeEvent(ref.runId, 4), seq: -1 }])).rejects.toThrow(/seq/);
      await w.close();
      expect(await sut.store.hasEvents(ref)).toBe(true);
      await expect(sut.store.assertNewRun(ref)).rejects.toBeInstanceOf(RunExistsError);
      await expect(sut.store.openWriter(ref, { fresh: true })).rejects.toBeInstanceOf(RunExistsError);
      expect((await readAll(sut.store)).map((e) => e.seq)).toEqual([1, 2, 3]);
    });

    it('gives a log version that changes with every commit and holds while nothing is written, or none at all', async () => {
      expect(await sut.store.logVersion(ref)).toBeUndefined();
      const w = await writer({ fresh: true });
      await w.commit(stepBatch(ref.runId, 1, 1));
      const first = await sut.store.logVersion(ref);
      expect(await sut.store.logVersion(ref)).toBe(first);
      await w.commit(stepBatch(ref.runId, 4, 2));
      const second = await sut.store.logVersion(ref);
      if (first === undefined) expect(second).toBeUndefined(); // the store cannot tell cheaply
      else expect(second).not.toBe(first);
      await w.close();
    });

    it('gives a new log version at every one of many quick commits (several in one tick of the file system clock)', async () => {
      const w = await writer({ fresh: true });
      const versions: (string | undefined)[] = [];
      for (let step = 1; step <= 20; step++) {
        await w.commit(stepBatch(ref.runId, step * 3 - 2, step));
        versions.push(await sut.store.logVersion(ref));
      }
      await w.close();
      if (versions[0] === undefined) return; // the store cannot tell cheaply
      expect(new Set(versions).size).toBe(versions.length);
    });

    it("gives the log's chain head: none before any event, the writer's after each commit (to another handle too), and another once the run is deleted and started again with as many events", async () => {
      expect(await sut.store.logHead(ref)).toBeNull();
      const reader = sut.reopen();
      const w = await writer({ fresh: true });
      const heads: (string | null | undefined)[] = [];
      for (let step = 1; step <= 3; step++) {
        await w.commit(stepBatch(ref.runId, step * 3 - 2, step));
        expect(w.chainHead).toMatch(/^[0-9a-f]{64}$/);
        expect(await sut.store.logHead(ref)).toBe(w.chainHead);
        expect(await reader.logHead(ref)).toBe(w.chainHead);
        heads.push(w.chainHead);
      }
      expect(new Set(heads).size).toBe(3);
      await w.close();
      const before = await reader.logHead(ref);
      expect(before).toBe(heads[2]);
      // Deleted: no head; started again with the same number of events (other content): not the head it had.
      expect(await sut.store.deleteRun(ref)).toBe(true);
      expect(await reader.logHead(ref)).toBeNull();
      const again = await writer({ fresh: true });
      for (let step = 1; step <= 3; step++) {
        const batch = stepBatch(ref.runId, step * 3 - 2, step).map((e) => ({ ...e, payload: { ...e.payload, again: true } }));
        await again.commit(batch);
      }
      expect(again.eventCount).toBe(9);
      expect(await reader.logHead(ref)).toBe(again.chainHead);
      expect(again.chainHead).not.toBe(before);
      await again.close();
    });

    it('rejects hostile ids before touching anything', async () => {
      for (const bad of ['../escape', 'a/b', '', '..', 'x'.repeat(200), 'a\u0000b']) {
        await expect(sut.store.openWriter({ sessionKey: 's1', runId: bad }, { fresh: true })).rejects.toBeInstanceOf(InvalidIdError);
        await expect(sut.store.hasEvents({ sessionKey: bad, runId: 'r' })).rejects.toBeInstanceOf(InvalidIdError);
        await expect(sut.store.loadRunMeta({ sessionKey: 's1', runId: bad })).rejects.toBeInstanceOf(InvalidIdError);
        await expect(sut.store.listRuns(bad)).rejects.toBeInstanceOf(InvalidIdError);
        await expect(sut.store.logVersion({ sessionKey: 's1', runId: bad })).rejects.toBeInstanceOf(InvalidIdError);
        await expect(sut.store.logHead({ sessionKey: 's1', runId: bad })).rejects.toBeInstanceOf(InvalidIdError);
      }
      expect(await sut.store.listRuns()).toEqual([]);
    });

    it('redacts secrets in events and keyframes before storing them, and says so', async () => {
      const w = await writer({ fresh: true });
      const events = stepBatch(ref.runId, 1, 1);
      events[0] = { ...events[0]!, payload: { note: `key ${SECRETS.openai}`, apiKey: 'plain-value' } };
      await w.commit(events);
      await w.takeKeyframe({ step: 1, createdAt: 1, position: ['n2'], state: { kind: 'keyframe', backpack: { token: SECRETS.jwt } } }).write();
      await w.close();
      const [first] = await readAll(sut.store);
      expect(JSON.stringify(first)).not.toContain(SECRETS.openai);
      expect(JSON.stringify(first)).not.toContain('plain-value');
      expect(first!.redaction).toEqual({ containsSecrets: true });
      const keyframe = await sut.store.loadKeyframe(ref, 1);
      expect(JSON.stringify(keyframe)).not.toContain(SECRETS.jwt);
      expect(keyframe!.redaction).toEqual({ containsSecrets: true });
    });

    it('saves a keyframe with its step, tied to the chain hash and the line of that step', async () => {
      const w = await writer({ fresh: true });
      await w.commit(stepBatch(ref.runId, 1, 1));
      await w.commit(stepBatch(ref.runId, 4, 2));
      await w.takeKeyframe({ step: 2, createdAt: 5, position: ['n3'], state: { kind: 'keyframe', backpack: { a: 1 } } }).write();
      const head = w.chainHead;
      await w.close();
      expect(await sut.store.keyframeSteps(ref)).toEqual([2]);
      const keyframe = await sut.store.loadKeyframe(ref, 2);
      expect(keyframe).toMatchObject({ v: 1, sessionKey: 's1', runId: 'run-a', step: 2, position: ['n3'], chain: head, line: 5, state: { kind: 'keyframe', backpack: { a: 1 } } });
      expect(await sut.store.loadKeyframe(ref, 1)).toBeNull();
    });

    it('keeps the projection equal to the fold of the log, and lists only runs with events, by session then id', async () => {
      const w = await writer({ fresh: true });
      const all: StreamEvent[] = [];
      const started = makeEvent(ref.runId, 1, { type: 'run.started', payload: {} });
      all.push(started);
      await w.commit([started]);
      for (let step = 1; step <= 3; step++) {
        const batch = stepBatch(ref.runId, all.length + 1, step);
        all.push(...batch);
        await w.commit(batch);
      }
      const ended = makeEvent(ref.runId, all.length + 1, { type: 'run.completed', payload: {} });
      all.push(ended);
      await w.commit([ended]);
      await w.close();
      const expected = RunMetaSchema.parse(foldRunMetaBatch(emptyRunMeta('s1', 'run-a'), all));
      expect(await sut.store.loadRunMeta(ref)).toEqual(expected);
      expect(await sut.store.currentRunMeta(ref)).toEqual(expected);
      const other = await writer({ fresh: true }, sut.store, { sessionKey: 's0', runId: 'run-z' });
      await other.commit([makeEvent('run-z', 1)]);
      await other.close();
      // Opened, never written: not a run.
      await (await writer({ fresh: true }, sut.store, { sessionKey: 's1', runId: 'run-empty' })).close();
      expect(await sut.store.listRuns()).toEqual([
        { sessionKey: 's0', runId: 'run-z' },
        { sessionKey: 's1', runId: 'run-a' },
      ]);
      expect(await sut.store.listRuns('s1')).toEqual([{ sessionKey: 's1', runId: 'run-a' }]);
      expect(await sut.store.loadRunMeta({ sessionKey: 's1', runId: 'nope' })).toBeNull();
    });

    // Any code point, and what a store that joins or splits lines could trip on (a Postgres step's lines travel as
    // one newline-joined text).
    const oddText = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 40 }), fc.constantFrom('\n', 'a\nb\n', '\r\n', '\u2028', '\\n', '"},{"', '\u0000'));
    it('reads back exactly what was committed, for any batches and any text, newlines and NULs included (property)', async () => {
      let n = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.array(fc.record({ text: oddText, num: fc.integer() }), { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 6 }),
          async (batches) => {
            const r = { sessionKey: 'prop', runId: `run-${n++}` };
            const w = await sut.store.openWriter(r, { fresh: true });
            const written: StreamEvent[] = [];
            try {
              for (const batch of batches) {
                const events = batch.map((payload) => makeEvent(r.runId, written.length + 1 + batch.indexOf(payload), { payload }));
                written.push(...events);
                await w.commit(events);
              }
            } finally {
              await w.close();
            }
            const read = await readAll(sut.store, r);
            expect(read).toEqual(written);
            const from = Math.floor(written.length / 2);
            expect(await sut.store.readPage(r, written.length, from)).toEqual(written.slice(from));
          },
        ),
        { numRuns: trials(8, 60) },
      );
    });
  });
}
