/**
 * Temp files that processes killed mid-write left (`.<name>.<pid>.<hex>.tmp`, from the atomic writes and the lock)
 * are removed by the next writer that takes the lock of their folder (a run's writer also sweeps the run's
 * projections and keyframe folders); a live process's temp file, or one too recent to judge, is never touched.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileRunStore, MemoryStore, memoryPaths, runPaths } from '../../src/store/index.js';
import { makeEvent, tempDir } from './helpers.js';

/** The pid of a process that ran and exited (dead now). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.on('exit', resolve));
  return child.pid!;
}

/** Creates the temp file a process `pid` would leave beside `path`, last written `ageMs` ago; returns its path. */
function leftover(path: string, pid: number, ageMs: number): string {
  const temp = join(path, '..', `.${path.split('/').at(-1)!}.${pid}.${ageMs.toString(16).padStart(12, '0')}.tmp`);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(temp, 'partial');
  const then = new Date(Date.now() - ageMs);
  utimesSync(temp, then, then);
  return temp;
}

const OLD = 11 * 60_000;

describe('temp files left by killed processes', () => {
  let tmp: ReturnType<typeof tempDir>;
  let live: ReturnType<typeof spawn>;
  beforeAll(() => {
    tmp = tempDir();
    live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)']);
  });
  afterAll(() => {
    live.kill('SIGKILL');
    tmp.cleanup();
  });

  it("are removed when a run's writer takes the run, in the run's folders; a live process's and recent ones stay", async () => {
    const store = new FileRunStore(tmp.dir);
    const ref = { sessionKey: 's', runId: 'r' };
    const writer = await store.openWriter(ref, { fresh: true, durability: 'never' });
    await writer.commit([makeEvent('r', 1)]);
    await writer.close();
    const paths = runPaths(tmp.dir, 's', 'r');
    const dead = await deadPid();
    const gone = [
      leftover(paths.lock, dead, OLD),
      leftover(paths.index, dead, OLD),
      leftover(paths.runMeta, dead, OLD),
      leftover(join(paths.checkpointDir, '4.json'), dead, OLD),
    ];
    const kept = [leftover(paths.runMeta, live.pid!, OLD), leftover(paths.index, dead, 1000)];
    const resumed = await store.openWriter(ref, { fresh: false, durability: 'never' });
    await resumed.close();
    expect(gone.filter((path) => existsSync(path))).toEqual([]);
    expect(kept.filter((path) => existsSync(path))).toEqual(kept);
  });

  it('are removed from the memory index and items folders when the next memory write takes its lock', async () => {
    const memory = new MemoryStore({ dataDir: tmp.dir, durability: 'never' });
    await memory.write({ id: 'a', content: 'first', keywords: ['x'] });
    const paths = memoryPaths(tmp.dir);
    const dead = await deadPid();
    const gone = [leftover(paths.keywordIndex, dead, OLD), leftover(join(paths.indexDir, 'keyword.lock'), dead, OLD), leftover(join(paths.itemsDir, 'c.json'), dead, OLD)];
    const kept = leftover(paths.keywordIndex, live.pid!, OLD);
    // The next process's store: it sweeps items/ at its first write.
    await new MemoryStore({ dataDir: tmp.dir, durability: 'never' }).write({ id: 'b', content: 'second', keywords: ['x'] });
    expect(gone.filter((path) => existsSync(path))).toEqual([]);
    expect(existsSync(kept)).toBe(true);
  });
});
