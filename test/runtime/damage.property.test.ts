/**
 * Property: damage one file of a recorded run (a random truncation or a random byte flip of events.jsonl, its index,
 * a keyframe, the projection, or the batch marker). Every reader then returns the answer it gave for the untouched
 * run, or an error or a warning naming the damaged file, and `verify` reports the damage. Never a different answer in
 * silence. (A damaged marker no longer witnesses the log's close: readers go on, verify reports it; review s31.)
 *
 * `DAMAGE_RUNS` sets the number of cases: by default 20 in `npm test` (each file truncated and flipped, then damage at
 * random), 2000 in `npm run test:soak`.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, relative } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logEndWarnings, readEventsPage, runPointAt } from '../../src/cli/backpackflow/store-access.js';
import { listRuns, loadRunPoint, verifyRun } from '../../src/index.js';
import { EventStore } from '../../src/store/index.js';
import { recordCountingRun } from './fixtures/counting-run.js';
import { trials } from '../support/soak.js';
import { filesUnder } from '../support/files.js';

const RUN = 'damaged';
const RUNS = Number(process.env['DAMAGE_RUNS'] ?? trials(20, 2000));
let pristine: string;
let runDir: string;
let files: string[];
/** What each reader answers for the untouched run. */
let truth: Record<string, string>;

/**
 * The record a batch marker holds, as JSON text, or its bytes when it holds none: its padding aside, and its
 * generation (a counter that tells readers the marker was rewritten while they read it, which says nothing of the
 * log), so that only a change that matters counts.
 */
function markerRecord(path: string): string {
  const text = readFileSync(path, 'latin1');
  try {
    const record = JSON.parse(text) as Record<string, unknown>;
    return JSON.stringify(typeof record['gen'] === 'number' ? { ...record, gen: 0 } : record);
  } catch {
    return text;
  }
}

/** A reader: its answer as JSON text (compared with the untouched run's), and the warnings it gave. */
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

/** `runs state --step N` as the CLI reads it: the step's point, and the log's end. */
const cliStateReader =
  (step: number): Reader =>
  async (dataDir) => {
    const warnings: string[] = [];
    const options = { dataDir, session: 'default', runId: RUN };
    const unread = await logEndWarnings(options, (w) => warnings.push(w));
    const { warnings: pointWarnings, ...point } = await runPointAt(options, step, undefined, () => undefined);
    return { answer: JSON.stringify(point), warnings: [...unread, ...pointWarnings] };
  };

const READERS: Record<string, Reader> = {
  'loadRunPoint()': pointReader(),
  'loadRunPoint(step 7)': pointReader(7),
  'loadRunPoint(step 24)': pointReader(24),
  'runs state --step 7 (CLI)': cliStateReader(7),
  'runs state --step 24 (CLI)': cliStateReader(24),
  'events page at 0': pageReader(0),
  'events page at 100': pageReader(100),
  'events page at the end': pageReader(225),
  listRuns: async (dataDir) => {
    const listed = await listRuns({ dataDir });
    // A run listed as damaged names its file in `damaged`.
    return { answer: JSON.stringify(listed), warnings: listed.flatMap((m) => (m.damaged === undefined ? [] : [m.damaged])) };
  },
};

beforeAll(async () => {
  pristine = mkdtempSync(join(tmpdir(), 'bpf-damage-'));
  await recordCountingRun(pristine, RUN, 30, 10);
  // An index entry every 7 events (not every 1000), so that pages are read from an entry and damage to it matters.
  const indexer = new EventStore({ dataDir: pristine, sessionKey: 'default', runId: RUN });
  await indexer.buildIndex(7);
  await indexer.close();
  runDir = join('sessions', 'default', 'runs', RUN);
  // Every file a reader may read: the log, its index, the keyframes, the projection, the batch marker (not the lock).
  files = filesUnder(join(pristine, runDir))
    .map((f) => relative(pristine, f))
    .filter((f) => /events\.jsonl$|events\.idx\.jsonl$|events\.pending$|checkpoint\/\d+\.json$|run\.meta\.json$/.test(f))
    .sort();
  truth = {};
  for (const [name, read] of Object.entries(READERS)) {
    const { answer, warnings } = await read(pristine);
    expect(warnings).toEqual([]);
    truth[name] = answer;
  }
});
afterAll(() => rmSync(pristine, { recursive: true, force: true }));

