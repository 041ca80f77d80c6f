/**
 * Property: edit a recorded run's index and projection at random, as damage or a stray copy leaves them, with their
 * checksums intact where they have one: an index entry's line, offset or seq moved a little or a lot, an entry
 * dropped, doubled or swapped, a byte flipped; the projection replaced by another run's, another session's, an
 * older one of this run, or one that recorded more events than the log serves. Every reader (runs verify, runs list,
 * runs show, event pages, loadRunPoint) gives the answer it gave for the untouched run, or an error or warning
 * naming an edited file. A projection ahead of the log is reported by every reader and is still there after them.
 *
 * `PROJECTION_DAMAGE_RUNS` sets the number of cases (by default 20 in `npm test`, each kind of edit at least once, and 300 in
 * `npm run test:soak`).
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readEventsPage, readRunEvents } from '../../src/cli/backpackflow/store-access.js';
import { listRuns, loadRunPoint, verifyRun } from '../../src/index.js';
import { EventStore, ProjectionStore, emptyRunMeta, foldRunMetaBatch, runPaths, type RunMeta } from '../../src/store/index.js';
import { writeSealed } from '../../src/store/sealed-file.js';
import { recordCountingRun } from './fixtures/counting-run.js';
import { trials } from '../support/soak.js';

const RUN = 'run';
const RUNS = Number(process.env['PROJECTION_DAMAGE_RUNS'] ?? trials(12, 300));
let pristine: string;
let truth: Record<string, string>;
/** Sealed projections to put in place of the run's, by name. */
let projections: Record<string, unknown>;
/** Entries in the untouched index. */
let entryCount: number;

type Reader = (dataDir: string) => Promise<{ answer: string; warnings: string[] }>;

const pageReader =
  (offset: number): Reader =>
  async (dataDir) => {
    const warnings: string[] = [];
    const page = await readEventsPage({ dataDir, session: 'default', runId: RUN }, 25, offset, (w) => warnings.push(w));
    return { answer: JSON.stringify(page), warnings };
  };

const pointReader =
  (step?: number): Reader =>
  async (dataDir) => {
    const { warnings, ...point } = await loadRunPoint({ dataDir, runId: RUN, ...(step === undefined ? {} : { step }) });
    return { answer: JSON.stringify(point), warnings };
  };

const READERS: Record<string, Reader> = {
  'runs verify': async (dataDir) => {
    const report = await verifyRun({ dataDir, runId: RUN });
    return { answer: report.status, warnings: report.problems };
  },
  'runs list': async (dataDir) => {
    const listed = await listRuns({ dataDir });
    return { answer: JSON.stringify(listed), warnings: listed.flatMap((m) => (m.damaged === undefined ? [] : [m.damaged])) };
  },
  'runs show': async (dataDir) => {
    const warnings: string[] = [];
    const events = await readRunEvents({ dataDir, session: 'default', runId: RUN }, (w) => warnings.push(w));
    return { answer: JSON.stringify(events), warnings };
  },
  'loadRunPoint()': pointReader(),
  'loadRunPoint(step 7)': pointReader(7),
  'events page at 0': pageReader(0),
  'events page at 100': pageReader(100),
  'events page at 160': pageReader(160),
};

/** Each case also reads the pages that start near the entries it edits (an entry is used by the pages after it). */
const INDEX_INTERVAL = 7;

type Entry = { line: number; offset: number; seq: number };
type IndexEdit = { kind: 'field'; field: 'line' | 'offset' | 'seq'; delta: number } | { kind: 'drop' | 'double' | 'swap' } | { kind: 'flip'; at: number; xor: number };

const indexEdit: fc.Arbitrary<IndexEdit> = fc.oneof(
  // Mostly moved fields: the edit the index cannot tell from a true entry by its own shape.
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('field' as const),
      field: fc.constantFrom('line' as const, 'offset' as const, 'seq' as const),
      delta: fc.oneof(fc.integer({ min: -3, max: 3 }).filter((d) => d !== 0), fc.integer({ min: -500, max: 500 })),
    }),
  },
  fc.record({ kind: fc.constantFrom('drop' as const, 'double' as const, 'swap' as const) }),
  fc.record({ kind: fc.constant('flip' as const), at: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), xor: fc.integer({ min: 1, max: 255 }) }),
);

