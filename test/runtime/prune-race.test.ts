/**
 * pruneRuns chooses runs from a listing and deletes them later: a run that changed in between (a person answered it
 * in another process, and it completed) is checked again under its writer lock and left whole, reported as skipped.
 * And a run waiting for a person is pruned only when the status filter names 'waiting'.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bundledScript } from '../support/bundle.js';
import { listRuns, pruneRuns, runFlow } from '../../src/index.js';
import { FileRunStore, runPaths, type RunStore } from '../../src/store/index.js';
import { buildApprovalFlow } from './fixtures/approval-flow.js';

const bundle = await bundledScript(join(import.meta.dirname, 'fixtures', 'approval-child.ts'));

let dataDir: string;
beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'bpf-prune-race-'));
});
afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

/** Answers the waiting approval run `runId` in a child process ("rejected": the run then completes); its result line. */
function answerInChild(runId: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bundle, 'resume', dataDir, runId, JSON.stringify({ approved: false })], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`resume child failed (${code}): ${out} ${err}`))));
  });
}

/**
 * The files store, with a hook between the prune's listing and its deletes: before the first delete, the waiting run
 * is answered in another process (the race of the audit, made certain).
 */
class AnsweredMeanwhile extends FileRunStore {
  answered: string | undefined;
  override async deleteRun(...args: Parameters<RunStore['deleteRun']>): Promise<boolean> {
    this.answered ??= await answerInChild(args[0].runId);
    return super.deleteRun(...args);
  }
}

const status = async (runId: string) => (await listRuns({ dataDir })).find((r) => r.runId === runId)?.status;

describe('pruneRuns against runs that change after its listing', () => {
  it('leaves a waiting run that a person answered (now completed) between the listing and the delete, and says why', async () => {
    expect((await runFlow(buildApprovalFlow(), { dataDir, runId: 'ask' })).status).toBe('waiting');
    const store = new AnsweredMeanwhile(dataDir);
    const result = await pruneRuns({ store, status: 'waiting' });
    expect(JSON.parse(store.answered!)).toMatchObject({ status: 'completed' });
    expect(result.deleted).toEqual([]);
    expect(result.skipped).toEqual([{ sessionKey: 'default', runId: 'ask', reason: expect.stringMatching(/ask changed since it was listed .*it is completed.*: it is not deleted/) as unknown }]);
    expect(existsSync(runPaths(dataDir, 'default', 'ask').events)).toBe(true);
    expect(await status('ask')).toBe('completed');
  });

  it('still deletes the runs that did not change', async () => {
    expect((await runFlow(buildApprovalFlow(), { dataDir, runId: 'ask' })).status).toBe('waiting');
    expect((await runFlow(buildApprovalFlow(), { dataDir, runId: 'other' })).status).toBe('waiting');
    const store = new AnsweredMeanwhile(dataDir);
    // Runs are deleted newest first: 'other' is answered (by the hook) and kept; 'ask' did not change and goes.
    const result = await pruneRuns({ store, status: 'waiting' });
    expect(result.deleted.map((r) => r.runId)).toEqual(['ask']);
    expect(result.skipped.map((s) => s.runId)).toEqual(['other']);
    expect((await listRuns({ dataDir })).map((r) => [r.runId, r.status])).toEqual([['other', 'completed']]);
  });
});

describe("pruneRuns and runs waiting for a person", () => {
  it("keeps a waiting run unless the status filter names 'waiting', and reports it", async () => {
    expect((await runFlow(buildApprovalFlow(), { dataDir, runId: 'ask' })).status).toBe('waiting');
    expect((await runFlow(buildApprovalFlow(), { dataDir, runId: 'done' })).status).toBe('waiting');
    await answerInChild('done');
    const now = Date.now() + 60_000;
    for (const criteria of [{ olderThan: 0 }, { keepLast: 0 }, { status: ['completed', 'failed'] as const }]) {
      const dry = await pruneRuns({ dataDir, now, dryRun: true, ...criteria });
      expect(dry.deleted.map((r) => r.runId)).toEqual(['done']);
    }
    const result = await pruneRuns({ dataDir, olderThan: 0, now });
    expect(result.deleted.map((r) => r.runId)).toEqual(['done']);
    expect(result.skipped).toEqual([{ sessionKey: 'default', runId: 'ask', reason: expect.stringMatching(/waiting for a person's answer: pruned only when the status filter names 'waiting'/) as unknown }]);
    expect(await status('ask')).toBe('waiting');
    const named = await pruneRuns({ dataDir, olderThan: 0, now, status: ['waiting'] });
    expect(named.deleted.map((r) => r.runId)).toEqual(['ask']);
    expect(await listRuns({ dataDir })).toEqual([]);
  });
});
