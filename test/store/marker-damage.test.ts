/**
 * Damage to the batch marker (`events.pending`) of a closed run, the one file of a run the damage property
 * (test/runtime/damage.property.test.ts) leaves out (review s31, finding 3): every reader gives the answer it gave
 * for the untouched run, or an error or warning naming the marker; `runs verify` reports a marker it cannot read, a
 * missing one, and a close record smaller than the log (before, it said ok, and the witness of the closed size was
 * dropped in silence).
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logEndWarnings, readEventsPage, runPointAt } from '../../src/cli/backpackflow/store-access.js';
import { listRuns, loadRunPoint, verifyRun } from '../../src/index.js';
import { recordCountingRun } from '../runtime/fixtures/counting-run.js';

const RUN = 'damaged';
let pristine: string;
let truth: Record<string, string>;
type Reader = (dataDir: string) => Promise<{ answer: string; warnings: string[] }>;
const READERS: Record<string, Reader> = {
  'loadRunPoint()': async (dataDir) => {
    const { warnings, ...point } = await loadRunPoint({ dataDir, runId: RUN });
    return { answer: JSON.stringify(point), warnings };
  },
  'loadRunPoint(step 24)': async (dataDir) => {
    const { warnings, ...point } = await loadRunPoint({ dataDir, runId: RUN, step: 24 });
    return { answer: JSON.stringify(point), warnings };
  },
  'runs state --step 24 (CLI)': async (dataDir) => {
    const warnings: string[] = [];
    const options = { dataDir, session: 'default', runId: RUN };
    const unread = await logEndWarnings(options, (w) => warnings.push(w));
    const { warnings: pw, ...point } = await runPointAt(options, 24, undefined, () => undefined);
    return { answer: JSON.stringify(point), warnings: [...unread, ...pw, ...warnings] };
  },
  'events page at the end': async (dataDir) => {
    const warnings: string[] = [];
    const page = await readEventsPage({ dataDir, session: 'default', runId: RUN }, 25, 200, (w) => warnings.push(w));
    return { answer: JSON.stringify(page), warnings };
  },
  listRuns: async (dataDir) => {
    const listed = await listRuns({ dataDir });
    return { answer: JSON.stringify(listed), warnings: listed.flatMap((m) => (m.damaged === undefined ? [] : [m.damaged])) };
  },
};
const marker = (dir: string): string => join(dir, 'sessions', 'default', 'runs', RUN, 'events.pending');

beforeAll(async () => {
  pristine = mkdtempSync(join(tmpdir(), 'bpf-marker-'));
  await recordCountingRun(pristine, RUN, 30, 10);
  truth = {};
  for (const [name, read] of Object.entries(READERS)) {
    const { answer, warnings } = await read(pristine);
    expect(warnings).toEqual([]);
    truth[name] = answer;
  }
});
afterAll(() => rmSync(pristine, { recursive: true, force: true }));

describe('damage to events.pending of a closed run', () => {
  it('every reader gives the right answer, or an error or warning naming events.pending; verify reports it', async () => {
    const original = readFileSync(marker(pristine));
    const problems: string[] = [];
    const cases: { label: string; apply: (path: string) => void }[] = [
      { label: "first byte flipped ('{' to 'z')", apply: (p) => { const b = Buffer.from(original); b[0] = b[0]! ^ 1; writeFileSync(p, b); } },
      { label: 'a padding byte flipped (space to "!")', apply: (p) => { const b = Buffer.from(original); b[b.length - 2] = 0x21; writeFileSync(p, b); } },
      { label: 'truncated to 20 bytes', apply: (p) => truncateSync(p, 20) },
      { label: 'emptied', apply: (p) => truncateSync(p, 0) },
      { label: 'removed', apply: (p) => rmSync(p) },
      { label: 'closed size lowered by a digit flip', apply: (p) => { const t = original.toString('latin1'); const at = t.indexOf('"closed":') + 9; const b = Buffer.from(original); b[at] = b[at]! ^ 1; writeFileSync(p, b); } },
    ];
    for (const { label, apply } of cases) {
      const dataDir = mkdtempSync(join(tmpdir(), 'bpf-marker-case-'));
      try {
        cpSync(pristine, dataDir, { recursive: true });
        apply(marker(dataDir));
        const damagedText = existsSync(marker(dataDir)) ? readFileSync(marker(dataDir), 'latin1') : '';
        const report = await verifyRun({ dataDir, runId: RUN }).catch((e: Error) => e);
        const said = report instanceof Error ? report.message : report.ok ? 'ok' : report.problems.join('; ');
        // A marker that still parses to the same record (a flip in the padding) is not damage that matters.
        const sameRecord = (() => { try { return JSON.stringify(JSON.parse(damagedText)) === JSON.stringify(JSON.parse(original.toString('latin1'))); } catch { return false; } })();
        if (!sameRecord && !said.includes('events.pending')) problems.push(`${label}: runs verify does not report the marker: ${said} (marker now ${JSON.stringify(damagedText.trim())})`);
        if (sameRecord && said !== 'ok') problems.push(`${label}: the marker holds the same record, but runs verify says: ${said}`);
        for (const [name, read] of Object.entries(READERS)) {
          let outcome: { answer: string; warnings: string[] } | Error;
          try { outcome = await read(dataDir); } catch (error) { outcome = error as Error; }
          if (outcome instanceof Error) {
            if (!outcome.message.includes('events.pending')) problems.push(`${label}: ${name} fails without naming events.pending: ${outcome.message.slice(0, 200)}`);
          } else if (outcome.answer !== truth[name] && !outcome.warnings.some((w) => w.includes('events.pending'))) {
            problems.push(`${label}: ${name} gives a different answer; warnings: ${JSON.stringify(outcome.warnings).slice(0, 300)}`);
          }
        }
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    }
    expect(problems).toEqual([]);
  }, 120_000);
});
