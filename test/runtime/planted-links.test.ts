/**
 * Links (and other entries) planted inside the data directory, in place of a run's files or folders (audit s21,
 * F1-F3): no writer, reader or delete goes through them, nothing outside the data directory is written, truncated or
 * removed, and the error names the entry and what is there. Real files, real links, in temp directories.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BackpackNode, Flow, deleteRun, listRuns, pruneRuns, resumeRun, runFlow, verifyRun, type BackpackHandle } from '../../src/index.js';
import { openNewRun } from '../../src/runtime/index.js';
import { EventStoreError, FileRunStore, RunFolderError, StoreError } from '../../src/store/index.js';
import { readRecipe } from '../../src/cli/backpackflow/recipe.js';
import { recordedFlowConfig } from '../../src/cli/backpackflow/flows.js';
import { makeTempDir } from '../support/temp.js';
import { trials } from '../support/soak.js';

/** draft → ask; `ask` pauses for `{ approved: boolean }`. */
function approval(): Flow {
  const flow = new Flow({ namespace: 'ap' });
  class Draft extends BackpackNode {
    override post(bp: BackpackHandle): undefined {
      bp.pack('draft', 'hello');
      return undefined;
    }
  }
  class Ask extends BackpackNode {
    override async post(bp: BackpackHandle): Promise<undefined> {
      const a = await this.interrupt({ q: 'ok?' }, { schema: z.object({ approved: z.boolean() }) });
      bp.pack('decision', a.approved);
      return undefined;
    }
  }
  const d = flow.addNode(Draft, { id: 'draft' });
  const a = flow.addNode(Ask, { id: 'ask' });
  d.next(a);
  return flow;
}

/** A data directory with run `r1` waiting for an answer (keyframes every step), and a directory outside it. */
async function waitingRun(): Promise<{ dataDir: string; outside: string; runDir: string }> {
  const dataDir = makeTempDir('links-data-', 'test');
  const outside = makeTempDir('links-outside-', 'test');
  const result = await runFlow(approval(), { dataDir, runId: 'r1', keyframeInterval: 1 });
  expect(result.status).toBe('waiting');
  return { dataDir, outside, runDir: join(dataDir, 'sessions', 'default', 'runs', 'r1') };
}

/** Resumes r1 with an answer: the error, or undefined when it went through. */
async function answer(dataDir: string): Promise<unknown> {
  try {
    await resumeRun(approval(), { dataDir, runId: 'r1', resume: { approved: true }, keyframeInterval: 1 });
    return undefined;
  } catch (error) {
    return error;
  }
}

