/**
 * Property: edit the index of an event log at random (an entry's line, offset or seq moved by a little or set to any
 * value, an entry dropped, doubled or swapped with another, a byte flipped) and read it back. Every page, and every
 * read from a line, is the one the untouched log gives: the index only says where to start reading, and an entry
 * the log does not vouch for is not used. Logs whose seqs run on by one (as the runtime writes them) and logs with
 * gaps in their seqs (as folded model.delta events leave) are both read, and a log in the chain format of before
 * line numbers were hashed (v1: readers count the lines before an entry instead of letting the chain prove them).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../src/events/types.js';
import { EventStore } from '../../src/store/index.js';
import { makeEvent, rewriteAsChainV1, tempDir } from './helpers.js';
import { trials } from '../support/soak.js';

const INTERVAL = 7;
const EVENTS = 120;
const PAGE = 9;

interface Log {
  runId: string;
  store: EventStore;
  index: string;
  pristine: string;
  events: StreamEvent[];
}

let tmp: ReturnType<typeof tempDir>;
const logs: Log[] = [];

/** A log of EVENTS events in batches of 1 to 4, whose seqs go up by one, or by up to 4 when `gaps`. */
async function writeLog(runId: string, gaps: boolean, format: 'v1' | 'v2' = 'v2'): Promise<Log> {
  const store = new EventStore({ dataDir: tmp.dir, sessionKey: 's', runId, durability: 'never' });
  const events: StreamEvent[] = [];
  let seq = 1;
  while (events.length < EVENTS) {
    const batch: StreamEvent[] = [];
    for (let i = 0; i < 1 + (events.length % 4) && events.length + batch.length < EVENTS; i++) {
      batch.push(makeEvent(runId, seq, { payload: { n: seq, text: 'x'.repeat(seq % 13) } }));
      seq += gaps ? 1 + ((seq * 7) % 4) : 1;
    }
    await store.appendBatch(batch);
    events.push(...batch);
  }
  await store.buildIndex(INTERVAL);
  await store.close();
  if (format === 'v1') await rewriteAsChainV1(store.paths.events, 's', runId);
  const index = store.paths.index;
  return { runId, store: new EventStore({ dataDir: tmp.dir, sessionKey: 's', runId }), index, pristine: readFileSync(index, 'utf8'), events };
}

beforeAll(async () => {
  tmp = tempDir();
  logs.push(await writeLog('consecutive', false), await writeLog('gaps', true), await writeLog('gaps-v1', true, 'v1'));
});
afterAll(() => tmp.cleanup());

type Entry = { line: number; offset: number; seq: number };
type Edit = { kind: 'field'; field: 'line' | 'offset' | 'seq'; delta: number } | { kind: 'drop' | 'double' | 'swap' } | { kind: 'flip'; at: number; xor: number };

const edit: fc.Arbitrary<Edit> = fc.oneof(
  // Mostly moved fields: the edit the index cannot tell from a true entry by its own shape.
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('field' as const),
      field: fc.constantFrom('line' as const, 'offset' as const, 'seq' as const),
      delta: fc.oneof(fc.integer({ min: -3, max: 3 }).filter((d) => d !== 0), fc.integer({ min: -2000, max: 2000 })),
    }),
  },
  fc.record({ kind: fc.constantFrom('drop' as const, 'double' as const, 'swap' as const) }),
  fc.record({ kind: fc.constant('flip' as const), at: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), xor: fc.integer({ min: 1, max: 255 }) }),
);

/** `text` (the index) with `edits` applied, each to the entry at `which` (a share of the entries). */
function damaged(text: string, edits: { edit: Edit; which: number }[]): string {
  let entries = text.trim().split('\n').map((line) => JSON.parse(line) as Entry);
  let bytes = text;
  // Byte flips last: the other edits rewrite the entries.
  for (const { edit: e, which } of [...edits.filter((x) => x.edit.kind !== 'flip'), ...edits.filter((x) => x.edit.kind === 'flip')]) {
    const i = Math.floor(which * entries.length);
    if (e.kind === 'flip') {
      const buffer = Buffer.from(bytes, 'latin1');
      const at = Math.floor(e.at * buffer.length);
      buffer[at] = buffer[at]! ^ e.xor;
      bytes = buffer.toString('latin1');
      continue;
    }
    if (e.kind === 'field') entries[i] = { ...entries[i]!, [e.field]: Math.max(0, entries[i]![e.field] + e.delta) };
    else if (e.kind === 'drop') entries.splice(i, 1);
    else if (e.kind === 'double') entries.splice(i, 0, entries[i]!);
    else if (i + 1 < entries.length) entries = [...entries.slice(0, i), entries[i + 1]!, entries[i]!, ...entries.slice(i + 2)];
    bytes = entries.map((entry) => JSON.stringify(entry) + '\n').join('');
  }
  return bytes;
}