/** The index `text` with `edit` applied to the entry at `which` (a share of the entries). */
function editIndex(text: string, edit: IndexEdit, which: number): string {
  if (edit.kind === 'flip') {
    const bytes = Buffer.from(text, 'latin1');
    const at = Math.floor(edit.at * bytes.length);
    bytes[at] = bytes[at]! ^ edit.xor;
    return bytes.toString('latin1');
  }
  let entries = text.trim().split('\n').map((line) => JSON.parse(line) as Entry);
  const i = Math.floor(which * entries.length);
  if (edit.kind === 'field') entries[i] = { ...entries[i]!, [edit.field]: Math.max(0, entries[i]![edit.field] + edit.delta) };
  else if (edit.kind === 'drop') entries.splice(i, 1);
  else if (edit.kind === 'double') entries.splice(i, 0, entries[i]!);
  else if (i + 1 < entries.length) entries = [...entries.slice(0, i), entries[i + 1]!, entries[i]!, ...entries.slice(i + 2)];
  return entries.map((entry) => JSON.stringify(entry) + '\n').join('');
}

beforeAll(async () => {
  pristine = mkdtempSync(join(tmpdir(), 'bpf-projection-damage-'));
  await recordCountingRun(pristine, RUN, 20, 5);
  await recordCountingRun(pristine, 'other', 6, 5);
  const indexer = new EventStore({ dataDir: pristine, sessionKey: 'default', runId: RUN });
  // An index entry every 7 events, so that pages are read from an entry and damage to it matters.
  await indexer.buildIndex(INDEX_INTERVAL);
  entryCount = readFileSync(runPaths(pristine, 'default', RUN).index, 'utf8').trim().split('\n').length;
  const events = await indexer.readAll();
  await indexer.close();
  const meta = (await new ProjectionStore({ dataDir: pristine, sessionKey: 'default' }).loadRunMeta(RUN))!;
  const other = (await new ProjectionStore({ dataDir: pristine, sessionKey: 'default' }).loadRunMeta('other'))!;
  const ahead = (extra: number): RunMeta => ({ ...meta, eventCount: meta.eventCount + extra, lastSeq: meta.lastSeq + extra, status: 'completed' });
  projections = {
    'another run': other,
    'another session': { ...meta, sessionKey: 'elsewhere' },
    'an older one': foldRunMetaBatch(emptyRunMeta('default', RUN), events.slice(0, Math.floor(events.length / 2))),
    'one event ahead': ahead(1),
    'many events ahead': ahead(40),
  };
  truth = {};
  const warned = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  for (const [name, read] of Object.entries(READERS)) {
    const { answer, warnings } = await read(pristine);
    expect(warnings, name).toEqual([]);
    truth[name] = answer;
  }
  expect(warned).not.toHaveBeenCalled();
  vi.restoreAllMocks();
}, 60_000);
afterAll(() => rmSync(pristine, { recursive: true, force: true }));

function readerOf(name: string): Reader {
  return READERS[name] ?? pageReader(Number(/^events page at (\d+)$/.exec(name)![1]));
}

/** What reader `name` answers for the untouched run. */
async function truthOf(name: string): Promise<string> {
  if (truth[name] === undefined) {
    const { answer, warnings } = await readerOf(name)(pristine);
    expect(warnings, name).toEqual([]);
    truth[name] = answer;
  }
  return truth[name]!;
}

const EXAMPLES: Array<[string | undefined, { edit: IndexEdit; which: number }[]]> = [
  ['another run', [{ edit: { kind: 'field', field: 'line', delta: 1 }, which: 0.3 }]],
  ['another session', [{ edit: { kind: 'field', field: 'offset', delta: 200 }, which: 0.5 }]],
  ['an older one', [{ edit: { kind: 'field', field: 'seq', delta: -2 }, which: 0.1 }]],
  ['one event ahead', [{ edit: { kind: 'drop' }, which: 0.6 }]],
  ['many events ahead', [{ edit: { kind: 'double' }, which: 0.2 }]],
  [undefined, [{ edit: { kind: 'swap' }, which: 0.4 }, { edit: { kind: 'flip', at: 0.45, xor: 7 }, which: 0 }]],
];