/** Every entry under `dir` (recursively, links not followed) with its kind and bytes: to compare before and after. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (at: string, prefix: string): void => {
    for (const name of readdirSync(at).sort()) {
      const path = join(at, name);
      const stat = lstatSync(path);
      if (stat.isDirectory()) walk(path, `${prefix}${name}/`);
      else out[`${prefix}${name}`] = stat.isFile() ? readFileSync(path).toString('base64') : `(${stat.isSymbolicLink() ? 'link' : 'other'})`;
    }
  };
  walk(dir, '');
  return out;
}

const PRECIOUS = 'precious user data, not JSON\n';

describe('F1: events.pending that is not a regular file of its own', () => {
  it('a symlink to a file outside: the resume is refused naming it, and the file it points to is unchanged', async () => {
    const { dataDir, outside, runDir } = await waitingRun();
    const victim = join(outside, 'precious.txt');
    writeFileSync(victim, PRECIOUS);
    const marker = join(runDir, 'events.pending');
    unlinkSync(marker);
    symlinkSync(victim, marker);
    const error = await answer(dataDir);
    expect(error).toBeInstanceOf(EventStoreError);
    expect((error as Error).message).toContain(marker);
    expect((error as Error).message).toContain('a symbolic link');
    expect(readFileSync(victim, 'utf8')).toBe(PRECIOUS);
    expect(lstatSync(marker).isSymbolicLink()).toBe(true);
    // Readers do not read through it either: they go by the log's chain hashes alone, as for garbage in the marker,
    // and verify names it.
    expect((await listRuns({ dataDir }))[0]!.eventCount).toBeGreaterThan(0);
    const report = await verifyRun({ dataDir, runId: 'r1' });
    expect(report.ok).toBe(false);
    expect(JSON.stringify(report)).toContain(`${marker} is a symbolic link, not the log's batch marker`);
    expect(readFileSync(victim, 'utf8')).toBe(PRECIOUS);
  });

  it('a dangling symlink: refused, and nothing is created where it points', async () => {
    const { dataDir, outside, runDir } = await waitingRun();
    const target = join(outside, 'created-through-the-link');
    const marker = join(runDir, 'events.pending');
    unlinkSync(marker);
    symlinkSync(target, marker);
    expect(await answer(dataDir)).toBeInstanceOf(EventStoreError);
    expect(existsSync(target)).toBe(false);
  });

  it('a FIFO or a directory: refused at once (no hang), naming what is there', async () => {
    for (const [make, what] of [
      [(path: string) => execFileSync('mkfifo', [path]), 'a FIFO'],
      [(path: string) => mkdirSync(path), 'a directory'],
    ] as const) {
      const { dataDir, runDir } = await waitingRun();
      const marker = join(runDir, 'events.pending');
      unlinkSync(marker);
      make(marker);
      const error = await answer(dataDir);
      expect(error).toBeInstanceOf(EventStoreError);
      expect((error as Error).message).toContain(`${marker} is ${what}`);
    }
  });

  it('a hard link to a file outside: refused, and that file is unchanged', async () => {
    const { dataDir, outside, runDir } = await waitingRun();
    const victim = join(outside, 'precious.txt');
    writeFileSync(victim, PRECIOUS);
    const marker = join(runDir, 'events.pending');
    unlinkSync(marker);
    linkSync(victim, marker);
    const error = await answer(dataDir);
    expect(error).toBeInstanceOf(EventStoreError);
    expect((error as Error).message).toContain('hard links');
    expect(readFileSync(victim, 'utf8')).toBe(PRECIOUS);
  });

  it('a marker longer than its record (a regular file of its own) is cut to the record on open, and the run goes on', async () => {
    const { dataDir, runDir } = await waitingRun();
    const marker = join(runDir, 'events.pending');
    writeFileSync(marker, readFileSync(marker, 'utf8') + ' '.repeat(500));
    expect(await answer(dataDir)).toBeUndefined();
    expect(readFileSync(marker).length).toBe(96);
    expect((await verifyRun({ dataDir, runId: 'r1' })).status).toBe('verified');
  });
});

/**
 * Every file a run's writer opens or replaces on a resume (in place: the log, its index, the marker; by temp file and
 * rename: the projection, the keyframes), each replaced by a link to a file outside the data directory.
 */
const RUN_FILES = ['events.jsonl', 'events.idx.jsonl', 'events.pending', 'projections/run.meta.json', 'checkpoint/2.json', 'checkpoint/3.json'] as const;
/** Written in place: a link there is refused. The others are replaced by rename: the link itself is replaced. */
const IN_PLACE = new Set<string>(['events.jsonl', 'events.idx.jsonl', 'events.pending']);

describe('F2: every file a run writer opens, replaced by a link to a file outside', () => {
  it('property: the writer refuses the link (in place) or replaces it (rename); the target is unchanged byte for byte', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...RUN_FILES), fc.boolean(), fc.uint8Array({ minLength: 0, maxLength: 300 }), async (file, moveOriginal, bytes) => {
        const { dataDir, outside, runDir } = await waitingRun();
        const path = join(runDir, file);
        const target = join(outside, 'target');
        // The run's own file moved outside (as in the audit), or any other file of the user's.
        if (moveOriginal && existsSync(path)) renameSync(path, target);
        else {
          writeFileSync(target, bytes);
          rmSync(path, { force: true });
        }
        const before = readFileSync(target);
        symlinkSync(target, path);
        const error = await answer(dataDir);
        expect(readFileSync(target).equals(before)).toBe(true);
        expect(readdirSync(outside)).toEqual(['target']);
        if (IN_PLACE.has(file)) {
          // Refused: by the writer, naming the link, or before (a reader finds no events, or damage, through it).
          expect(error).toBeInstanceOf(StoreError);
          if (error instanceof EventStoreError && (error as Error).message.includes('not a regular file')) expect((error as Error).message).toContain(`${path} is a symbolic link`);
          expect(lstatSync(path).isSymbolicLink()).toBe(true);
        } else if (error === undefined) {
          // Replaced by the write (or left as it was, when the resume wrote no such file): never written through.
          expect(lstatSync(path).isSymbolicLink() || lstatSync(path).isFile()).toBe(true);
        } else expect(error).toBeInstanceOf(StoreError);
      }),
      { numRuns: trials(12, 150) },
    );
  });

  it('a run document written by rename replaces a link in its place; the file it pointed to is unchanged', async () => {
    const dataDir = makeTempDir('links-data-', 'test');
    const outside = makeTempDir('links-outside-', 'test');
    const victim = join(outside, 'precious.txt');
    writeFileSync(victim, PRECIOUS);
    const newRun = await openNewRun({ dataDir, runId: 'k1' });
    const store = new FileRunStore(dataDir);
    const flowPath = store.documentPath({ sessionKey: 'default', runId: 'k1' }, 'flow');
    symlinkSync(victim, flowPath);
    await newRun.saveDocument('flow', { version: '2.0.0', namespace: 'docs', nodes: [], edges: [] });
    expect(readFileSync(victim, 'utf8')).toBe(PRECIOUS);
    expect(lstatSync(flowPath).isFile()).toBe(true);
    await newRun.release();
  });
});