describe('a damaged or edited index', () => {
  it('an entry whose offset was moved forward (its line and seq still agree) is not used: reads at its line are whole', async () => {
    // Found by the property below (rarely: it needs the last entries' offsets moved forward): a read from the
    // entry's line started past it, the log ended before the indexed line, and an empty page came back in silence.
    for (const log of logs) {
      const entries = log.pristine.trim().split('\n').map((line) => JSON.parse(line) as Entry);
      try {
        for (let i = 0; i < entries.length; i++) {
          for (const shift of [1, 10, 100]) {
            const edited = entries.map((entry, j) => (j === i ? { ...entry, offset: entry.offset + shift } : entry));
            const text = edited.map((entry) => JSON.stringify(entry) + '\n').join('');
            writeFileSync(log.index, text);
            const store = new EventStore({ dataDir: tmp.dir, sessionKey: 's', runId: log.runId });
            const at = entries[i]!.line;
            const page = await store.readPage(PAGE, at);
            expect(page.map((e) => e.seq), `page at ${at} of ${log.runId}, entry ${i} offset +${shift}`).toEqual(log.events.slice(at, at + PAGE).map((e) => e.seq));
            const from: number[] = [];
            for await (const { event } of store.readVerified({ from: at })) from.push(event.seq);
            expect(from, `read from ${at} of ${log.runId}, entry ${i} offset +${shift}`).toEqual(log.events.slice(at).map((e) => e.seq));
          }
        }
      } finally {
        writeFileSync(log.index, log.pristine);
      }
    }
  });

  it('never shifts a page or a read from a line: every answer is the untouched log\'s', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: logs.length - 1 }),
        fc.array(fc.record({ edit, which: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }) }), { minLength: 1, maxLength: 3 }),
        fc.array(fc.integer({ min: 0, max: EVENTS - 1 }), { minLength: 1, maxLength: 4 }),
        async (which, edits, offsets) => {
          const log = logs[which]!;
          const text = damaged(log.pristine, edits);
          writeFileSync(log.index, text);
          try {
            for (const offset of offsets) {
              const page = await log.store.readPage(PAGE, offset);
              expect(page.map((e) => e.seq), `page at ${offset} of ${log.runId} with index\n${text}`).toEqual(log.events.slice(offset, offset + PAGE).map((e) => e.seq));
              const from: number[] = [];
              for await (const { event, line } of log.store.readVerified({ from: offset })) {
                expect(line).toBe(offset + from.length);
                from.push(event.seq);
              }
              expect(from, `read from line ${offset} of ${log.runId} with index\n${text}`).toEqual(log.events.slice(offset).map((e) => e.seq));
            }
          } finally {
            writeFileSync(log.index, log.pristine);
          }
        },
      ),
      {
        numRuns: Number(process.env['INDEX_DAMAGE_RUNS'] ?? trials(50, 1000)),
        // Found by a soak run: in the log with gaps in its seqs, the entry of line 14 (seq 57) moved to line 56 has
        // seq - line = the first seq, which was taken for proof of its line, and a page at 100 came back 42 lines off.
        // Found by a soak run of the chain that proves line numbers: two entries swapped and the first one's line
        // moved down, so that a read at 112 took an entry whose line is wrong by 8, skipped every batch before 112
        // unhashed and ran off the end of the log: an empty page in silence. The batch before the entry is hashed now.
        examples: [[0, [{ edit: { kind: 'swap' }, which: 0 }, { edit: { kind: 'field', field: 'line', delta: -8 }, which: 0 }], [76, 112]], [1, [{ edit: { kind: 'drop' }, which: 0 }, { edit: { kind: 'field', field: 'line', delta: 3 }, which: 0 }, { edit: { kind: 'field', field: 'line', delta: 39 }, which: 0 }], [100]]],
      },
    );
  }, 120_000);
});
