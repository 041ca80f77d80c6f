/**
 * openNewRun: a new run's writer taken before its flow is built, so that what is recorded with the run before its
 * first event (its flow config, its recipe) is that start's, never a concurrent start's of the same id.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { forkRun, listRuns, loadRunPoint, openNewRun, resumeRun, runFlow } from '../../src/index.js';
import { FileRunStore, InvalidIdError, LockError, RunExistsError } from '../../src/store/index.js';
import { buildJournalFlow } from './fixtures/journal-flow.js';

let dataDir: string;
beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'bpf-new-run-'));
});
afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

const flowFile = (runId: string) => join(dataDir, 'sessions', 'default', 'runs', runId, 'flow.json');

describe('openNewRun', () => {
  it('holds the id from before the flow is built: another start of it is a LockError and records nothing over it', async () => {
    const held = await openNewRun({ dataDir, runId: 'r' });
    await held.saveDocument('flow', { mine: true });
    await expect(openNewRun({ dataDir, runId: 'r' })).rejects.toBeInstanceOf(LockError);
    await expect(runFlow(buildJournalFlow({ rounds: 1 }), { dataDir, runId: 'r' })).rejects.toBeInstanceOf(LockError);
    expect(JSON.parse(readFileSync(flowFile('r'), 'utf8'))).toEqual({ mine: true });
    const result = await runFlow(buildJournalFlow({ rounds: 2 }), { newRun: held, input: { seed: 1 } });
    expect(result).toMatchObject({ runId: 'r', sessionKey: 'default', status: 'completed' });
    expect((await loadRunPoint({ dataDir, runId: 'r' })).state.items.seed).toBeDefined();
    expect(JSON.parse(readFileSync(flowFile('r'), 'utf8'))).toEqual({ mine: true });
    // The run was taken over and has ended: its id is a recorded run now.
    await held.release();
    await expect(openNewRun({ dataDir, runId: 'r' })).rejects.toBeInstanceOf(RunExistsError);
  });

  it('a released start is not a run: the id is free again, and its documents are recorded over by the next start', async () => {
    const first = await openNewRun({ dataDir, runId: 'r' });
    await first.saveDocument('flow', { first: true });
    await first.release();
    await first.release();
    await expect(first.saveDocument('flow', {})).rejects.toThrow(/already released/);
    await expect(runFlow(buildJournalFlow({ rounds: 1 }), { newRun: first })).rejects.toThrow(/already released/);
    expect(await listRuns({ dataDir })).toEqual([]);
    const second = await openNewRun({ dataDir, runId: 'r' });
    await second.saveDocument('flow', { second: true });
    await runFlow(buildJournalFlow({ rounds: 1 }), { newRun: second });
    expect(JSON.parse(readFileSync(flowFile('r'), 'utf8'))).toEqual({ second: true });
    expect((await listRuns({ dataDir })).map((r) => r.runId)).toEqual(['r']);
  });

  it('is run once: a second runFlow with it is refused, and so is naming the run beside it', async () => {
    const held = await openNewRun({ dataDir, runId: 'once' });
    await expect(runFlow(buildJournalFlow({ rounds: 1 }), { newRun: held, runId: 'other' })).rejects.toThrow(/runFlow: runId belongs to openNewRun/);
    await expect(runFlow(buildJournalFlow({ rounds: 1 }), { newRun: held, dataDir, durability: 'never' })).rejects.toThrow(/dataDir, durability belong to openNewRun/);
    // A refused option or keyframeInterval leaves the start held: it can still run.
    await expect(runFlow(buildJournalFlow({ rounds: 1 }), { newRun: held, keyframeInterval: 0 })).rejects.toBeInstanceOf(RangeError);
    await runFlow(buildJournalFlow({ rounds: 1 }), { newRun: held });
    await expect(runFlow(buildJournalFlow({ rounds: 1 }), { newRun: held })).rejects.toThrow(/already run/);
    await expect(runFlow(buildJournalFlow({ rounds: 1 }), { newRun: { ...held } })).rejects.toThrow(/newRun must come from openNewRun/);
  });

  it('a fork takes a held new run over, reading the recorded run from its store and session', async () => {
    await runFlow(buildJournalFlow({ rounds: 3 }), { dataDir, runId: 'source', sessionKey: 's' });
    const held = await openNewRun({ dataDir, runId: 'fork', sessionKey: 's' });
    await expect(forkRun(buildJournalFlow({ rounds: 3 }), { runId: 'source', atStep: 1, newRun: held, newRunId: 'x' })).rejects.toThrow(/newRunId belongs to openNewRun/);
    const result = await forkRun(buildJournalFlow({ rounds: 3 }), { runId: 'source', atStep: 1, newRun: held });
    expect(result).toMatchObject({ runId: 'fork', sessionKey: 's', status: 'completed' });
    const fork = await loadRunPoint({ dataDir, sessionKey: 's', runId: 'fork' });
    const source = await loadRunPoint({ dataDir, sessionKey: 's', runId: 'source' });
    const values = (point: typeof fork) => Object.fromEntries(Object.entries(point.state.items).map(([key, item]) => [key, item.value]));
    expect(values(fork)).toEqual(values(source));
    expect(Object.keys(fork.state.items).length).toBeGreaterThan(0);
  });

  it('a fork whose start fails (no such step) gives the held run up: the id is free', async () => {
    await runFlow(buildJournalFlow({ rounds: 2 }), { dataDir, runId: 'source' });
    const held = await openNewRun({ dataDir, runId: 'fork' });
    await expect(forkRun(buildJournalFlow({ rounds: 2 }), { runId: 'source', atStep: 99, newRun: held })).rejects.toThrow();
    const again = await openNewRun({ dataDir, runId: 'fork' });
    await again.release();
  });

  it("redacts what it records with the run's own redaction too, as everything the run writes", async () => {
    const held = await openNewRun({ dataDir, runId: 'doc', redaction: { secretKeys: ['deployPhrase'], patterns: [/ACME-[0-9]{6}/g] } });
    await held.saveDocument('flow', { nodes: [{ id: 'a', params: { deployPhrase: 'open sesame', note: 'ticket ACME-123456', apiKey: 'sk-not-written' } }] });
    await held.release();
    const text = readFileSync(flowFile('doc'), 'utf8');
    for (const secret of ['open sesame', 'ACME-123456', 'sk-not-written']) expect(text).not.toContain(secret);
    expect(text).toContain('[REDACTED]');
  });

  it('refuses a hostile id and an id that has a recorded run before touching anything', async () => {
    await expect(openNewRun({ dataDir, runId: '-rf' })).rejects.toBeInstanceOf(InvalidIdError);
    await expect(openNewRun({ dataDir, runId: '../x' })).rejects.toBeInstanceOf(InvalidIdError);
    await runFlow(buildJournalFlow({ rounds: 1 }), { dataDir, runId: 'done' });
    const store = new FileRunStore(dataDir);
    const writer = await store.openWriter({ sessionKey: 'default', runId: 'done' }, { fresh: false });
    await writer.saveDocument('flow', { original: true });
    await writer.close();
    await expect(openNewRun({ dataDir, runId: 'done' })).rejects.toBeInstanceOf(RunExistsError);
    expect(JSON.parse(readFileSync(flowFile('done'), 'utf8'))).toEqual({ original: true });
  });
});

describe('resuming a run whose log ends after its last step but before its end', () => {
  it('says another process is writing it while a live writer holds it, and records its end once none does', async () => {
    await runFlow(buildJournalFlow({ rounds: 1 }), { dataDir, runId: 'ending' });
    // As another process leaves it between its last step and its end: the run's end not written yet.
    const dir = join(dataDir, 'sessions', 'default', 'runs', 'ending');
    const lines = readFileSync(join(dir, 'events.jsonl'), 'utf8').replace(/\0+$/, '').trimEnd().split('\n');
    expect(lines.at(-1)).toContain('"run.completed"');
    writeFileSync(join(dir, 'events.jsonl'), `${lines.slice(0, -1).join('\n')}\n`);
    rmSync(join(dir, 'events.pending'));
    rmSync(join(dir, 'projections'), { recursive: true, force: true });
    const store = new FileRunStore(dataDir);
    const writer = await store.openWriter({ sessionKey: 'default', runId: 'ending' }, { fresh: false });
    try {
      const error = await resumeRun(buildJournalFlow({ rounds: 1 }), { dataDir, runId: 'ending' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockError);
      expect((error as Error).message).toMatch(/is being written by another process \(it is ending\)/);
    } finally {
      await writer.close();
    }
    const before = readFileSync(join(dir, 'events.jsonl'), 'utf8').replace(/\0+$/, '').trimEnd().split('\n').length;
    // Every step is recorded: the resume records the run's end (a segment of its own), and no node runs again.
    await expect(resumeRun(buildJournalFlow({ rounds: 1 }), { dataDir, runId: 'ending' })).resolves.toMatchObject({ status: 'completed', action: 'default', steps: 3 });
    const added = readFileSync(join(dir, 'events.jsonl'), 'utf8').replace(/\0+$/, '').trimEnd().split('\n').slice(before).map((line) => JSON.parse(line) as { type: string });
    expect(added.map((event) => event.type)).toEqual(['run.started', 'run.completed']);
    expect((await listRuns({ dataDir }))[0]).toMatchObject({ runId: 'ending', status: 'completed' });
  });
});