describe('F3: a run folder or a session folder that is a link, or not a folder', () => {
  it('run folder → folder outside: listed as damaged naming it; reads, resume and delete refuse it; nothing outside changes', async () => {
    const { dataDir, outside, runDir } = await waitingRun();
    const moved = join(outside, 'r1');
    renameSync(runDir, moved);
    symlinkSync(moved, runDir);
    const before = snapshot(outside);

    const listed = await listRuns({ dataDir });
    expect(listed.map((r) => r.runId)).toEqual(['r1']);
    expect(listed[0]!.damaged).toContain(`${runDir} is a symbolic link to ${moved}`);

    const resumed = await answer(dataDir);
    expect(resumed).toBeInstanceOf(RunFolderError);
    expect((resumed as Error).message).toContain(runDir);

    const store = new FileRunStore(dataDir);
    const ref = { sessionKey: 'default', runId: 'r1' };
    await expect(store.currentRunMeta(ref)).rejects.toBeInstanceOf(RunFolderError);
    await expect(store.loadKeyframe(ref, 1)).rejects.toBeInstanceOf(RunFolderError);
    await expect(store.loadDocument(ref, 'flow')).rejects.toBeInstanceOf(RunFolderError);
    await expect(store.hasEvents(ref)).rejects.toBeInstanceOf(RunFolderError);
    await expect(verifyRun({ dataDir, runId: 'r1' })).rejects.toBeInstanceOf(RunFolderError);

    // Delete refuses it (choice: the user removes the entry having looked at it), and removes nothing anywhere.
    await expect(deleteRun({ dataDir, runId: 'r1' })).rejects.toBeInstanceOf(RunFolderError);
    expect(lstatSync(runDir).isSymbolicLink()).toBe(true);
    const pruned = await pruneRuns({ dataDir, olderThan: 0, status: ['waiting', 'completed', 'stopped', 'failed'] });
    expect(pruned.deleted).toEqual([]);
    expect(snapshot(outside)).toEqual(before);
  });

  it('session folder → folder outside: its runs are listed as damaged; resume, a new run, delete and prune write and remove nothing outside', async () => {
    const { dataDir, outside } = await waitingRun();
    const session = join(dataDir, 'sessions', 'default');
    const moved = join(outside, 'default');
    renameSync(session, moved);
    symlinkSync(moved, session);
    // A killed delete's leftover, inside the folder outside: a prune's sweep must not reach it through the link.
    mkdirSync(join(moved, 'runs', 'r0~deleting-0123456789ab'));
    const before = snapshot(outside);

    const listed = await listRuns({ dataDir });
    expect(listed.map((r) => r.runId)).toEqual(['r1']);
    expect(listed[0]!.damaged).toContain(`${session} is a symbolic link`);
    expect(await answer(dataDir)).toBeInstanceOf(RunFolderError);
    await expect(runFlow(approval(), { dataDir, runId: 'r2' })).rejects.toBeInstanceOf(RunFolderError);
    await expect(deleteRun({ dataDir, runId: 'r1' })).rejects.toBeInstanceOf(RunFolderError);
    await pruneRuns({ dataDir, olderThan: 0, status: ['waiting', 'completed'] });
    expect(snapshot(outside)).toEqual(before);
  });

  it('projections or checkpoint folder → folder outside: the resume is refused before anything is written there', async () => {
    for (const sub of ['projections', 'checkpoint']) {
      const { dataDir, outside, runDir } = await waitingRun();
      const moved = join(outside, sub);
      renameSync(join(runDir, sub), moved);
      symlinkSync(moved, join(runDir, sub));
      const before = snapshot(outside);
      const error = await answer(dataDir);
      expect(error).toBeInstanceOf(RunFolderError);
      expect((error as Error).message).toContain(join(runDir, sub));
      expect(snapshot(outside)).toEqual(before);
    }
  });

  it('a run folder replaced by a dangling link is listed as damaged; a file in its place is no run, and named when asked for', async () => {
    const { dataDir, outside, runDir } = await waitingRun();
    const other = join(dataDir, 'sessions', 'default', 'runs', 'r9');
    writeFileSync(other, 'not a run');
    rmSync(runDir, { recursive: true });
    symlinkSync(join(outside, 'nothing'), runDir);
    const listed = await listRuns({ dataDir });
    expect(listed.map((r) => r.runId)).toEqual(['r1']);
    expect(listed[0]!.damaged).toContain(`${runDir} is a symbolic link to ${join(outside, 'nothing')}`);
    expect(await answer(dataDir)).toBeInstanceOf(RunFolderError);
    await expect(resumeRun(approval(), { dataDir, runId: 'r9', resume: { approved: true } })).rejects.toThrow(`${other} is a regular file, not a directory`);
    await expect(deleteRun({ dataDir, runId: 'r9' })).rejects.toBeInstanceOf(RunFolderError);
    expect(readFileSync(other, 'utf8')).toBe('not a run');
    expect(readdirSync(outside)).toEqual([]);
  });
});

