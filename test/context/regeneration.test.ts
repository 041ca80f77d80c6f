import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContextEngine, loadHashBackend, type ContextEngine as Engine } from '../../src/context/index.js';
import { openSample, snapshotStore } from './helpers.js';
import { MerkleStore } from '../../src/context/store.js';

/**
 * A custom policy that records which directories it was asked to synthesize (the engine calls a custom policy twice
 * per directory to check it is deterministic; the record keeps one entry per directory).
 */
function counting(engine: Engine): string[] {
  const calls: string[] = [];
  engine.registerSynthesisPolicy('tracked', (input) => {
    if (calls.at(-1) !== input.path) calls.push(input.path);
    return `${input.path}: ${input.children.map((c) => c.content).join(' | ')}`;
  });
  return calls;
}

async function prepared() {
  const sample = await openSample({
    'a/x.txt': 'x',
    'a/deep/y.txt': 'y',
    'b/z.txt': 'z',
  });
  const calls = counting(sample.engine);
  for (const path of ['a/x.txt', 'a/deep/y.txt', 'b/z.txt']) await sample.engine.putFrame(path, { type: 'summary', content: `about ${path}` }, 'w');
  await sample.engine.synthesizeBranch('', 'summary', 's', { kind: 'custom', name: 'tracked' });
  calls.length = 0;
  return { ...sample, calls };
}

