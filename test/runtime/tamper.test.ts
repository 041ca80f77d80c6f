/**
 * A recorded run whose files were damaged or edited: every reader either gives the right answer, or says what is
 * wrong, naming the file. Each case here gave a wrong answer in silence before the log had chain hashes.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadRunPoint, verifyRun } from '../../src/index.js';
import { EventStore } from '../../src/store/index.js';
import { tempDir } from '../store/helpers.js';
import { cutLogInHalf, recordCountingRun } from './fixtures/counting-run.js';

let tmp: ReturnType<typeof tempDir>;
let dir: string;
const RUN = 'tampered';
beforeEach(async () => {
  tmp = tempDir();
  await recordCountingRun(tmp.dir, RUN, 50, 10);
  dir = join(tmp.dir, 'sessions', 'default', 'runs', RUN);
});
afterEach(() => tmp.cleanup());

const events = (): string => join(dir, 'events.jsonl');
const keyframe = (step: number): string => join(dir, 'checkpoint', `${step}.json`);
const count = (point: { state: { items: Record<string, { value: unknown }> } }): unknown => point.state.items['count']?.value;

describe('a recorded run, untouched', () => {
  it('verifies: every line under a chain hash, every keyframe tied to the log', async () => {
    const report = await verifyRun({ dataDir: tmp.dir, runId: RUN });
    expect(report).toMatchObject({ ok: true, status: 'verified', problems: [], log: { chain: 'verified' } });
    expect(report.log.verifiedLines).toBe(report.log.lines);
    expect(report.keyframes.map((k) => [k.step, k.ok])).toEqual([[10, true], [20, true], [30, true], [40, true], [50, true]]);
    const point = await loadRunPoint({ dataDir: tmp.dir, runId: RUN });
    expect([point.step, count(point), point.warnings]).toEqual([50, 50, []]);
  });
});

describe('events.jsonl cut to half', () => {
  beforeEach(() => cutLogInHalf(events()));

  it('verify names the damage and the first line that disagrees (it said ok)', async () => {
    const report = await verifyRun({ dataDir: tmp.dir, runId: RUN });
    expect(report.ok).toBe(false);
    expect(report.status).toBe('damaged');
    expect(report.problems.join('\n')).toMatch(/events\.jsonl|run\.meta\.json|checkpoint\/\d+\.json/);
    expect(report.keyframes.filter((k) => !k.ok).map((k) => k.step)).toEqual(expect.arrayContaining([40, 50]));
    expect(report.problems.join('\n')).toMatch(/checkpoint\/50\.json holds step 50, but .*events\.jsonl does not reach that step/);
  });

  it('loadRunPoint names the keyframe the log no longer reaches instead of reporting its step (it said step 40/50)', async () => {
    await expect(loadRunPoint({ dataDir: tmp.dir, runId: RUN })).rejects.toThrow(/checkpoint\/50\.json holds step 50, but .*events\.jsonl reaches step \d+ only: the log was cut or damaged/);
  });

  it('the steps the log still vouches for are served exactly, with a warning about the lines after the last chain hash', async () => {
    const point = await loadRunPoint({ dataDir: tmp.dir, runId: RUN, step: 5 });
    expect([point.step, count(point)]).toEqual([5, 5]);
    // The log's own record of the size it was closed with tells the reader it was cut, whatever step is asked for.
    expect(point.warnings).toEqual([expect.stringMatching(/events\.jsonl: its writer closed it with \d+ bytes, it now holds \d+: the log was cut or edited after it was closed/)]);
  });

  it('without a keyframe or projection claiming more, the default point is the last verified step, with a warning', async () => {
    rmSync(join(dir, 'checkpoint'), { recursive: true });
    await expect(loadRunPoint({ dataDir: tmp.dir, runId: RUN })).rejects.toThrow(/run\.meta\.json records events up to seq \d+, but .*events\.jsonl serves/);
    rmSync(join(dir, 'projections', 'run.meta.json'));
    const point = await loadRunPoint({ dataDir: tmp.dir, runId: RUN });
    expect(point.step).toBeGreaterThan(10);
    expect(point.step).toBeLessThan(40);
    expect(count(point)).toBe(point.step);
    expect(point.warnings).toEqual([
      expect.stringMatching(/events\.jsonl: its writer closed it with \d+ bytes, it now holds \d+: the log was cut or edited after it was closed/),
      expect.stringMatching(/events\.jsonl: lines \d+-\d+ come after its last chain hash \(line \d+\): the log was cut or damaged there; they are not served/),
    ]);
  });
});

describe('events.jsonl cut exactly after a batch', () => {
  it('loadRunPoint names the projection the log falls short of, rather than serving an earlier step as the last', async () => {
    const lines = readFileSync(events(), 'utf8').split('\n');
    const sealed = lines.map((l, i) => (l.includes('"chain":"') ? i : -1)).filter((i) => i > 0);
    const at = sealed[Math.floor(sealed.length / 2)]!;
    writeFileSync(events(), lines.slice(0, at + 1).join('\n') + '\n');
    rmSync(join(dir, 'checkpoint'), { recursive: true });
    await expect(loadRunPoint({ dataDir: tmp.dir, runId: RUN })).rejects.toThrow(
      /run\.meta\.json records events up to seq \d+, but .*events\.jsonl serves them up to seq \d+: the log was cut or damaged/,
    );
    // A step the log still holds is served exactly.
    const point = await loadRunPoint({ dataDir: tmp.dir, runId: RUN, step: 3 });
    expect([point.step, count(point), point.warnings]).toEqual([3, 3, [expect.stringMatching(/events\.jsonl: its writer closed it with \d+ bytes, it now holds \d+: the log was cut or edited after it was closed/)]]);
    // The log's own record of the size it was closed with says so too (a cut at a batch boundary leaves no other trace in it).
    const problems = (await verifyRun({ dataDir: tmp.dir, runId: RUN })).problems;
    expect(problems).toHaveLength(2);
    expect(problems).toEqual(expect.arrayContaining([expect.stringMatching(/run\.meta\.json counts \d+ events/), expect.stringMatching(/events\.jsonl: its writer closed it with \d+ bytes, it now holds \d+: the log was cut or edited after it was closed/)]));
  });
});

describe('a keyframe edited to another valid value', () => {
  it('is skipped for the previous keyframe plus deltas, with a warning naming it (it was trusted)', async () => {
    const text = readFileSync(keyframe(50), 'utf8');
    expect(text).toContain('"value":50');
    writeFileSync(keyframe(50), text.replace('"value":50', '"value":99'));
    const point = await loadRunPoint({ dataDir: tmp.dir, runId: RUN });
    expect([point.step, count(point)]).toEqual([50, 50]);
    expect(point.warnings).toEqual([expect.stringMatching(/corrupt checkpoint .*checkpoint\/50\.json: checksum mismatch; using an earlier keyframe/)]);
    const report = await verifyRun({ dataDir: tmp.dir, runId: RUN });
    expect(report.status).toBe('damaged');
    expect(report.problems).toEqual([expect.stringMatching(/checkpoint\/50\.json: checksum mismatch/)]);
  });

  it('a keyframe resealed with a valid checksum but taken from another run is caught by its chain hash', async () => {
    const other = tempDir();
    try {
      await recordCountingRun(other.dir, RUN, 50, 10);
      // Same run id and steps, so only the chain (which covers timestamps and ids) tells the two apart.
      writeFileSync(keyframe(50), readFileSync(join(other.dir, 'sessions', 'default', 'runs', RUN, 'checkpoint', '50.json')));
      const point = await loadRunPoint({ dataDir: tmp.dir, runId: RUN });
      expect([point.step, count(point)]).toEqual([50, 50]);
      expect(point.warnings).toEqual([expect.stringMatching(/checkpoint\/50\.json: its chain hash is not the one .*events\.jsonl has at step 50/)]);
      expect((await verifyRun({ dataDir: tmp.dir, runId: RUN })).problems).toEqual([expect.stringMatching(/checkpoint\/50\.json: its chain hash is not/)]);
    } finally {
      other.cleanup();
    }
  });
});

describe('a garbage keyframe', () => {
  it('falls back to the previous keyframe plus deltas, with a warning (it was an error with no fallback)', async () => {
    writeFileSync(keyframe(50), '\u0000garbage{');
    writeFileSync(keyframe(40), '{"checksum":"00","data":{}}');
    const point = await loadRunPoint({ dataDir: tmp.dir, runId: RUN });
    expect([point.step, count(point)]).toEqual([50, 50]);
    expect(point.warnings).toEqual([
      expect.stringMatching(/checkpoint\/50\.json: not valid JSON.*using an earlier keyframe/),
      expect.stringMatching(/checkpoint\/40\.json: checksum mismatch; using an earlier keyframe/),
    ]);
    rmSync(join(dir, 'checkpoint'), { recursive: true });
    expect(count(await loadRunPoint({ dataDir: tmp.dir, runId: RUN, step: 37 }))).toBe(37);
  });
});

describe('an event edited to another valid value', () => {
  it('is an error naming the lines of its batch, from every reader that reads that batch', async () => {
    const lines = readFileSync(events(), 'utf8').split('\n');
    const at = lines.findIndex((l) => l.includes('"valueSummary":"17"'));
    expect(at).toBeGreaterThan(0);
    lines[at] = lines[at]!.replace('"valueSummary":"17"', '"valueSummary":"71"');
    writeFileSync(events(), lines.join('\n'));
    const store = new EventStore({ dataDir: tmp.dir, sessionKey: 'default', runId: RUN });
    await expect(store.readAll()).rejects.toThrow(/events\.jsonl: lines \d+-\d+ do not match the chain hash on line \d+/);
    await expect(store.readPage(10, at - 2)).rejects.toThrow(/do not match the chain hash/);
    // The state at step 17 or 18 is replayed from the keyframe of step 10 through the changed batch.
    await expect(loadRunPoint({ dataDir: tmp.dir, runId: RUN, step: 18 })).rejects.toThrow(/do not match the chain hash/);
    // The last step's state starts at the keyframe of step 50, whose checksum and chain hash hold: the batch before
    // it is not read (verify reads everything, below).
    expect((await loadRunPoint({ dataDir: tmp.dir, runId: RUN })).step).toBe(50);
    const report = await verifyRun({ dataDir: tmp.dir, runId: RUN });
    expect(report.status).toBe('damaged');
    expect(report.log.firstBadLine).toBeLessThanOrEqual(at + 1);
    expect(report.problems[0]).toMatch(new RegExp(`lines \\d+-\\d+ do not match the chain hash`));
  });
});

describe('a log written before chain hashes, or stripped of them', () => {
  /** The log without its chain fields and with a batch marker as writers before chain hashes left it. */
  function strip(): void {
    writeFileSync(events(), readFileSync(events(), 'utf8').replace(/,"chain":"[0-9a-f]{64}"\}/g, '}'));
    writeFileSync(join(dir, 'events.pending'), JSON.stringify({ gen: 1, start: 0, end: 0 }));
  }

  it('still reads, with a warning that nothing proves it; verify calls it unverifiable, not ok', async () => {
    strip();
    rmSync(join(dir, 'checkpoint'), { recursive: true });
    const point = await loadRunPoint({ dataDir: tmp.dir, runId: RUN });
    expect([point.step, count(point)]).toEqual([50, 50]);
    expect(point.warnings).toEqual([expect.stringMatching(/carries no chain hash on its first line: .*nothing proves what it serves unchanged/)]);
    const report = await verifyRun({ dataDir: tmp.dir, runId: RUN });
    expect(report).toMatchObject({ ok: false, status: 'unverifiable', log: { ok: false, chain: 'unverifiable' } });
  });

  it('is damaged when its keyframes record the chain hashes it no longer has (they were removed)', async () => {
    strip();
    const report = await verifyRun({ dataDir: tmp.dir, runId: RUN });
    expect(report).toMatchObject({ ok: false, status: 'damaged' });
    expect(report.problems).toContainEqual(expect.stringMatching(/records the chain hash .* but the log carries no chain hash at all: its chain fields were removed/));
  });

  it('is not continued by a writer (sealing its lines would vouch for them), and stays as it was', async () => {
    const { makeEvent } = await import('../store/helpers.js');
    const legacyDir = join(tmp.dir, 'sessions', 'default', 'runs', 'legacy');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(legacyDir, { recursive: true });
    const lines = [0, 1, 2].map((seq) => JSON.stringify(makeEvent('legacy', seq)) + '\n').join('');
    writeFileSync(join(legacyDir, 'events.jsonl'), lines);
    const store = new EventStore({ dataDir: tmp.dir, sessionKey: 'default', runId: 'legacy' });
    await expect(store.appendBatch([makeEvent('legacy', 3), makeEvent('legacy', 4)])).rejects.toThrow(/holds events but no chain hash: .*cannot be continued/);
    await store.close();
    expect(readFileSync(join(legacyDir, 'events.jsonl'), 'utf8')).toBe(lines);
    expect(await new EventStore({ dataDir: tmp.dir, sessionKey: 'default', runId: 'legacy' }).verify()).toMatchObject({ ok: false, chain: 'unverifiable', lines: 3 });
  });
});
