/**
 * Audit findings 1 and 2 through the readers users run (runs list, runs show, runs verify): a projection copied in
 * from another run, and a log that lost its tail under a projection that recorded it.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { readRunEvents } from '../../src/cli/backpackflow/store-access.js';
import { listRuns, loadRunPoint, verifyRun } from '../../src/index.js';
import { ProjectionStore, runPaths } from '../../src/store/index.js';
import { recordCountingRun } from './fixtures/counting-run.js';

let dataDir: string;
beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'bpf-projection-damage-'));
  // The CLI reader prints its warnings on stderr too.
  vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
});
afterEach(() => {
  vi.restoreAllMocks();
  rmSync(dataDir, { recursive: true, force: true });
});

const paths = (runId: string) => runPaths(dataDir, 'default', runId);

/** What `runs show` reads (every event the log serves), with the warnings it gives. */
async function show(runId: string): Promise<{ seqs: number[]; warnings: string[] }> {
  const warnings: string[] = [];
  const events = await readRunEvents({ dataDir, session: 'default', runId }, (w) => warnings.push(w));
  return { seqs: events.map((e) => e.seq), warnings };
}

describe("another run's projection copied over a run's", () => {
  it('lists each run as its own log says, warns naming the file, and never writes to the other run', async () => {
    await recordCountingRun(dataDir, 'r1', 12, 5);
    await recordCountingRun(dataDir, 'r2', 4, 5);
    const before = await listRuns({ dataDir });
    const r2 = readFileSync(paths('r2').runMeta);
    copyFileSync(paths('r2').runMeta, paths('r1').runMeta);
    const warnings = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    for (let read = 0; read < 2; read++) expect(await listRuns({ dataDir })).toEqual(before);
    expect(String(warnings.mock.calls[0]?.[0])).toContain(`corrupt run projection ${paths('r1').runMeta}: it is the projection of run default/r2, not of default/r1`);
    expect(readFileSync(paths('r2').runMeta)).toEqual(r2);
    expect((await verifyRun({ dataDir, runId: 'r2' })).status).toBe('verified');
    expect((await verifyRun({ dataDir, runId: 'r1' })).status).toBe('verified');
  });

  it('runs verify reports it, naming the file, before any listing rebuilds it', async () => {
    await recordCountingRun(dataDir, 'r1', 12, 5);
    await recordCountingRun(dataDir, 'r2', 4, 5);
    copyFileSync(paths('r2').runMeta, paths('r1').runMeta);
    const report = await verifyRun({ dataDir, runId: 'r1' });
    expect(report.status).toBe('damaged');
    expect(report.problems).toEqual([expect.stringContaining(`${paths('r1').runMeta}: it is the projection of run default/r2`)]);
  });
});

describe('a log that lost its tail under a projection that recorded it', () => {
  for (const cut of ['the last batch', 'a torn last line'] as const) {
    it(`(${cut}) runs list, runs show and runs verify report it on every read until the projection is deleted`, async () => {
      await recordCountingRun(dataDir, 'r1', 12, 5);
      const full = await show('r1');
      const log = paths('r1').events;
      const text = readFileSync(log, 'utf8');
      if (cut === 'a torn last line') truncateSync(log, Buffer.byteLength(text) - 20);
      else {
        // Exactly the last batch (the run.completed event) is gone: what is left is a log a crash could leave.
        const lines = text.split('\n');
        truncateSync(log, Buffer.byteLength(lines.slice(0, lines.length - 2).join('\n') + '\n'));
      }
      const stored = readFileSync(paths('r1').runMeta);
      const names = (message: string): boolean => message.includes(paths('r1').runMeta) && message.includes(log);
      for (let read = 0; read < 3; read++) {
        const [listed] = await listRuns({ dataDir });
        expect(listed!.damaged !== undefined && names(listed!.damaged), `runs list, read ${read + 1}: ${listed!.damaged}`).toBe(true);
        const shown = await show('r1');
        expect(shown.seqs).toEqual(full.seqs.slice(0, shown.seqs.length));
        expect(shown.warnings.some(names), `runs show, read ${read + 1}: ${shown.warnings.join('; ')}`).toBe(true);
        const report = await verifyRun({ dataDir, runId: 'r1' });
        expect(report.status).toBe('damaged');
        expect(report.problems.some((p) => p.includes(`${paths('r1').runMeta} counts`)), report.problems.join('; ')).toBe(true);
        await expect(loadRunPoint({ dataDir, runId: 'r1' })).rejects.toThrow(/run\.meta\.json records events up to seq \d+, but .*events\.jsonl serves them up to seq \d+/);
        expect(readFileSync(paths('r1').runMeta)).toEqual(stored);
      }
      // The user takes the log as it stands: the projection is rebuilt from it and nothing more is said about it; the
      // log's own record of the size it was closed with still tells its readers that it was cut.
      await new ProjectionStore({ dataDir, sessionKey: 'default' }).delete('r1');
      const [listed] = await listRuns({ dataDir });
      expect(listed!.damaged).toBeUndefined();
      expect((await show('r1')).warnings).toEqual([expect.stringMatching(/events\.jsonl: its writer closed it with \d+ bytes, it now holds \d+: the log was cut or edited after it was closed/)]);
      expect((await verifyRun({ dataDir, runId: 'r1' })).problems.filter((p) => p.includes('run.meta.json'))).toEqual([]);
    });
  }
});