describe('F5: a run document recorded at the start and gone since', () => {
  async function recordedRun(): Promise<{ store: FileRunStore; ref: { sessionKey: string; runId: string }; dataDir: string }> {
    const dataDir = makeTempDir('links-docs-', 'test');
    const newRun = await openNewRun({ dataDir, runId: 'k1' });
    await newRun.saveDocument('flow', { version: '2.0.0', namespace: 'docs', nodes: [], edges: [] });
    await newRun.saveDocument('recipe', { v: 1, flow: { kind: 'config' }, modules: ['/abs/nodes.mjs'] });
    const f = new Flow({ namespace: 'docs' });
    class Put extends BackpackNode {
      override post(bp: BackpackHandle): undefined {
        bp.pack('done', true);
        return undefined;
      }
    }
    f.addNode(Put, { id: 'put' });
    await runFlow(f, { newRun });
    return { store: new FileRunStore(dataDir), ref: { sessionKey: 'default', runId: 'k1' }, dataDir };
  }

  it('run.recipe.json deleted: readRecipe names it and says the run recorded it, as verifyRun does', async () => {
    const { store, ref, dataDir } = await recordedRun();
    const path = store.documentPath(ref, 'recipe');
    rmSync(path);
    const error = await readRecipe(store, ref).then(() => undefined, (e: unknown) => e as Error);
    expect(error?.message).toContain(`${path}: the run recorded it when it started (${store.describeLog(ref)}, line `);
    expect(error?.message).toContain('and it is gone');
    expect(error?.message).toContain('--flow');
    const verified = await verifyRun({ dataDir, runId: 'k1' });
    expect(verified.status).toBe('damaged');
    // One message, built in one place.
    expect(verified.problems.filter((p) => p.startsWith(`${path}: the run recorded it when it started`))).toHaveLength(1);
    expect(error?.message).toContain(verified.problems.find((p) => p.startsWith(path))!);
  });

  it('flow.json deleted: the recorded flow is an error naming it, not "has no recorded flow"; --flow still resumes without it', async () => {
    const { store, ref } = await recordedRun();
    const path = store.documentPath(ref, 'flow');
    rmSync(path);
    const error = await recordedFlowConfig(undefined, store, ref).then(() => undefined, (e: unknown) => e as Error);
    expect(error?.message).toContain(`${path}: the run recorded it when it started`);
    expect(error?.message).not.toContain('has no recorded flow');
    const given = join(makeTempDir('links-flow-', 'test'), 'flow.json');
    writeFileSync(given, JSON.stringify({ version: '2.0.0', namespace: 'docs', nodes: [], edges: [] }));
    await expect(recordedFlowConfig(given, store, ref)).resolves.toMatchObject({ namespace: 'docs' });
  });

  it('a run recorded without a recipe still has none (undefined, no error)', async () => {
    const dataDir = makeTempDir('links-docs-', 'test');
    await runFlow(approval(), { dataDir, runId: 'r1' });
    const store = new FileRunStore(dataDir);
    await expect(readRecipe(store, { sessionKey: 'default', runId: 'r1' })).resolves.toBeUndefined();
  });
});