describe('incremental regeneration (spec §4)', () => {
  it('a file change regenerates only the frames whose basis changed, bottom-up', async () => {
    const { root, engine, calls } = await prepared();
    const before = { b: await engine.getHead('b', 'summary'), deep: await engine.getHead('a/deep', 'summary') };
    writeFileSync(join(root, 'a/x.txt'), 'x changed');
    await engine.scan();
    expect((await engine.status()).stale).toBe(3); // x.txt's agent frame, a, root
    const result = await engine.regenerate('', { recursive: true });
    expect(calls).toEqual(['a', '']); // bottom-up, and nothing else
    expect(result.regenerated).toHaveLength(2);
    expect(result.needsAgent).toEqual([{ path: 'a/x.txt', type: 'summary', frameId: await engine.getHead('a/x.txt', 'summary') }]);
    expect(await engine.getHead('b', 'summary')).toBe(before.b);
    expect(await engine.getHead('a/deep', 'summary')).toBe(before.deep);
    expect(result.regenerated).toEqual([await engine.getHead('a', 'summary'), await engine.getHead('', 'summary')]);
  });

  it('leaves unchanged nodes untouched and is idempotent', async () => {
    const { root, engine, calls } = await prepared();
    const before = snapshotStore(root);
    expect((await engine.regenerate('', { recursive: true })).regenerated).toEqual([]);
    expect(calls).toEqual([]);
    expect(snapshotStore(root)).toEqual(before);

    writeFileSync(join(root, 'b/z.txt'), 'z2');
    await engine.scan();
    const first = await engine.regenerate('', { recursive: true });
    const afterFirst = snapshotStore(root);
    const second = await engine.regenerate('', { recursive: true });
    expect(first.regenerated).toHaveLength(2);
    expect(second.regenerated).toEqual([]);
    expect(snapshotStore(root)).toEqual(afterFirst);
  });

  it('regenerated FrameIDs differ from the old ones, and equal across identical workspaces', async () => {
    const one = await prepared();
    const two = await prepared();
    const old = await one.engine.getHead('', 'summary');
    expect(await two.engine.getHead('', 'summary')).toBe(old);
    for (const w of [one, two]) {
      writeFileSync(join(w.root, 'a/deep/y.txt'), 'y2');
      await w.engine.scan();
    }
    const r1 = await one.engine.regenerate('', { recursive: true });
    const r2 = await two.engine.regenerate('', { recursive: true });
    expect(r1.regenerated).toEqual(r2.regenerated);
    expect(r1.regenerated).not.toContain(old);
    expect(r1.regenerated).toHaveLength(3); // a/deep, a, root
  });

  it('does not cascade beyond the declared scope: ancestors are marked stale, not regenerated', async () => {
    const { root, engine, calls } = await prepared();
    const rootHead = await engine.getHead('', 'summary');
    await engine.putFrame('a/deep/y.txt', { type: 'summary', content: 'new note' }, 'w');
    const result = await engine.regenerate('a/deep');
    expect(calls).toEqual(['a/deep']);
    expect(result.regenerated).toHaveLength(1);
    expect(result.markedStale).toEqual([{ path: 'a', type: 'summary', frameId: await engine.getHead('a', 'summary') }]);
    expect(await engine.getHead('', 'summary')).toBe(rootHead);
    calls.length = 0;
    await engine.regenerate('a');
    expect(calls).toEqual(['a']);
    expect((await engine.status()).stale).toBe(1); // root now depends on a replaced frame
    calls.length = 0;
    await engine.regenerate('');
    expect(calls).toEqual(['']);
    expect((await engine.status()).stale).toBe(0);
    await expect((await ContextEngine.open(root)).validate()).resolves.toMatchObject({ ok: true });
  });

  it('keeps old frames readable after regeneration', async () => {
    const { root, engine } = await prepared();
    const old = await engine.getHead('a', 'summary');
    writeFileSync(join(root, 'a/x.txt'), 'x changed');
    await engine.scan();
    await engine.regenerate('a');
    expect(await engine.getHead('a', 'summary')).not.toBe(old);
    expect((await engine.getFrame(old!)).content).toContain('about a/x.txt');
    expect((await engine.listFrames('a')).map((f) => f.frameId)).toContain(old);
  });

  it('invalidate marks heads stale (idempotently) and regenerate renews them', async () => {
    const { root, engine, calls } = await prepared();
    const head = await engine.getHead('b', 'summary');
    const first = await engine.invalidate('b');
    expect(first.invalidated).toEqual([{ path: 'b', type: 'summary', frameId: head }]);
    const snapshot = snapshotStore(root);
    expect(await engine.invalidate('b')).toEqual(first);
    expect(snapshotStore(root)).toEqual(snapshot);
    expect((await engine.status()).stale).toBe(1);
    await engine.regenerate('b');
    expect(calls).toEqual(['b']);
    expect(await engine.getHead('b', 'summary')).toBe(head); // same basis, same frame
    expect((await engine.status()).stale).toBe(0);
  });

  it('persists the basis index and reuses it after reopening', async () => {
    const { root, engine } = await prepared();
    const head = await engine.getFrame((await engine.getHead('a', 'summary'))!);
    const reopened = await ContextEngine.open(root);
    // Read back from disk (state.json and its journal) by a store that has never seen it in memory.
    const state = new MerkleStore(root, await loadHashBackend()).readState();
    expect(state.basis[head.basis.hash]).toEqual([head.frameId]);
    const calls = counting(reopened);
    expect((await reopened.regenerate('', { recursive: true })).regenerated).toEqual([]);
    expect(calls).toEqual([]);
  });

  it('fails clearly when the policy of a frame to regenerate is not registered', async () => {
    const { root, engine } = await prepared();
    await engine.invalidate('b');
    const fresh = await ContextEngine.open(root);
    await expect(fresh.regenerate('b')).rejects.toMatchObject({ code: 'UNKNOWN_POLICY', message: expect.stringContaining("'tracked'") });
  });

  it('concurrent regenerations do not corrupt the store', async () => {
    const { root, engine } = await prepared();
    writeFileSync(join(root, 'a/x.txt'), 'changed');
    await engine.scan();
    const other = await ContextEngine.open(root);
    counting(other);
    const [r1, r2] = await Promise.all([engine.regenerate('', { recursive: true }), other.regenerate('', { recursive: true })]);
    expect([...r1.regenerated, ...r2.regenerated]).toHaveLength(2);
    expect((await engine.validate()).ok).toBe(true);
  });
});
