import { execFileSync } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContextEngine, loadHashBackend } from '../../src/context/index.js';
import { IgnoreRules } from '../../src/context/ignore-rules.js';
import { quickCheck, type QuickCheckInput } from '../../src/context/quick-check.js';
import { ABORT, BUSY, NEXT, STAT_FIELDS, StatPool, statOne, type SharedStatJob } from '../../src/context/stat-pool.js';
import { MerkleStore } from '../../src/context/store.js';
import { bundledScript } from '../support/bundle.js';
import { plainEnv } from '../support/env.js';
import { settle, tempDir, writeTree } from './helpers.js';

/** A scanned workspace of 80 files in 8 directories, and what the quick check needs of its stored tree. */
async function scanned(): Promise<{ root: string; input: () => QuickCheckInput }> {
  const root = tempDir();
  const files: Record<string, string> = {};
  for (let d = 0; d < 8; d++) for (let f = 0; f < 10; f++) files[`d${d}/f${f}.txt`] = `${d}/${f}`;
  writeTree(root, files);
  settle(root);
  const engine = await ContextEngine.open(root);
  await engine.scan();
  await engine.close();
  const store = new MerkleStore(root, await loadHashBackend());
  const rulesKey = new IgnoreRules(root, {}).key;
  return {
    root,
    input: () => {
      const view = store.readStatView();
      if (view === undefined) throw new Error('no stat index after a scan');
      return { root, tree: view.view, rulesKey, racyFromMs: view.writtenMs };
    },
  };
}

/** The path of record `i` of a job (as the helper thread reads it). */
function pathOf(job: SharedStatJob, i: number): string {
  const bytes = Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength);
  const o = job.starts[i]!;
  return bytes.toString('utf8', o + 5, o + 5 + bytes.readUInt32BE(o + 1));
}

/** Does what the helper thread does with chunk `c` of `job`: its stats, then its done flag. */
function statChunk(job: SharedStatJob, root: string, c: number): void {
  const end = Math.min(job.starts.length, (c + 1) * job.chunk);
  for (let i = c * job.chunk; i < end; i++) statOne(i === 0 ? root : `${root}/${pathOf(job, i)}`, job.stats, i);
  Atomics.store(job.done, c, 1);
}

const paths = (leaves: Awaited<ReturnType<typeof quickCheck>>) => leaves?.map((leaf) => leaf.record.path);

/** What test/context/fixtures/helper-job.ts prints, run by plain node (under tsx its loader thread kept the process alive). */
async function runHelperJobFixture(mode: 'close' | 'leave'): Promise<string> {
  const script = await bundledScript(join(import.meta.dirname, 'fixtures', 'helper-job.ts'));
  return execFileSync(process.execPath, [script, mode], { encoding: 'utf8', env: plainEnv(), timeout: 20_000 }).trim();
}

