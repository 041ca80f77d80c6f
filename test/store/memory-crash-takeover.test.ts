/**
 * A memory writer SIGKILLed part-way through an operation, and then a write by a store that stays open (a server,
 * the Studio, a worker: one that loaded the index before the crash). That store takes over the dead writer's lock;
 * it must repair what the cut operation left (`index/pending.json`) before it works from its index, never drop the
 * record. Real files, real child processes killed at an exact file system call (fixtures/memory-op-killed.ts).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, linkSync, readFileSync, renameSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/index.js';
import { bundledScript } from '../support/bundle.js';
import { makeTempDir } from '../support/temp.js';

const here = dirname(fileURLToPath(import.meta.url));
/** The fixture bundled with the store sources: `node <bundle>` starts in a third of `--import tsx`'s CPU. */
const fixture = await bundledScript(join(here, 'fixtures', 'memory-op-killed.ts'));

/** Runs one operation to its end in a child process (another process writing). */
function inAnotherProcess(op: string, dataDir: string, ...args: string[]): void {
  const child = spawnSync(process.execPath, [fixture, 'null', op, dataDir, ...args], { encoding: 'utf8', timeout: 20_000 });
  expect(child.status, child.stderr).toBe(0);
}

/** Runs one operation in a child that SIGKILLs itself at the call `kill` names; fails the test when it does not. */
function killedMidway(kill: { fn: string; match: string; nth?: number }, op: string, dataDir: string, ...args: string[]): void {
  const child = spawnSync(process.execPath, [fixture, JSON.stringify(kill), op, dataDir, ...args], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  expect(child.signal, `the child was to be killed at ${JSON.stringify(kill)}; it exited ${child.status}: ${child.stderr}`).toBe('SIGKILL');
}

/** Runs `fn` and collects the process warnings it causes (emitted on the next tick). */
async function withWarnings<T>(fn: () => Promise<T>): Promise<{ value: T; warnings: string[] }> {
  const warnings: string[] = [];
  const listener = (w: Error): void => void warnings.push(`${w.name}: ${w.message}`);
  process.on('warning', listener);
  try {
    const value = await fn();
    await new Promise((resolve) => setImmediate(resolve));
    return { value, warnings };
  } finally {
    process.off('warning', listener);
  }
}

/** What a fresh store (a new process would do the same) serves: every item listed, and the ids a search finds. */
async function freshView(dataDir: string, query: string): Promise<{ value: { listed: string[]; hits: string[] }; warnings: string[] }> {
  return withWarnings(async () => {
    const fresh = new MemoryStore({ dataDir });
    const listed = (await fresh.listAll()).items.map((item) => item.id);
    const hits = (await fresh.search(query, 50)).map((item) => item.id).sort();
    return { listed, hits };
  });
}

/** keyword.json's rename: the kill lands after the operation changed the items, before the index says so. */
const BEFORE_INDEX = { fn: 'renameSync', match: 'keyword.json' };

describe('memory: a writer killed mid-operation, then a write by a long-lived store', () => {
  it('an acknowledged item cut mid-update is still served, in one of its versions', async () => {
    const dataDir = makeTempDir('memory-takeover-', 'test');
    const live = new MemoryStore({ dataDir });
    await live.write({ id: 'x', content: 'alpha original' });
    expect((await live.search('alpha', 5)).map((item) => item.id)).toEqual(['x']); // the index is loaded

    killedMidway(BEFORE_INDEX, 'write', dataDir, 'x', 'alpha updated');
    await live.write({ id: 'y', content: 'gamma' }); // takes over the dead writer's lock
    await live.close();
    expect(existsSync(join(dataDir, 'memory', 'shared', 'index', 'pending.json'))).toBe(false);

    const { value, warnings } = await withWarnings(async () => {
      const fresh = new MemoryStore({ dataDir });
      const got = await fresh.get('x').then(
        (item) => item?.content,
        (error: Error) => `threw: ${error.message}`,
      );
      return { got, hits: (await fresh.search('alpha', 5)).map((item) => item.id), gamma: (await fresh.search('gamma', 5)).map((item) => item.id) };
    });
    expect(['alpha original', 'alpha updated'], `get('x') = ${value.got}; warnings: ${warnings.join(' | ')}`).toContain(value.got);
    expect(value.hits).toEqual(['x']);
    expect(value.gamma).toEqual(['y']);
    expect(warnings).toEqual([]);
  });

  it('an add cut by the kill is indexed or absent, never taken for an older copy put back', async () => {
    const dataDir = makeTempDir('memory-takeover-', 'test');
    const live = new MemoryStore({ dataDir });
    await live.write({ id: 'a', content: 'alpha' });
    await live.search('alpha', 5);

    killedMidway(BEFORE_INDEX, 'write', dataDir, 'n', 'alpha newcomer');
    await live.write({ id: 'b', content: 'beta' });
    await live.close();

    const { value, warnings } = await freshView(dataDir, 'alpha');
    expect(value.hits).toEqual(value.listed.filter((id) => id !== 'b').sort());
    expect(value.hits).toContain('a');
    expect(warnings).toEqual([]);
  });

  it('a delete cut by the kill leaves no id in the index whose file is gone', async () => {
    const dataDir = makeTempDir('memory-takeover-', 'test');
    const live = new MemoryStore({ dataDir });
    await live.writeMany([
      { id: 'a', content: 'alpha one' },
      { id: 'd', content: 'alpha doomed' },
    ]);
    await live.search('alpha', 5);

    killedMidway(BEFORE_INDEX, 'delete', dataDir, 'd');
    await live.write({ id: 'b', content: 'beta' });
    await live.close();

    const { value, warnings } = await freshView(dataDir, 'alpha');
    expect(value.hits).toEqual(value.listed.filter((id) => id !== 'b').sort());
    expect(warnings).toEqual([]);
  });

  it('a deleteWhere killed part-way (some files removed) leaves index and items agreeing', async () => {
    const dataDir = makeTempDir('memory-takeover-', 'test');
    const live = new MemoryStore({ dataDir });
    await live.writeMany([
      { id: 'keep', content: 'alpha kept' },
      ...['d1', 'd2', 'd3', 'd4'].map((id) => ({ id, content: `alpha ${id}`, metadata: { tag: 'old' } })),
    ]);
    await live.search('alpha', 5);

    // Killed before removing the third file: two of the four are gone, keyword.json still lists all four.
    killedMidway({ fn: 'promises.rm', match: `${join('memory', 'shared', 'items')}`, nth: 3 }, 'deleteWhere', dataDir, JSON.stringify({ tag: 'old' }));
    await live.write({ id: 'b', content: 'beta' });
    await live.close();

    const { value, warnings } = await freshView(dataDir, 'alpha');
    expect(value.listed).toContain('keep');
    expect(value.listed.filter((id) => id.startsWith('d'))).toHaveLength(2);
    expect(value.hits).toEqual(value.listed.filter((id) => id !== 'b').sort());
    expect(warnings).toEqual([]);
  });

});

describe('memory: another process\'s write is seen by a store that loaded the index before it', () => {
  it('even when keyword.json comes back with the inode, size and mtime of the version the store read', async () => {
    const dataDir = makeTempDir('memory-generation-', 'test');
    const keyword = join(dataDir, 'memory', 'shared', 'index', 'keyword.json');
    const live = new MemoryStore({ dataDir });
    await live.write({ id: 'x', content: 'alpha one' });
    // A whole-second mtime, which utimes sets exactly (the same tick as the write below, on a coarse clock).
    const tick = Math.floor(Date.now() / 1000);
    utimesSync(keyword, tick, tick);
    expect((await live.search('alpha', 5)).map((item) => item.id)).toEqual(['x']); // the index is loaded
    const read = statSync(keyword);
    // Keep the inode of the version the store read, as a file system that reuses inode numbers would give it back.
    const kept = `${keyword}.kept`;
    linkSync(keyword, kept);

    inAnotherProcess('write', dataDir, 'x', 'alpha two'); // same length: keyword.json keeps its size
    const written = readFileSync(keyword);
    expect(written.length).toBe(read.size);
    // The other process's keyword.json, in the old inode, with the old mtime: two writes in one clock tick.
    writeFileSync(kept, written);
    utimesSync(kept, tick, tick);
    renameSync(kept, keyword);
    const now = statSync(keyword);
    expect([now.ino, now.size, now.mtimeMs]).toEqual([read.ino, read.size, read.mtimeMs]);

    await live.write({ id: 'y', content: 'gamma' });
    await live.close();
    const { value, warnings } = await withWarnings(async () => {
      const fresh = new MemoryStore({ dataDir });
      return { x: (await fresh.get('x'))?.content, hits: (await fresh.search('alpha gamma', 5)).map((item) => item.id).sort() };
    });
    expect(value).toEqual({ x: 'alpha two', hits: ['x', 'y'] });
    expect(warnings).toEqual([]);
  });
});
