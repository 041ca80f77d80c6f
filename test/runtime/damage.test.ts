/** Issue 13: damage stays local. One damaged run never breaks the listing; a cut log tail never makes resume and show disagree. */
import fs, { cpSync, existsSync, mkdtempSync, promises as fsp, readFileSync, rmSync, truncateSync, writeFileSync, type PathLike } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import type { FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { listRuns, loadRunPoint, resumeRun, runFlow, type RunMeta } from '../../src/index.js';
import { ProjectionStore } from '../../src/store/index.js';
import { buildJournalFlow } from './fixtures/journal-flow.js';

let dataDir: string;
beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'bpf-damage-'));
});
afterEach(() => {
  vi.restoreAllMocks();
  rmSync(dataDir, { recursive: true, force: true });
});

const file = (runId: string, name: string) => join(dataDir, 'sessions', 'default', 'runs', runId, name);
const metaFile = (runId: string) => file(runId, join('projections', 'run.meta.json'));

describe('listRuns with damaged runs', () => {
  it('rebuilds a corrupt run.meta.json from its log, with a warning naming the file, and lists every run', async () => {
    for (const runId of ['a', 'b', 'c']) await runFlow(buildJournalFlow({ rounds: 2 }), { dataDir, runId });
    const intact = await listRuns({ dataDir });
    writeFileSync(metaFile('b'), '{"v":1,"runId":');
    const warnings = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const listed = await listRuns({ dataDir });
    expect(listed).toEqual(intact);
    expect(String(warnings.mock.calls[0]?.[0])).toContain(`corrupt run projection ${metaFile('b')}`);
    // Stored again, sealed with its checksum.
    expect(JSON.parse(readFileSync(metaFile('b'), 'utf8')).data).toEqual(intact[1]);
  });

  it('lists a run whose log cannot be read as damaged, naming the file and line, and the others as they are', async () => {
    for (const runId of ['a', 'b']) await runFlow(buildJournalFlow({ rounds: 2 }), { dataDir, runId });
    const lines = readFileSync(file('a', 'events.jsonl'), 'utf8').split('\n');
    lines[3] = 'garbage';
    writeFileSync(file('a', 'events.jsonl'), lines.join('\n'));
    writeFileSync(metaFile('a'), 'not json');
    vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const listed = await listRuns({ dataDir });
    expect(listed.map((m) => m.runId).sort()).toEqual(['a', 'b']);
    const damaged = listed.find((m) => m.runId === 'a')!;
    expect(damaged.damaged).toMatch(new RegExp(`corrupt event at line 4 of ${file('a', 'events.jsonl').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`));
    expect(listed.find((m) => m.runId === 'b')).toMatchObject({ status: 'completed' });
    expect(listed.find((m) => m.runId === 'b')!.damaged).toBeUndefined();
  });
});

