/**
 * Deleting runs: crash-safe (SIGKILLed children in the middle of a delete leave the run whole or gone, never half
 * deleted and readable), refused while a live process writes the run, and leftovers swept by the next delete.
 */
import { cpSync, existsSync, readdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckpointStore, EventStore, RunInUseError, deleteRunDir, listRunIds, runPaths, sweepDeletedRuns } from '../../src/store/index.js';
import { bundleFixtures, spawnFixture } from './child.js';
import { makeEvent, tempDir } from './helpers.js';
import { trials } from '../support/soak.js';

const SESSION = 'crash';
/** The size of a run: batches of two events in its sealed log, and keyframe files. */
interface RunSize {
  batches: number;
  keyframes: number;
}
/** Enough files that removing them takes a while: the crash trials' runs. */
const BIG: RunSize = { batches: 40, keyframes: 300 };
/** The other tests' runs (every kind of file, quickly made). */
const SMALL: RunSize = { batches: 3, keyframes: 3 };

/** A run with a sealed log of `size.batches` batches and `size.keyframes` keyframe files. */
async function makeRun(dataDir: string, runId: string, size: RunSize = SMALL): Promise<void> {
  const events = new EventStore({ dataDir, sessionKey: SESSION, runId });
  for (let b = 0; b < size.batches; b++) await events.appendBatch([makeEvent(runId, 2 * b + 1), makeEvent(runId, 2 * b + 2)]);
  await events.close();
  const checkpoints = new CheckpointStore({ dataDir, sessionKey: SESSION, runId, durability: 'never' });
  for (let step = 1; step <= size.keyframes; step++) {
    await checkpoints.saveHistorical({ v: 1, step, createdAt: 1, position: ['n'], state: { step } }, step);
  }
}

/** The run as a reader finds it: whole (every event verified, every keyframe), or not listed at all. */
async function expectWholeOrGone(dataDir: string, runId: string, size: RunSize): Promise<'whole' | 'gone'> {
  const listed = (await listRunIds(dataDir, SESSION)).some((r) => r.runId === runId);
  if (!listed) {
    expect(existsSync(runPaths(dataDir, SESSION, runId).dir), `${runId} is not listed, so its directory must be gone`).toBe(false);
    return 'gone';
  }
  const store = new EventStore({ dataDir, sessionKey: SESSION, runId });
  expect((await store.verify()).ok, `${runId} is listed, so its log must verify`).toBe(true);
  expect(await store.readAll()).toHaveLength(2 * size.batches);
  expect(await new CheckpointStore({ dataDir, sessionKey: SESSION, runId }).listHistorical()).toHaveLength(size.keyframes);
  return 'whole';
}