describe('edits to the index and the projection of a recorded run', () => {
  it('every reader gives the right answer, or an error or warning naming an edited file; a projection ahead of the log stays reported', async () => {
    const projection = fc.option(fc.constantFrom('another run', 'another session', 'an older one', 'one event ahead', 'many events ahead'), { nil: undefined });
    const edits = fc.array(fc.record({ edit: indexEdit, which: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }) }), { maxLength: 3 });
    await fc.assert(
      fc.asyncProperty(projection, edits, fc.shuffledSubarray(Object.keys(READERS), { minLength: 1 }), async (replaced, indexEdits, order) => {
        fc.pre(replaced !== undefined || indexEdits.length > 0);
        const dataDir = mkdtempSync(join(tmpdir(), 'bpf-projection-damage-case-'));
        const emitted: string[] = [];
        vi.spyOn(process, 'emitWarning').mockImplementation((warning) => void emitted.push(String(warning)));
        vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
        try {
          cpSync(pristine, dataDir, { recursive: true });
          const paths = runPaths(dataDir, 'default', RUN);
          const edited: string[] = [];
          if (indexEdits.length > 0) {
            let text = readFileSync(paths.index, 'latin1');
            // Byte flips last: the other edits move whole entries.
            const ordered = [...indexEdits.filter((e) => e.edit.kind !== 'flip'), ...indexEdits.filter((e) => e.edit.kind === 'flip')];
            for (const { edit, which } of ordered) text = editIndex(text, edit, which);
            writeFileSync(paths.index, Buffer.from(text, 'latin1'));
            edited.push(basename(paths.index));
          }
          if (replaced !== undefined) {
            await writeSealed(paths.runMeta, projections[replaced], { fsync: false });
            edited.push('run.meta.json');
          }
          const stored = readFileSync(paths.runMeta);
          const names = (text: string): boolean => edited.some((file) => text.includes(file));
          const label = `projection: ${replaced ?? 'untouched'}; index edits: ${JSON.stringify(indexEdits)}`;
          const near = indexEdits.flatMap(({ which }) => [-1, 0, 1, 3].map((k) => (Math.floor(which * entryCount) + 1) * INDEX_INTERVAL + k));
          for (const name of [...order, ...near.map((offset) => `events page at ${offset}`)]) {
            let outcome: { answer: string; warnings: string[] } | Error;
            try {
              outcome = await readerOf(name)(dataDir);
            } catch (error) {
              outcome = error as Error;
            }
            if (outcome instanceof Error) expect(names(outcome.message), `${name} (${label}): its error does not name an edited file: ${outcome.message}`).toBe(true);
            else if (outcome.answer !== (await truthOf(name))) {
              expect([...outcome.warnings, ...emitted].some(names), `${name} (${label}): a different answer without a warning naming an edited file`).toBe(true);
            }
          }
          if (replaced?.endsWith('ahead')) {
            // Still there, and still reported: no reader took the log's word for it.
            expect(readFileSync(paths.runMeta), label).toEqual(stored);
            const [listed] = await listRuns({ dataDir });
            expect(listed!.damaged, label).toContain(paths.runMeta);
            expect((await verifyRun({ dataDir, runId: RUN })).problems.some((p) => p.includes(paths.runMeta)), label).toBe(true);
          }
        } finally {
          vi.restoreAllMocks();
          rmSync(dataDir, { recursive: true, force: true });
        }
      }),
      {
        numRuns: Math.max(RUNS, EXAMPLES.length),
        // Every projection put in place, and every kind of index edit, in every run of the test.
        examples: EXAMPLES.map(([replaced, indexEdits]) => [replaced, indexEdits, Object.keys(READERS)]),
      },
    );
  }, Math.max(180_000, RUNS * 1000));
});