describe('quickCheck: the work shared with the helper thread', () => {
  it('finds the same changed files whichever thread statted them', async () => {
    const { root, input } = await scanned();
    appendFileSync(join(root, 'd0/f1.txt'), ' edited');
    appendFileSync(join(root, 'd7/f9.txt'), ' edited');
    const serial = await quickCheck(input());
    expect(paths(serial)).toEqual(['d0/f1.txt', 'd7/f9.txt']);

    // A helper that takes every chunk before this thread starts: its stats alone decide.
    let chunks = 0;
    const greedy = await quickCheck({
      ...input(),
      helper: {
        statShared: async (job) => {
          for (let c = Atomics.add(job.control, NEXT, 1); c * job.chunk < job.starts.length; c = Atomics.add(job.control, NEXT, 1)) {
            statChunk(job, root, c);
            chunks++;
          }
        },
      },
    });
    expect(chunks).toBeGreaterThan(1);
    expect(paths(greedy)).toEqual(paths(serial));

    // A helper that takes the first half of the chunks; this thread takes the rest.
    let helperJob: SharedStatJob | undefined;
    const shared = await quickCheck({
      ...input(),
      helper: {
        statShared: async (job) => {
          helperJob = job;
          const half = Math.ceil(job.starts.length / job.chunk / 2);
          for (let k = 0; k < half; k++) statChunk(job, root, Atomics.add(job.control, NEXT, 1));
        },
      },
    });
    expect(paths(shared)).toEqual(paths(serial));
    const done = Array.from(helperJob!.done);
    expect(done.filter((d) => d === 1).length).toBe(Math.ceil(done.length / 2));
  });

  it('stats again the chunk a failed helper held, and does not wait for a helper that never boots', async () => {
    const { root, input } = await scanned();
    appendFileSync(join(root, 'd0/f0.txt'), ' edited');
    const failing = await quickCheck({
      ...input(),
      helper: {
        statShared: (job) => {
          // Claims the chunk holding d0/f0.txt, writes garbage for it and fails without flagging it done.
          Atomics.store(job.control, BUSY, 1);
          const c = Atomics.add(job.control, NEXT, 1);
          job.stats.fill(-1, c * job.chunk * STAT_FIELDS, (c + 1) * job.chunk * STAT_FIELDS);
          Atomics.store(job.control, BUSY, 0);
          return Promise.reject(new Error('helper failed'));
        },
      },
    });
    expect(paths(failing)).toEqual(['d0/f0.txt']);

    let helperJob: SharedStatJob | undefined;
    const absent = await quickCheck({ ...input(), helper: { statShared: (job) => ((helperJob = job), new Promise(() => undefined)) } });
    expect(paths(absent)).toEqual(['d0/f0.txt']);
    expect(Atomics.load(helperJob!.control, NEXT)).toBeGreaterThan(0); // this thread took every chunk
    expect(Array.from(helperJob!.done)).toEqual(new Array(helperJob!.done.length).fill(0));
  });

  it('after waiting for a helper stuck on a chunk, stats everything itself', async () => {
    const { root, input } = await scanned();
    appendFileSync(join(root, 'd3/f3.txt'), ' edited');
    let stuck: SharedStatJob | undefined;
    const start = performance.now();
    const result = await quickCheck({
      ...input(),
      helperWaitMs: 50,
      helper: {
        statShared: (job) => {
          stuck = job;
          Atomics.store(job.control, BUSY, 1);
          Atomics.add(job.control, NEXT, 1); // holds the first chunk and never finishes it
          return new Promise(() => undefined);
        },
      },
    });
    expect(paths(result)).toEqual(['d3/f3.txt']);
    expect(performance.now() - start).toBeGreaterThanOrEqual(45);
    expect(Atomics.load(stuck!.control, ABORT)).toBe(1); // told to stop
  });

  it("close() ends the helper thread even when its reply comes during close(), so a process's last await settles", async () => {
    // The helper boots and answers while the calling thread is busy (the quick check no longer waits for it); that
    // reply, handled during close(), used to unreference the stopping thread, and the process then ended with exit
    // code 13 (an unsettled top-level await) before printing 'done'.
    expect(await runHelperJobFixture('close')).toBe('done');
  });

  it('a pool closed and used again serves the new request: the old helper ending does not fail it', async () => {
    const pool = new StatPool();
    pool.warm();
    const closing = pool.close();
    const root = tempDir();
    writeTree(root, { 'a.txt': 'abc' });
    const stats = await pool.statOnHelper(`${root}/a.txt\0${root}/absent`);
    expect(Array.from(stats.subarray(0, 2))).toEqual([1, 3]); // a file of 3 bytes
    expect(stats[STAT_FIELDS]).toBe(0); // nothing there
    await closing;
    await pool.close();
  });

  it('a process that leaves the helper a shared job and never closes the pool ends when its own work is done', async () => {
    // The worker's 'message' listener referenced it again after it was created unreferenced: with no request left
    // to unreference it, a context scan that found nothing changed never exited.
    expect(await runHelperJobFixture('leave')).toBe('done');
  });
});
