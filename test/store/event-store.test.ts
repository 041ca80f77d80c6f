import { appendFileSync, existsSync, readFileSync, readdirSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../src/events/index.js';
import { LARGE_LINE } from '../../src/store/chain.js';
import { writtenType } from '../../src/store/log-format.js';
import { EventStore, EventStoreError, LockError, type CorruptLine } from '../../src/store/index.js';
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { bundledScript } from '../support/bundle.js';
import { spawnFixture } from './child.js';
import { SECRETS, makeEvent, tempDir } from './helpers.js';

const RUN = 'run-1';

describe('EventStore', () => {
  let tmp: ReturnType<typeof tempDir>;
  let stores: EventStore[];
  const open = (options: Partial<ConstructorParameters<typeof EventStore>[0]> = {}): EventStore => {
    const store = new EventStore({ dataDir: tmp.dir, sessionKey: 'sess', runId: RUN, ...options });
    stores.push(store);
    return store;
  };
  const fill = async (store: EventStore, count: number, from = 0): Promise<void> => {
    await store.appendBatch(Array.from({ length: count }, (_, i) => makeEvent(RUN, from + i)));
  };
  /** Like {@link fill}, in batches of ten (a batch is the unit the chain vouches for, as a step is in a run). */
  const fillInSteps = async (store: EventStore, count: number): Promise<void> => {
    for (let i = 0; i < count; i += 10) await fill(store, Math.min(10, count - i), i);
  };

  beforeEach(() => {
    tmp = tempDir();
    stores = [];
  });
  afterEach(async () => {
    for (const store of stores) await store.close();
    tmp.cleanup();
  });

  describe('appending and reading', () => {
    it('writes one JSON event per line under sessions/<sessionKey>/runs/<runId>/events.jsonl and reads them back', async () => {
      const store = open();
      await store.append(makeEvent(RUN, 0, { type: 'run.started' }));
      await store.append(makeEvent(RUN, 1));
      await store.close();
      const lines = readFileSync(store.paths.events, 'utf8').trimEnd().split('\n');
      expect(store.paths.events).toBe(`${tmp.dir}/sessions/sess/runs/${RUN}/events.jsonl`);
      expect(lines.map((l) => (JSON.parse(l) as { seq: number }).seq)).toEqual([0, 1]);
      expect(await store.readAll()).toEqual([makeEvent(RUN, 0, { type: 'run.started' }), makeEvent(RUN, 1)]);
    });

    it('streams events and filters them', async () => {
      const store = open();
      await fill(store, 50);
      let count = 0;
      for await (const event of store.readStream()) expect(event.seq).toBe(count++);
      expect(count).toBe(50);
      expect((await store.readFiltered((e) => e.seq % 10 === 0)).map((e) => e.seq)).toEqual([0, 10, 20, 30, 40]);
    });

    it('reads an absent log as empty', async () => {
      expect(await open().readAll()).toEqual([]);
      expect(await open({ runId: 'other' }).readPage(10, 0)).toEqual([]);
    });

    it('rejects an invalid event with the zod path, writing nothing', async () => {
      const store = open();
      await store.append(makeEvent(RUN, 0));
      const bad = { ...makeEvent(RUN, 1), type: 'nope' } as unknown as ReturnType<typeof makeEvent>;
      await expect(store.append(bad)).rejects.toThrow(/invalid event: type:/);
      await expect(store.append({ ...makeEvent(RUN, 1), seq: -1 })).rejects.toThrow(EventStoreError);
      await expect(store.append({ ...makeEvent(RUN, 1), seq: -1 })).rejects.toThrow(/invalid event: seq: Too small/);
      await expect(store.append({ ...makeEvent(RUN, 1), payload: [] } as unknown as ReturnType<typeof makeEvent>)).rejects.toThrow(/invalid event: payload:/);
      await expect(store.appendBatch([makeEvent(RUN, 1), { ...makeEvent(RUN, 2), id: '' }])).rejects.toThrow(/invalid event 1 of the batch: id:/);
      expect((await store.readAll()).length).toBe(1);
    });

    it('rejects an event of another run or session', async () => {
      const store = open();
      await expect(store.append(makeEvent('other-run', 0))).rejects.toThrow(/belongs to run "other-run"/);
      await expect(store.append(makeEvent(RUN, 0, { sessionKey: 'x' }))).rejects.toThrow(/sessionKey "x"/);
    });

    it('requires increasing seq and reports the last stored seq on reopen', async () => {
      const store = open();
      await fill(store, 3);
      await expect(store.append(makeEvent(RUN, 2))).rejects.toThrow(/seq 2, not greater than the last stored seq 2/);
      await store.close();
      const again = open();
      expect(await again.open()).toEqual({ lastSeq: 2, eventCount: 3 });
      await again.append(makeEvent(RUN, 3));
      expect(again.lastSeq).toBe(3);
    });

    it('appendBatch writes all or nothing when one event is invalid', async () => {
      const store = open();
      await fill(store, 2);
      const batch = [makeEvent(RUN, 2), makeEvent(RUN, 3), { ...makeEvent(RUN, 4), v: 2 } as unknown as ReturnType<typeof makeEvent>];
      await expect(store.appendBatch(batch)).rejects.toThrow(/event 2 of the batch/);
      await expect(store.appendBatch([makeEvent(RUN, 5), makeEvent(RUN, 4)])).rejects.toThrow(/event 1 of the batch has seq 4/);
      expect((await store.readAll()).map((e) => e.seq)).toEqual([0, 1]);
    });

    it('rejects appends after close', async () => {
      const store = open();
      await store.append(makeEvent(RUN, 0));
      await store.close();
      await expect(store.append(makeEvent(RUN, 1))).rejects.toThrow(/closed/);
    });

    it('appendBatch reports every failure as a rejected promise, never a synchronous throw', async () => {
      const store = open();
      const failures = [
        () => store.appendBatch('not an array' as unknown as ReturnType<typeof makeEvent>[]),
        () => store.appendBatch([{ ...makeEvent(RUN, 0), type: 'nope' } as unknown as ReturnType<typeof makeEvent>]),
      ];
      for (const call of failures) await expect(call()).rejects.toThrow(EventStoreError);
      await store.appendBatch([]);
      await store.appendBatch([makeEvent(RUN, 0), makeEvent(RUN, 1)]);
      await store.close();
      const pending = store.appendBatch([makeEvent(RUN, 2), makeEvent(RUN, 3)]);
      await expect(pending).rejects.toThrow(/closed/);
      expect((await open().readAll()).map((e) => e.seq)).toEqual([0, 1]);
    });
  });

  describe('space reserved after the last line', () => {
    /** The log's bytes: its lines, and the zeros after them. */
    const parts = (store: EventStore): { data: Buffer; reserved: Buffer } => {
      const bytes = readFileSync(store.paths.events);
      const end = bytes.lastIndexOf(0x0a) + 1;
      return { data: bytes.subarray(0, end), reserved: bytes.subarray(end) };
    };

    it('with every durability, a writer keeps zeros after the last line, which readers take for unwritten space, and cuts them when it closes', async () => {
      for (const durability of ['batch', 'always', 'never'] as const) {
        const store = open({ runId: `reserve-${durability}`, durability });
        const run = store.runId;
        await store.appendBatch([makeEvent(run, 0, { type: 'run.started' })]);
        for (let i = 1; i < 197; i += 4) await store.appendBatch(Array.from({ length: 4 }, (_, j) => makeEvent(run, i + j)));
        const live = parts(store);
        expect(live.reserved.length, durability).toBeGreaterThan(0);
        expect(live.reserved.every((b) => b === 0), durability).toBe(true);
        // Every reader answers from the lines alone, as it does once the space is cut.
        const reader = new EventStore({ dataDir: tmp.dir, sessionKey: 'sess', runId: run });
        expect((await reader.readAll()).map((e) => e.seq)).toEqual(Array.from({ length: 197 }, (_, i) => i));
        expect((await reader.readPage(10, 192)).map((e) => e.seq)).toEqual([192, 193, 194, 195, 196]);
        expect(await reader.countEvents()).toBe(197);
        expect(await reader.verify()).toMatchObject({ ok: true, tornTailBytes: 0, lines: 197 });
        await store.close();
        const closed = parts(store);
        expect(closed.reserved.length, durability).toBe(0);
        expect(closed.data.equals(live.data), durability).toBe(true);
      }
    });

    it('on a full disk, the space that cannot be reserved does not fail an append: appends go on until the lines themselves do not fit', async () => {
      // A file size limit (ulimit -f, in KB; SIGXFSZ ignored so that a write past it fails with EFBIG) stands for a
      // disk with 256 KB left. The events are 2 KB: reserving 64 KB, then as much again as the log holds, fails
      // long before the lines do. The child runs bundled (node starts it in a fraction of `--import tsx`'s time).
      const script = await bundledScript(join(import.meta.dirname, 'fixtures', 'fill-events.ts'));
      const child = await new Promise<{ stdout: string; stderr: string }>((resolve) => {
        execFile('bash', ['-c', `trap '' XFSZ; ulimit -f 256; exec "${process.execPath}" "${script}" "${tmp.dir}"`], { encoding: 'utf8' }, (_error, stdout, stderr) => resolve({ stdout, stderr }));
      });
      const appended = Number(/appended (\d+)/.exec(child.stdout)?.[1]);
      expect(child.stdout, child.stderr).toMatch(/EFBIG/);
      expect(appended * 2000).toBeGreaterThan(0.9 * 256 * 1024);
      const reader = new EventStore({ dataDir: tmp.dir, sessionKey: 'full', runId: 'fill' });
      expect(await reader.countEvents()).toBe(appended);
      expect(await reader.verify()).toMatchObject({ ok: true, lines: appended, tornTailBytes: 0 });
    });

    it('the next writer cuts the space a writer that did not close left, and continues the log after the last line', async () => {
      const first = open({ runId: 'left-open' });
      await first.appendBatch([makeEvent('left-open', 0, { type: 'run.started' }), makeEvent('left-open', 1)]);
      const left = parts(first);
      expect(left.reserved.length).toBeGreaterThan(0);
      // A writer that died holding the log: its lock and its reserved space stay behind (the lock is let go here, as
      // a kill's is judged stale: see the crash tests, which kill real writers).
      const copy = `${tmp.dir}/copy.jsonl`;
      writeFileSync(copy, readFileSync(first.paths.events));
      await first.close();
      writeFileSync(first.paths.events, readFileSync(copy));
      const second = open({ runId: 'left-open' });
      expect(await second.open()).toEqual({ lastSeq: 1, eventCount: 2 });
      expect(readFileSync(second.paths.events).equals(left.data)).toBe(true);
      await second.append(makeEvent('left-open', 2));
      await second.close();
      expect(parts(second).reserved.length).toBe(0);
      expect((await second.readAll()).map((e) => e.seq)).toEqual([0, 1, 2]);
      expect(await second.verify()).toMatchObject({ ok: true, tornTailBytes: 0 });
    });

    it('a line that lost its end to zeros (torn, or damaged) is not served, and the zeros are not counted as torn bytes', async () => {
      const store = open();
      for (let i = 0; i < 5; i++) await store.appendBatch([makeEvent(RUN, i)]);
      await store.close();
      const bytes = readFileSync(store.paths.events);
      // The last line's last 20 bytes become zeros, and 100 more follow.
      const damaged = Buffer.concat([bytes.subarray(0, bytes.length - 20), Buffer.alloc(120)]);
      writeFileSync(store.paths.events, damaged);
      const reader = new EventStore({ dataDir: tmp.dir, sessionKey: 'sess', runId: RUN });
      const warnings: string[] = [];
      expect((await reader.readAll({ onWarning: (m) => warnings.push(m) })).map((e) => e.seq)).toEqual([0, 1, 2, 3]);
      const report = await reader.verify();
      expect(report.lines).toBe(4);
      expect(report.tornTailBytes).toBe(bytes.length - 20 - (bytes.subarray(0, bytes.length - 20).lastIndexOf(0x0a) + 1));
    });
  });

  describe('typed reads', () => {
    const TYPES = ['node.started', 'node.completed', 'checkpoint.saved', 'custom'] as const;

    it('serve exactly the events of the asked types, whatever their payloads, ids and session keys hold', async () => {
      // Payloads that spell other types' text (nested "type" keys, strings holding `"type":"…"`) must not change a line's type.
      const payload = fc.dictionary(
        fc.constantFrom('type', 'n', 'note', '"type":"node.started"'),
        fc.oneof(fc.constantFrom(...TYPES), fc.string(), fc.constantFrom('"type":"node.started"', '\\"type\\":"x"'), fc.record({ type: fc.constantFrom(...TYPES) })),
      );
      const event = fc.record({ type: fc.constantFrom(...TYPES), id: fc.string({ minLength: 1, maxLength: 12 }), payload, session: fc.boolean() });
      let round = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(event, { maxLength: 12 }), fc.subarray([...TYPES]), async (specs, wanted) => {
          const runId = `typed-${round++}`;
          const store = open({ runId });
          const events = specs.map((e, seq) => makeEvent(runId, seq, { type: e.type, id: e.id, payload: e.payload, ...(e.session ? { sessionKey: 'sess' } : {}) }));
          if (events.length > 0) await store.appendBatch(events);
          const all = await open({ runId }).readAll();
          expect(await open({ runId }).readAll({ types: wanted })).toEqual(all.filter((e) => (wanted as string[]).includes(e.type)));
        }),
        { numRuns: 40 },
      );
    });

    it('read a line\'s type from its head only as the writer writes it, never where a later key could name another', () => {
      const line = (text: string): Buffer => Buffer.from(text);
      const head = '{"v":1,"id":"e-1","seq":3,"timestamp":5,"runId":"r"';
      expect(writtenType(line(`${head},"type":"node.started","payload":{}}`))).toBe('node.started');
      expect(writtenType(line(`${head},"sessionKey":"s","type":"custom","payload":{"n":"é"}}`))).toBe('custom');
      // A duplicate key (JSON.parse takes the last), another field order, escapes, or spaces: not certain, so decoded.
      expect(writtenType(line(`${head},"type":"custom","payload":{},"type":"node.started"}`))).toBeUndefined();
      expect(writtenType(line(`${head},"type":"custom","payload":{"type":"node.started"}}`))).toBeUndefined();
      expect(writtenType(line(`{"type":"custom","v":1,"id":"e-1","seq":3,"timestamp":5,"runId":"r","payload":{}}`))).toBeUndefined();
      expect(writtenType(line(`{"v":1,"id":"e\\"1","seq":3,"timestamp":5,"runId":"r","type":"custom","payload":{}}`))).toBeUndefined();
      expect(writtenType(line(`${head},"type":"cust\\u006fm","payload":{}}`))).toBeUndefined();
      expect(writtenType(line(`${head}, "type":"custom","payload":{}}`))).toBeUndefined();
    });

    it('still report a corrupt line of a type not asked for, in a batch that fails its chain hash', async () => {
      const store = open();
      await fill(store, 5);
      await store.close();
      const text = readFileSync(store.paths.events, 'utf8').split('\n');
      // Its head reads as a `custom` event (not asked for), its rest is not JSON.
      text[1] = `{"v":1,"id":"evt-1","seq":1,"timestamp":1,"runId":"${RUN}","type":"custom",garbage`;
      writeFileSync(store.paths.events, text.join('\n'));
      const seen: CorruptLine[] = [];
      const notServed: string[] = [];
      const read = await open().readAll({ types: ['node.started'], onCorrupt: (c) => seen.push(c), onWarning: (w) => notServed.push(w) });
      expect(read).toEqual([]);
      expect(seen.map((c) => [c.line, c.error])).toEqual([[2, expect.stringMatching(/not JSON .*position 74/)]]);
      // Lines 3-5, sound but of a type not asked for, are not reported as corrupt.
      // The edit left the log shorter than its writer closed it: that is reported first.
      expect(notServed).toEqual([expect.stringMatching(/cut or edited after it was closed/), expect.stringMatching(/lines 2-5 do not match the chain hash on line 5.*not served/)]);
      await expect(open().readAll({ types: ['node.started'] })).rejects.toThrow(/corrupt event at line 2 .*not JSON/);
    });
  });

  describe('redaction', () => {
    it('never writes secrets from payloads and marks the event', async () => {
      const store = open({ durability: 'always' });
      await store.append(
        makeEvent(RUN, 0, {
          payload: { headers: { Authorization: 'x' }, apiKey: 'plain-secret-value', text: `keys: ${Object.values(SECRETS).join(' and ')}` },
        }),
      );
      await store.append(makeEvent(RUN, 1, { payload: { text: 'nothing here' } }));
      const raw = readFileSync(store.paths.events, 'utf8');
      for (const secret of [...Object.values(SECRETS), 'plain-secret-value']) expect(raw).not.toContain(secret.slice(8, 28));
      const [first, second] = await store.readAll();
      expect(first!.redaction).toEqual({ containsSecrets: true });
      expect(first!.payload['apiKey']).toBe('[REDACTED]');
      expect(second!.redaction).toBeUndefined();
    });
  });

  describe('index and readPage', () => {
    it('returns the same page as slicing the whole log, at every offset', async () => {
      const store = open({ indexInterval: 7 });
      await fill(store, 100);
      const all = await store.readAll();
      for (const offset of [0, 1, 6, 7, 8, 50, 93, 99, 100, 150]) {
        expect(await store.readPage(10, offset)).toEqual(all.slice(offset, offset + 10));
      }
      const reader = open();
      expect(await reader.readPage(5, 70)).toEqual(all.slice(70, 75));
    });

    it('records { line, offset, seq } every indexInterval events', async () => {
      const store = open({ indexInterval: 10 });
      await fill(store, 25);
      await store.append(makeEvent(RUN, 25));
      const entries = readFileSync(store.paths.index, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as { line: number; offset: number; seq: number });
      expect(entries.map((e) => e.line)).toEqual([10, 20]);
      const log = readFileSync(store.paths.events);
      for (const e of entries) expect(JSON.parse(log.subarray(e.offset, log.indexOf(10, e.offset)).toString()).seq).toBe(e.seq);
    });

    it('creates no index file for a log shorter than indexInterval, and creates it with its first entry', async () => {
      const store = open({ indexInterval: 10 });
      await fill(store, 10);
      expect(existsSync(store.paths.index)).toBe(false);
      expect((await open().readPage(3, 6)).map((e) => e.seq)).toEqual([6, 7, 8]);
      expect(await open().verify()).toMatchObject({ ok: true });
      await store.append(makeEvent(RUN, 10));
      expect(readFileSync(store.paths.index, 'utf8').trimEnd().split('\n').map((l) => (JSON.parse(l) as { line: number }).line)).toEqual([10]);
    });

    it('records the right offsets when small batches cross index entries', async () => {
      const store = open({ indexInterval: 7 });
      for (let seq = 0; seq < 60; seq += 3) await fill(store, 3, seq);
      const entries = readFileSync(store.paths.index, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as { line: number; offset: number; seq: number });
      expect(entries.map((e) => e.line)).toEqual([7, 14, 21, 28, 35, 42, 49, 56]);
      const log = readFileSync(store.paths.events);
      for (const e of entries) expect(JSON.parse(log.subarray(e.offset, log.indexOf(10, e.offset)).toString()).seq).toBe(e.seq);
      expect((await open().readPage(4, 40)).map((e) => e.seq)).toEqual([40, 41, 42, 43]);
    });

    it('seeks through the index instead of scanning from the start', async () => {
      const store = open({ indexInterval: 100 });
      await fillInSteps(store, 1000);
      await store.close();
      // Corrupt line 3 (same length, so the index still points at lines): a scan from the start would hit it; a seek
      // to offset 900 does not.
      const text = readFileSync(store.paths.events, 'utf8').split('\n');
      text[2] = '{"broken":'.padEnd(text[2]!.length);
      writeFileSync(store.paths.events, text.join('\n'));
      const reader = open();
      expect((await reader.readPage(10, 900)).map((e) => e.seq)).toEqual(Array.from({ length: 10 }, (_, i) => 900 + i));
      await expect(reader.readAll()).rejects.toThrow(/line 3/);
    });

    it('readStream/readAll from an event number seek through the index too', async () => {
      const store = open({ indexInterval: 100 });
      await fillInSteps(store, 1000);
      await store.close();
      const text = readFileSync(store.paths.events, 'utf8').split('\n');
      text[4] = 'not json'.padEnd(text[4]!.length);
      writeFileSync(store.paths.events, text.join('\n'));
      const reader = open();
      expect((await reader.readAll({ from: 995 })).map((e) => e.seq)).toEqual([995, 996, 997, 998, 999]);
      expect((await reader.readFiltered((e) => e.seq % 2 === 0, { from: 990 })).length).toBe(5);
      expect(await reader.readAll({ from: 5000 })).toEqual([]);
      await expect(reader.readAll({ from: 3 })).rejects.toThrow(/line 5/);
      await expect(reader.readAll({ from: -1 })).rejects.toThrow(/from must be a non-negative integer/);
    });

    it('buildIndex rebuilds the index with a new interval', async () => {
      const store = open({ indexInterval: 1000 });
      await fill(store, 30);
      await store.buildIndex(5);
      const lines = readFileSync(store.paths.index, 'utf8').trimEnd().split('\n');
      expect(lines.map((l) => (JSON.parse(l) as { line: number }).line)).toEqual([5, 10, 15, 20, 25]);
      await fill(store, 6, 30);
      expect(readFileSync(store.paths.index, 'utf8').trimEnd().split('\n').length).toBe(7);
      await expect(store.buildIndex(0)).rejects.toThrow(/positive integer/);
    });

    it('catches a missing or wrong index up with the log on open', async () => {
      const store = open({ indexInterval: 10 });
      await fill(store, 45);
      await store.close();
      const good = readFileSync(store.paths.index, 'utf8');
      writeFileSync(store.paths.index, good.split('\n').slice(0, 2).join('\n') + '\n');
      await open({ indexInterval: 10 }).open();
      await stores[stores.length - 1]!.close();
      expect(readFileSync(store.paths.index, 'utf8')).toBe(good);
      writeFileSync(store.paths.index, '{"line":10,"offset":3,"seq":10}\n');
      const again = open({ indexInterval: 10 });
      await again.open();
      expect(readFileSync(store.paths.index, 'utf8')).toBe(good);
    });

    it('a writer does not count lines from an index entry whose line number the log does not vouch for: it rebuilds the index', async () => {
      const store = open({ indexInterval: 10 });
      await fillInSteps(store, 25);
      await store.close();
      const text = readFileSync(store.paths.index, 'utf8');
      expect(text).toContain('"line":20,');
      // Only the line number of the last entry is changed: its offset and seq still match the log.
      writeFileSync(store.paths.index, text.replace('"line":20,', '"line":21,'));
      const again = open({ indexInterval: 10 });
      expect(await again.open()).toEqual({ lastSeq: 24, eventCount: 25 });
      await fill(again, 1, 25);
      await again.close();
      const entries = readFileSync(store.paths.index, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as { line: number; seq: number });
      expect(entries.map((e) => [e.line, e.seq])).toEqual([[10, 10], [20, 20]]);
      expect(await again.verify()).toMatchObject({ ok: true, lines: 26 });
    });

    it('empties the index of a log found empty on open, and indexes the new lines from the start', async () => {
      const store = open({ indexInterval: 10 });
      await fill(store, 25);
      await store.close();
      expect(readFileSync(store.paths.index, 'utf8').trimEnd().split('\n')).toHaveLength(2);
      // As a crash can leave it (a writer that did not close: its marker names no close).
      writeFileSync(store.paths.events, '');
      writeFileSync(store.paths.pendingBatch, JSON.stringify({ gen: 1, start: 0, end: 0 }));
      const again = open({ indexInterval: 10 });
      await again.open();
      expect(existsSync(store.paths.index)).toBe(false);
      await fill(again, 12, 100);
      const entries = readFileSync(store.paths.index, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as { line: number; offset: number; seq: number });
      expect(entries.map((e) => [e.line, e.seq])).toEqual([[10, 110]]);
      expect((await open().readPage(2, 10)).map((e) => e.seq)).toEqual([110, 111]);
    });

    it('a reader with a stale index still returns the right page', async () => {
      const store = open({ indexInterval: 10 });
      await fill(store, 40);
      await store.close();
      writeFileSync(store.paths.index, '{"line":0,"offset":0,"seq":0}\n{"line":30,"offset":5,"seq":30}\n');
      const reader = open();
      expect((await reader.readPage(3, 31)).map((e) => e.seq)).toEqual([31, 32, 33]);
    });

    it('between index entries, hashes only the batches it serves: a changed line in the batch of the page is an error, one in an earlier batch is not read', async () => {
      const store = open({ indexInterval: 100 });
      await fillInSteps(store, 300);
      await store.close();
      const original = readFileSync(store.paths.events, 'utf8');
      const change = (line: number): void => {
        const text = original.split('\n');
        // Same length and still a valid event: only the chain can tell.
        text[line] = text[line]!.replace(`"n":${line}`, `"n":${line - 100}`);
        expect(text[line]).not.toBe(original.split('\n')[line]);
        writeFileSync(store.paths.events, text.join('\n'));
      };
      // Line 253 (0-based 252) is in the batch of lines 251-260, which holds the page's first event (255).
      change(252);
      await expect(open().readPage(3, 254)).rejects.toThrow(/lines 251-260 do not match the chain hash/);
      // A changed line in the batch before the page's (241-250) is not read, so the page is served, and it is right.
      change(245);
      expect((await open().readPage(3, 254)).map((e) => e.seq)).toEqual([254, 255, 256]);
      await expect(open().readPage(3, 244)).rejects.toThrow(/lines 241-250 do not match the chain hash/);
      expect(await open().verify()).toMatchObject({ ok: false, chain: 'damaged', firstBadLine: 241 });
    });

    it('validates readPage arguments', async () => {
      const store = open();
      await expect(store.readPage(-1, 0)).rejects.toThrow(/pageSize/);
      await expect(store.readPage(1, 1.5)).rejects.toThrow(/offset/);
    });
  });

  describe('chain hashes', () => {
    it('seal the first line and the last line of every batch; readers hand out events without them', async () => {
      const store = open();
      await fill(store, 3);
      await store.append(makeEvent(RUN, 3));
      await store.close();
      const lines = readFileSync(store.paths.events, 'utf8').trimEnd().split('\n');
      expect(lines.map((l) => /,"chain":"[0-9a-f]{64}"\}$/.test(l))).toEqual([true, false, true, true]);
      const events = await open().readAll();
      expect(events.map((e) => e.seq)).toEqual([0, 1, 2, 3]);
      expect(events.every((e) => !('chain' in e))).toBe(true);
      expect(await open().verify()).toMatchObject({ ok: true, chain: 'verified', verifiedLines: 4, chainHead: lines[3]!.slice(-66, -2) });
    });

    it('seal and index batches holding lines larger than LARGE_LINE (written from one Buffer each) like any other', async () => {
      // Every place a large line can take in a batch: alone, first (sealed twice in the log's first batch), middle,
      // last; multi-byte text so that bytes and characters differ.
      const big = (seq: number, char: string): StreamEvent => makeEvent(RUN, seq, { payload: { n: seq, text: char.repeat(LARGE_LINE + seq) } });
      const batches: StreamEvent[][] = [
        [big(0, 'é'), makeEvent(RUN, 1), big(2, 'a')],
        [makeEvent(RUN, 3), big(4, '€'), makeEvent(RUN, 5)],
        [big(6, 'x')],
        [makeEvent(RUN, 7), big(8, 'ü')],
      ];
      const store = open({ indexInterval: 1 });
      for (const batch of batches) await store.appendBatch(batch);
      await store.append(big(9, 'b'));
      await store.close();
      const text = readFileSync(store.paths.events, 'utf8');
      const lines = text.trimEnd().split('\n');
      expect(lines.map((l) => /,"chain":"[0-9a-f]{64}"\}$/.test(l))).toEqual([true, false, true, false, false, true, true, false, true, true]);
      expect(await open().readAll()).toEqual([...batches.flat(), big(9, 'b')]);
      expect(await open().verify()).toMatchObject({ ok: true, chain: 'verified', verifiedLines: 10 });
      // The index's byte offsets land on line starts (indexInterval 1: every line but the first has an entry).
      const starts = lines.map((_, i) => Buffer.byteLength(lines.slice(0, i).map((l) => `${l}\n`).join(''))).slice(1);
      const entries = readFileSync(store.paths.index, 'utf8').trimEnd().split('\n').map((l) => (JSON.parse(l) as { offset: number }).offset);
      expect(entries).toEqual(starts);
      expect((await open().readPage(2, 7)).map((e) => e.seq)).toEqual([7, 8]);
    });

    it('write an event with a large payload from the pieces of its JSON: the same bytes as one JSON.stringify, sealed alike', async () => {
      const wide = (seq: number): StreamEvent => makeEvent(RUN, seq, { payload: { rows: Array.from({ length: 30_000 + seq }, (_, i) => ({ i, s: `ü${i}` })) } });
      const batches: StreamEvent[][] = [[wide(0), makeEvent(RUN, 1)], [makeEvent(RUN, 2), wide(3)], [wide(4)]];
      const store = open();
      for (const batch of batches) await store.appendBatch(batch);
      await store.close();
      const lines = readFileSync(store.paths.events, 'utf8').trimEnd().split('\n');
      const unsealed = lines.map((line) => line.replace(/,"chain":"[0-9a-f]{64}"\}$/, '}'));
      expect(unsealed).toEqual(batches.flat().map((event) => JSON.stringify(event)));
      expect(lines.map((l) => /,"chain":"[0-9a-f]{64}"\}$/.test(l))).toEqual([true, true, false, true, true]);
      expect(await open().readAll()).toEqual(batches.flat());
      expect(await open().verify()).toMatchObject({ ok: true, chain: 'verified', verifiedLines: 5 });
    });

    it('drop a chain field that comes with an event to append (the log sets it)', async () => {
      const store = open();
      await store.appendBatch([{ ...makeEvent(RUN, 0), chain: 'f'.repeat(64) }, makeEvent(RUN, 1)]);
      await store.close();
      expect(readFileSync(store.paths.events, 'utf8')).not.toContain('f'.repeat(64));
      expect(await open().verify()).toMatchObject({ ok: true, chain: 'verified' });
    });
  });

  describe('crash damage', () => {
    it('cuts a torn last line on open; readers ignore it before that', async () => {
      const store = open();
      await fill(store, 3);
      await store.close();
      appendFileSync(store.paths.events, '{"v":1,"id":"half');
      const reader = open();
      expect((await reader.readAll()).length).toBe(3);
      expect((await reader.verify()).tornTailBytes).toBe('{"v":1,"id":"half'.length);
      const writer = open();
      expect(await writer.open()).toEqual({ lastSeq: 2, eventCount: 3 });
      await writer.append(makeEvent(RUN, 3));
      expect((await writer.readAll()).map((e) => e.seq)).toEqual([0, 1, 2, 3]);
      expect(await writer.verify()).toMatchObject({ ok: true, lines: 4, tornTailBytes: 0 });
    });

    it('appends issued together before the log is open wait for its repair, in call order', async () => {
      const store = open();
      await fill(store, 3);
      await store.close();
      appendFileSync(store.paths.events, '{"v":1,"torn');
      const writer = open();
      await Promise.all([writer.append(makeEvent(RUN, 3)), writer.appendBatch([makeEvent(RUN, 4), makeEvent(RUN, 5)]), writer.append(makeEvent(RUN, 6))]);
      expect((await writer.readAll()).map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    });

    it('hides and then cuts a batch left unfinished by a crash', async () => {
      const store = open();
      await fill(store, 2);
      await store.close();
      const size = readFileSync(store.paths.events).length;
      // What a crash in the middle of a 3-event batch leaves: the marker and two of its three lines.
      const lines = [2, 3, 4].map((seq) => JSON.stringify(makeEvent(RUN, seq)) + '\n');
      writeFileSync(store.paths.pendingBatch, JSON.stringify({ gen: 99, start: size, end: size + lines.join('').length }));
      appendFileSync(store.paths.events, lines[0]! + lines[1]!);
      const reader = open();
      expect((await reader.readAll()).map((e) => e.seq)).toEqual([0, 1]);
      expect((await reader.verify()).tornTailBytes).toBe(lines[0]!.length + lines[1]!.length);
      const writer = open();
      expect(await writer.open()).toEqual({ lastSeq: 1, eventCount: 2 });
      expect(readFileSync(store.paths.events).length).toBe(size);
      await writer.appendBatch([makeEvent(RUN, 2), makeEvent(RUN, 3)]);
      expect((await open().readAll()).map((e) => e.seq)).toEqual([0, 1, 2, 3]);
    });

    it('reports a corrupt middle line by number, and skips it only when asked, never silently', async () => {
      const store = open();
      await fill(store, 5);
      await store.close();
      const text = readFileSync(store.paths.events, 'utf8').split('\n');
      text[1] = 'garbage';
      text[3] = JSON.stringify({ ...makeEvent(RUN, 3), type: 'bogus' });
      writeFileSync(store.paths.events, text.join('\n'));
      const reader = open();
      await expect(reader.readAll()).rejects.toMatchObject({ line: 2, message: expect.stringMatching(/corrupt event at line 2 .*not JSON/) });
      const seen: CorruptLine[] = [];
      // The batch of lines 2-5 fails its chain hash: its corrupt lines are reported, and nothing of it is served.
      const notServed: string[] = [];
      expect((await reader.readAll({ onCorrupt: (c) => seen.push(c), onWarning: (w) => notServed.push(w) })).map((e) => e.seq)).toEqual([0]);
      expect(seen.map((c) => c.line)).toEqual([2, 4]);
      expect(notServed).toEqual([expect.stringMatching(/cut or edited after it was closed/), expect.stringMatching(/events\.jsonl: lines 2-5 do not match the chain hash on line 5.*not served/)]);
      expect(seen[1]!.error).toMatch(/not a valid event \(type:/);
      const warnings: string[] = [];
      const onWarning = (w: Error): void => void warnings.push(w.message);
      process.on('warning', onWarning);
      try {
        expect((await reader.readPage(10, 0, { onCorrupt: 'skip' })).length).toBe(1);
        await new Promise((r) => setImmediate(r));
      } finally {
        process.off('warning', onWarning);
      }
      expect(warnings.join('\n')).toMatch(/skipped corrupt line 2/);
      const report = await reader.verify();
      expect(report).toMatchObject({ ok: false, chain: 'damaged', firstBadLine: 2, lines: 5, events: 3 });
      expect(report.corruptLines.map((c) => c.line)).toEqual([2, 4]);
    });
  });

  describe('a log cut after its writer closed it', () => {
    /** A closed log of single-event batches, and where each of its lines ends. */
    const closedLog = async (): Promise<{ store: EventStore; ends: number[] }> => {
      const store = open();
      for (let i = 0; i < 6; i++) await store.appendBatch([makeEvent(RUN, i)]);
      await store.close();
      const bytes = readFileSync(store.paths.events);
      const ends: number[] = [];
      for (let at = bytes.indexOf(0x0a); at !== -1; at = bytes.indexOf(0x0a, at + 1)) ends.push(at + 1);
      return { store, ends };
    };

    it('is reported by verify and refused by the next writer, whether cut at a batch boundary or inside a line', async () => {
      for (const cut of ['boundary', 'torn'] as const) {
        const { store, ends } = await closedLog();
        const size = ends[ends.length - 1]!;
        const to = cut === 'boundary' ? ends[ends.length - 2]! : size - 20;
        truncateSync(store.paths.events, to);
        const report = await new EventStore({ dataDir: tmp.dir, sessionKey: 'sess', runId: RUN }).verify();
        expect(report.ok, cut).toBe(false);
        expect(report.problem, cut).toBe(`${store.paths.events}: its writer closed it with ${size} bytes, it now holds ${to}: the log was cut or edited after it was closed`);
        // Readers serve what is left, and say what happened.
        const warnings: string[] = [];
        const read = await new EventStore({ dataDir: tmp.dir, sessionKey: 'sess', runId: RUN }).readAll({ onWarning: (m) => warnings.push(m) });
        expect(read.length, cut).toBe(5);
        expect(warnings, cut).toContainEqual(expect.stringMatching(/its writer closed it with \d+ bytes, it now holds \d+: the log was cut or edited after it was closed; what it held after \d+ bytes is lost/));
        await expect(open().open(), cut).rejects.toThrow(/was cut or edited after it was closed.*cannot be continued/);
        // Refused without touching the witness: asked again, the writer still refuses.
        await expect(open().open(), cut).rejects.toThrow(/was cut or edited after it was closed/);
        tmp.cleanup();
        tmp = tempDir();
      }
    });

    it('is not confused with a crash: a writer that did not close leaves no record of a size, and the next writer cuts its torn line', async () => {
      const { store, ends } = await closedLog();
      const writer = open();
      await writer.open();
      await writer.appendBatch([makeEvent(RUN, 6)]);
      // The writer dies here: its lines stay, and a torn line after them; its lock is let go as a kill's would be.
      const log = readFileSync(store.paths.events);
      const marker = readFileSync(store.paths.pendingBatch);
      await writer.close();
      writeFileSync(store.paths.events, Buffer.concat([log.subarray(0, log.lastIndexOf(0x0a) + 1), Buffer.from('{"v":1,"id":"to')]));
      writeFileSync(store.paths.pendingBatch, marker);
      expect(marker.toString()).not.toContain('closed');
      const next = open();
      expect(await next.open()).toEqual({ lastSeq: 6, eventCount: 7 });
      expect(ends.length).toBe(6);
      await next.close();
      expect(await next.verify()).toMatchObject({ ok: true, lines: 7, tornTailBytes: 0 });
    });
  });

  it('verify never calls a log cut while its writer resumes and closes it (the marker is read around the size)', async () => {
    const store = open();
    await fill(store, 3);
    await store.close();
    let seq = 3;
    for (let round = 0; round < 30; round++) {
      const verifying = new EventStore({ dataDir: tmp.dir, sessionKey: 'sess', runId: RUN }).verify();
      const writer = new EventStore({ dataDir: tmp.dir, sessionKey: 'sess', runId: RUN });
      await writer.appendBatch([makeEvent(RUN, seq++), makeEvent(RUN, seq++)]);
      await writer.close();
      const report = await verifying;
      expect(report.problem ?? '', `round ${round}`).not.toMatch(/cut or edited after it was closed/);
      expect(report.ok, `round ${round}`).toBe(true);
    }
  });

  describe('single writer', () => {
    it('refuses a second writer in the same process, naming the holder', async () => {
      const first = open();
      await first.append(makeEvent(RUN, 0));
      const second = open();
      const error = await second.append(makeEvent(RUN, 1)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockError);
      expect((error as LockError).message).toMatch(/already has a writer: another store instance in this process holds .*events\.lock/);
      expect((error as LockError).holder?.pid).toBe(process.pid);
      expect((await second.readAll()).length).toBe(1);
      await first.close();
      expect(existsSync(first.paths.lock)).toBe(false);
      await second.append(makeEvent(RUN, 1));
    });

    it('refuses a writer while another process holds the lock, and recovers the lock once that process is killed', async () => {
      const bundle = await bundledScript(join(import.meta.dirname, 'fixtures', 'hold-lock.ts'));
      const child = spawnFixture('hold-lock.ts', [tmp.dir, 'sess', RUN], dirname(bundle));
      try {
        await child.waitFor('ready');
        const store = open();
        await expect(store.open()).rejects.toThrow(new RegExp(`pid ${child.process.pid} on `));
        child.process.kill('SIGKILL');
        await child.exited;
        await store.append(makeEvent(RUN, 0));
        expect(JSON.parse(readFileSync(store.paths.lock, 'utf8')).pid).toBe(process.pid);
      } finally {
        child.process.kill('SIGKILL');
      }
    });

    it('recovers a lock file left by a dead process and leaves no stray files', async () => {
      const store = open();
      await store.open();
      await store.close();
      writeFileSync(store.paths.lock, JSON.stringify({ pid: 2 ** 22 + 12345, host: (await import('node:os')).hostname(), createdAt: 1 }));
      const again = open();
      await again.append(makeEvent(RUN, 0));
      await again.close();
      expect(readdirSync(again.paths.dir).sort()).toEqual(['events.jsonl', 'events.pending']);
    });

    it('does not judge a lock from another host stale while its lease is fresh, and says so', async () => {
      const store = open();
      await store.open();
      await store.close();
      writeFileSync(store.paths.lock, JSON.stringify({ pid: 2 ** 22 + 12345, host: 'elsewhere', createdAt: 1 }));
      await expect(open().open()).rejects.toThrow(/on elsewhere .*\(judged live: host elsewhere, not checkable by pid here: its lease was refreshed .* ago \(stale after 30 s without one\)\)/);
      const old = new Date(Date.now() - 31_000);
      utimesSync(store.paths.lock, old, old);
      const again = open();
      await again.open();
      await again.close();
    });

    it('a lock naming this pid in another pid namespace is not mistaken for one of this process: the error says whose it is', async () => {
      const store = open();
      await store.open();
      await store.close();
      const { systemProbe } = await import('../../src/fs/index.js');
      writeFileSync(store.paths.lock, JSON.stringify({ pid: process.pid, host: (await import('node:os')).hostname(), createdAt: Date.now(), bootId: systemProbe.bootId(), pidNs: 'pid:[1]', startTime: systemProbe.startTime(process.pid) }));
      const error = await open().open().then(() => undefined, (e: Error) => e.message);
      expect(error).toMatch(/already has a writer: pid \d+ on .*another container than this process's/);
      expect(error).not.toMatch(/another store instance in this process/);
    });
  });
});