describe('a torn last line of events.jsonl', () => {
  it('resume agrees with the log, not with a stored projection that says completed', async () => {
    await runFlow(buildJournalFlow({ rounds: 3 }), { dataDir, runId: 'torn' });
    expect((await new ProjectionStore({ dataDir, sessionKey: 'default' }).loadRunMeta('torn'))?.status).toBe('completed');
    const log = file('torn', 'events.jsonl');
    // Cut the run.completed line in half: the log no longer says the run completed.
    const text = readFileSync(log, 'utf8');
    const lastLine = text.lastIndexOf('\n', text.length - 2) + 1;
    truncateSync(log, lastLine + 10);
    const error = (await resumeRun(buildJournalFlow({ rounds: 3 }), { dataDir, runId: 'torn' }).catch((e: unknown) => e)) as Error;
    expect(error.message).not.toMatch(/already completed/);
    // The log was closed whole, then cut: damage, not a crash, and resume says so (the projection, which recorded
    // more, is the first witness it meets; the log's close record the second).
    expect(error.message).toMatch(/run\.meta\.json records events up to seq \d+, but .*events\.jsonl serves them up to seq \d+: the log was cut or damaged|events\.jsonl: its writer closed it with \d+ bytes, it now holds \d+: the log was cut or edited after it was closed/);
    // Not completed as far as the log goes, and no process is writing it: stopped.
    expect((await listRuns({ dataDir }))[0]).toMatchObject({ runId: 'torn', status: 'stopped' });
  });

  it('a cut inside the last step (not a crash: no batch was in flight): readers serve the last verified step with a warning, and resume refuses to continue the damaged log', async () => {
    await runFlow(buildJournalFlow({ rounds: 3 }), { dataDir, runId: 'cut' });
    const log = file('cut', 'events.jsonl');
    const lines = readFileSync(log, 'utf8').split('\n');
    // Keep everything before the last checkpoint.saved and half of that line.
    const last = lines.findLastIndex((l) => l.includes('"checkpoint.saved"'));
    writeFileSync(log, lines.slice(0, last).join('\n') + '\n' + lines[last]!.slice(0, 20));
    // The projection recorded more than the log serves now: an error naming both files (a given step still reads).
    await expect(loadRunPoint({ dataDir, runId: 'cut' })).rejects.toThrow(new RegExp(`run\\.meta\\.json records events up to seq \\d+, but .*events\\.jsonl serves them up to seq \\d+`));
    const point = await loadRunPoint({ dataDir, runId: 'cut', step: 1 });
    expect(point.position.length).toBeGreaterThan(0);
    await expect(resumeRun(buildJournalFlow({ rounds: 3 }), { dataDir, runId: 'cut' })).rejects.toThrow(/run\.meta\.json records events up to seq \d+, but .*events\.jsonl serves them up to seq \d+: the log was cut or damaged/);
    // With the projection deleted (the user's act that takes the log as it stands), the log's own close record still
    // refuses to continue it.
    await new ProjectionStore({ dataDir, sessionKey: 'default' }).delete('cut');
    await expect(resumeRun(buildJournalFlow({ rounds: 3 }), { dataDir, runId: 'cut' })).rejects.toThrow(/the log was cut or edited after it was closed.*cannot be continued/);
    expect((await listRuns({ dataDir }))[0]).toMatchObject({ runId: 'cut', status: 'stopped' });
  });
});

describe('listRuns while another process deletes a run', () => {
  it('leaves out a run deleted at any moment of the reading of its files, and lists the others', async () => {
    // Long enough for the log's index to have entries (a reader then opens the log several times).
    for (const runId of ['a', 'b', 'c']) await runFlow(buildJournalFlow({ rounds: 40 }), { dataDir, runId });
    const intact = await listRuns({ dataDir });
    const runB = join(dataDir, 'sessions', 'default', 'runs', 'b');
    const saved = join(dataDir, 'b-copy');
    cpSync(runB, saved, { recursive: true });
    const open = fsp.open.bind(fsp);
    const openSync = fs.openSync.bind(fs);
    /** Lists with b's projection to rebuild (as after a crash); b is deleted at its files' open number `at`. */
    const listDeletingAt = async (at: number): Promise<{ listed: RunMeta[]; opens: number }> => {
      rmSync(runB, { recursive: true, force: true });
      cpSync(saved, runB, { recursive: true });
      rmSync(metaFile('b'));
      let opens = 0;
      // The run's files as the listing reads them (its projection is missing, so nothing under projections/ is read);
      // once read, the projection rebuilt from them is stored, and a run deleted after that was listed before it was.
      const opening = (path: PathLike) => {
        if (String(path).startsWith(`${runB}/`) && !String(path).startsWith(`${runB}/projections`) && opens++ === at) rmSync(runB, { recursive: true, force: true });
      };
      // The readers open files both ways: small reads synchronously, long ones through the thread pool.
      const spy = vi.spyOn(fsp, 'open').mockImplementation((async (path: PathLike, ...rest: unknown[]) => {
        opening(path);
        return (open as (...a: unknown[]) => Promise<FileHandle>)(path, ...rest);
      }) as typeof fsp.open);
      const spySync = vi.spyOn(fs, 'openSync').mockImplementation(((path: PathLike, ...rest: unknown[]) => {
        opening(path);
        return (openSync as (...a: unknown[]) => number)(path, ...rest);
      }) as typeof fs.openSync);
      // Named imports of node:fs (the library's) see the replaced function only once the built-in's exports are synced.
      syncBuiltinESMExports();
      try {
        return { listed: await listRuns({ dataDir }), opens };
      } finally {
        spy.mockRestore();
        spySync.mockRestore();
        syncBuiltinESMExports();
      }
    };
    const { opens } = await listDeletingAt(-1);
    expect(opens).toBeGreaterThan(1);
    for (let at = 0; at < opens; at++) {
      const { listed } = await listDeletingAt(at);
      expect(listed, `deleted at open ${at}`).toEqual([intact[0], intact[2]]);
      expect(existsSync(runB), `deleted at open ${at}`).toBe(false);
    }
  });
});