describe('deleting a run', () => {
  let tmp: ReturnType<typeof tempDir>;
  let bundles: string;
  beforeAll(async () => {
    tmp = tempDir();
    bundles = join(import.meta.dirname, '..', '..', 'node_modules', '.cache', 'backpackflow-test-fixtures', 'retention');
    await bundleFixtures(['delete-run.ts', 'hold-lock.ts'], bundles);
  });
  afterAll(() => tmp.cleanup());

  it('removes the log, index, checkpoints and projection at once, and says whether there was a run', async () => {
    await makeRun(tmp.dir, 'plain');
    expect(await deleteRunDir(tmp.dir, SESSION, 'plain')).toBe(true);
    expect(existsSync(runPaths(tmp.dir, SESSION, 'plain').dir)).toBe(false);
    expect(readdirSync(join(tmp.dir, 'sessions', SESSION, 'runs'))).toEqual([]);
    expect(await deleteRunDir(tmp.dir, SESSION, 'plain')).toBe(false);
  });

  it('refuses a hostile run id before touching any file', async () => {
    await expect(deleteRunDir(tmp.dir, SESSION, '../../etc')).rejects.toThrow(/invalid runId/);
    await expect(deleteRunDir(tmp.dir, '..', 'x')).rejects.toThrow(/invalid sessionKey/);
  });

  const TRIALS = trials(3, 40);
  it(`survives SIGKILL at any moment of a delete (${TRIALS} kills): the run is whole and readable, or gone; leftovers are swept`, async () => {
    const outcomes = { whole: 0, gone: 0, leftovers: 0 };
    // One big run, made once and copied for each trial (a copy costs half the file operations of making it).
    const template = join(tmp.dir, 'template');
    await makeRun(template, 'victim', BIG);
    const dataDirs = Array.from({ length: TRIALS }, (_, trial) => join(tmp.dir, `trial-${trial}`));
    for (const [trial, dataDir] of dataDirs.entries()) {
      cpSync(template, dataDir, { recursive: true });
      const child = spawnFixture('delete-run.ts', [dataDir, SESSION, 'victim'], bundles);
      await child.waitFor('ready');
      // Kill moments spread over 0-40 ms after the start (a random one in each trial's share), from before the rename
      // to the end of the removal.
      await new Promise((r) => setTimeout(r, ((trial + Math.random()) * 40) / TRIALS));
      child.process.kill('SIGKILL');
      await child.exited;
      outcomes[await expectWholeOrGone(dataDir, 'victim', BIG)]++;
      const runs = readdirSync(join(dataDir, 'sessions', SESSION, 'runs'));
      outcomes.leftovers += runs.filter((n) => n.includes('~deleting-')).length;
    }
    // The next delete sweeps what killed deletes left, and a run that survived its kill is deleted now.
    for (const dataDir of dataDirs) {
      await deleteRunDir(dataDir, SESSION, 'victim');
      expect(readdirSync(join(dataDir, 'sessions', SESSION, 'runs'))).toEqual([]);
    }
    expect(outcomes.whole + outcomes.gone).toBe(TRIALS);
    console.log(`retention crash trials: ${JSON.stringify(outcomes)}`);
  }, 120_000);

  it('a delete killed between the rename and the removal leaves a hidden directory that the next sweep removes', async () => {
    await makeRun(tmp.dir, 'half');
    const paths = runPaths(tmp.dir, SESSION, 'half');
    // The state a kill right after the rename leaves (the same rename deleteRunDir makes).
    renameSync(paths.dir, `${paths.dir}~deleting-0123456789ab`);
    expect(await listRunIds(tmp.dir, SESSION)).toEqual([]);
    expect(await sweepDeletedRuns(tmp.dir, SESSION, { dryRun: true })).toEqual(['half~deleting-0123456789ab']);
    expect(readdirSync(join(tmp.dir, 'sessions', SESSION, 'runs'))).toHaveLength(1);
    expect(await sweepDeletedRuns(tmp.dir, SESSION)).toEqual(['half~deleting-0123456789ab']);
    expect(readdirSync(join(tmp.dir, 'sessions', SESSION, 'runs'))).toEqual([]);
  });

  it('refuses a run a live process writes (naming it), and deletes it once that writer is gone', async () => {
    await makeRun(tmp.dir, 'busy');
    const writer = spawnFixture('hold-lock.ts', [tmp.dir, SESSION, 'busy'], bundles);
    await writer.waitFor('ready');
    try {
      const refused = await deleteRunDir(tmp.dir, SESSION, 'busy').catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(RunInUseError);
      expect((refused as RunInUseError).holder?.pid).toBe(writer.process.pid);
      expect((refused as Error).message).toMatch(new RegExp(`run crash/busy has a live writer \\(pid ${writer.process.pid} `));
      expect(await expectWholeOrGone(tmp.dir, 'busy', SMALL)).toBe('whole');
    } finally {
      writer.process.kill('SIGKILL');
      await writer.exited;
    }
    // Its lock is stale now (the holder died): recovered as a writer would, and the run deleted.
    expect(await deleteRunDir(tmp.dir, SESSION, 'busy')).toBe(true);
    expect(await listRunIds(tmp.dir, SESSION)).toEqual([]);
  });

  it('a run id is free again once its run is deleted: a new writer starts an empty log', async () => {
    await makeRun(tmp.dir, 'reused');
    await deleteRunDir(tmp.dir, SESSION, 'reused');
    const store = new EventStore({ dataDir: tmp.dir, sessionKey: SESSION, runId: 'reused' });
    expect((await store.open()).lastSeq).toBeUndefined();
    await store.close();
  });
});