describe('damage to any file of a recorded run', () => {
  it('records the files the property damages', () => {
    expect(files.map((f) => basename(f))).toEqual(['10.json', '20.json', '30.json', 'events.idx.jsonl', 'events.jsonl', 'events.pending', 'run.meta.json']);
  });

  // The soak's thousands of cases run as parts of at most PART cases: vitest's worker reports a timeout (an unhandled
  // error that fails the run) when one test runs for minutes on a loaded machine.
  const PART = 100;
  /** The batch marker's place in `files` (see the test above). */
  const MARKER = 5;
  const parts = Math.max(1, Math.ceil(RUNS / PART));
  /** Each file truncated and flipped (in the first part; fast-check counts them in its cases). */
  const EXAMPLES = [
    ...[0, 1, 2, 3, 4, 5, 6].flatMap((file) => [{ file, kind: 'truncate' as const, at: 0.5, xor: 1 }, { file, kind: 'flip' as const, at: 0.4, xor: 0x20 }]),
    // The batch marker emptied, and its first byte flipped (no record left).
    { file: MARKER, kind: 'truncate' as const, at: 0, xor: 1 },
    { file: MARKER, kind: 'flip' as const, at: 0, xor: 1 },
  ];
  /** The name of the marker's close record damaged (`"closed"` to `"blosed"`: a record of no close, were unknown fields allowed). */
  const closedNameFlip = () => {
    const marker = readFileSync(join(pristine, files[MARKER]!), 'latin1');
    expect(marker).toContain('"closed"');
    return { file: MARKER, kind: 'flip' as const, at: (marker.indexOf('"closed"') + 1.5) / marker.length, xor: 1 };
  };
  for (let part = 0; part < parts; part++) {
    const cases = Math.min(PART, RUNS - part * PART);
    const examples = part === 0 ? EXAMPLES.map((damage) => [damage] as [typeof damage]) : [];
    it(`every reader gives the right answer, or an error or warning naming the damaged file${parts > 1 ? ` (part ${part + 1} of ${parts}, ${cases} cases)` : ''}`, async () => {
      const damage = fc.record({
        file: fc.integer({ min: 0, max: 6 }),
        kind: fc.constantFrom('truncate', 'flip'),
        at: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
        xor: fc.integer({ min: 1, max: 255 }),
      });
      await fc.assert(
        fc.asyncProperty(damage, async ({ file: which, kind, at, xor }) => {
          const dataDir = mkdtempSync(join(tmpdir(), 'bpf-damage-case-'));
          try {
            cpSync(pristine, dataDir, { recursive: true });
            const file = files[which]!;
            const path = join(dataDir, file);
            const bytes = readFileSync(path);
            const position = Math.floor(at * bytes.length);
            if (kind === 'truncate') truncateSync(path, position);
            else {
              bytes[position] = bytes[position]! ^ xor;
              writeFileSync(path, bytes);
            }
            // A JSON file (keyframe, projection) that lost only its final newline holds the same document; a marker
            // whose padding changed holds the same record.
            const content = (f: string): string => (f.endsWith('.jsonl') ? readFileSync(f, 'latin1') : f.endsWith('.pending') ? markerRecord(f) : readFileSync(f, 'latin1').trimEnd());
            const changed = content(path) !== content(join(pristine, file));
            const tornIndexTail = (): boolean => {
              const damaged = content(path);
              return file.endsWith('events.idx.jsonl') && content(join(pristine, file)).startsWith(damaged.slice(0, damaged.lastIndexOf('\n') + 1));
            };
            const names = (text: string): boolean => text.includes(basename(file));
            const label = `${kind} of ${file} at byte ${position}${kind === 'flip' ? ` (xor ${xor})` : ''}`;

            // Verify first: readers repair what they may (a corrupt projection is rebuilt from the log).
            const report = await verifyRun({ dataDir, runId: RUN }).catch((error: Error) => error);
            if (report instanceof Error) expect(names(report.message), `verify after ${label}: ${report.message}`).toBe(true);
            else if (!report.ok) expect(report.problems.some(names), `verify after ${label}: ${report.problems.join('; ')}`).toBe(true);
            // An untouched run verifies; any damage is reported, except to the index's torn tail: the index is a cache
            // that readers check and writers rebuild, whose appends a crash may tear, so a shorter one only seeks less.
            else expect(!changed || tornIndexTail(), `verify said ok after ${label}`).toBe(true);
            for (const [name, read] of Object.entries(READERS)) {
              let outcome: { answer: string; warnings: string[] } | Error;
              try {
                outcome = await read(dataDir);
              } catch (error) {
                outcome = error as Error;
              }
              if (outcome instanceof Error) {
                expect(names(outcome.message), `${name} after ${label}: its error does not name the file: ${outcome.message}`).toBe(true);
              } else if (outcome.answer !== truth[name]) {
                expect(outcome.warnings.some(names), `${name} after ${label}: a different answer without a warning naming the file`).toBe(true);
              }
            }

          } finally {
            rmSync(dataDir, { recursive: true, force: true });
          }
        }),
        { numRuns: Math.max(cases, examples.length + 1), examples: part === 0 ? [...examples, [closedNameFlip()]] : examples },
      );
    }, Math.max(120_000, cases * 250));
  }
});
