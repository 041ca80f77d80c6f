import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContextEngine } from '../../src/context/index.js';
import { openSample, snapshotStore, tempDir } from './helpers.js';

describe('context APIs (spec §2)', () => {
  it('the same request yields the same frame set, by NodeID or by path', async () => {
    const { engine } = await openSample();
    for (let i = 0; i < 6; i++) await engine.putFrame('src/main.ts', { type: i % 2 ? 'summary' : 'note', content: `c${i}` }, 'w');
    const node = await engine.resolveNode('src/main.ts');
    const view = { maxFrames: 3, ordering: 'type' as const, typePriority: ['summary'] };
    const a = await engine.getNode('src/main.ts', view);
    const b = await engine.getNode(node.nodeId, view);
    const c = await (await ContextEngine.open(engine.workspaceRoot)).getNode('./src/main.ts', view);
    expect(b).toEqual(a);
    expect(c).toEqual(a);
    expect(a.frames.map((f) => f.content)).toEqual(['c5', 'c3', 'c1']);
    expect(a.frameCount).toBe(6);
  });

  it('applies a ContextView: limit, ordering, type and agent filters, heads only', async () => {
    const { engine } = await openSample();
    await engine.registerAgent({ agentId: 'w2', role: 'writer' });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await engine.putFrame('docs', { type: i < 2 ? 'a' : 'b', content: `${i}` }, i % 2 ? 'w2' : 'w'));
    expect((await engine.getNode('docs')).frames.map((f) => f.frameId)).toEqual([...ids].reverse());
    expect((await engine.getNode('docs', { ordering: 'oldest', maxFrames: 2 })).frames.map((f) => f.frameId)).toEqual(ids.slice(0, 2));
    expect((await engine.getNode('docs', { types: ['b'] })).frames.map((f) => f.content)).toEqual(['3', '2']);
    expect((await engine.getNode('docs', { agents: ['w2'] })).frames.map((f) => f.content)).toEqual(['3', '1']);
    expect((await engine.getNode('docs', { headsOnly: true })).frames.map((f) => f.content)).toEqual(['3', '1']);
    expect((await engine.getNode('docs', { ordering: 'agent', agentPriority: ['w2'] })).frames.map((f) => f.content)).toEqual(['3', '1', '2', '0']);
    expect((await engine.getNode('docs', { maxFrames: 0 })).frames).toEqual([]);
    await expect(engine.getNode('docs', { maxFrames: -1 })).rejects.toThrow(/maxFrames must be a non-negative integer/);
    await expect(engine.getNode('docs', { ordering: 'random' as 'recency' })).rejects.toThrow(/unknown ordering "random"/);
  });

  it('a frame append updates the head atomically, in the same state file as the frame set', async () => {
    const { root, engine } = await openSample();
    expect(await engine.getHead('README.md', 'summary')).toBeNull();
    const id = await engine.putFrame('README.md', { type: 'summary', content: 'x' }, 'w');
    expect(await engine.getHead('README.md', 'summary')).toBe(id);
    const state = JSON.parse(readFileSync(join(root, '.merkle', 'state.json'), 'utf8')).data;
    expect(state.heads['README.md'].summary).toBe(id);
    expect(state.frames['README.md'].map((e: { frameId: string }) => e.frameId)).toEqual([id]);
    const id2 = await engine.putFrame('README.md', { type: 'summary', content: 'y' }, 'w');
    expect(await engine.getHead('README.md', 'summary')).toBe(id2);
    // Re-putting an identical frame is idempotent: same id, store unchanged.
    const before = snapshotStore(root);
    expect(await engine.putFrame('README.md', { type: 'summary', content: 'y' }, 'w')).toBe(id2);
    expect(snapshotStore(root)).toEqual(before);
  });

  it('API calls never synthesize implicitly', async () => {
    const { engine } = await openSample();
    await engine.putFrame('src/util/strings.ts', { type: 'summary', content: 'x' }, 'w');
    await engine.getNode('src/util');
    await engine.regenerate('', { recursive: true });
    for (const dir of ['', 'src', 'src/util']) expect(await engine.listFrames(dir)).toEqual([]);
  });

  it('errors are deterministic and clear: same condition, same error', async () => {
    const { engine } = await openSample();
    const attempt = () => engine.putFrame('nope.txt', { type: 'summary', content: 'x' }, 'w').then(() => new Error('resolved'), (e: Error) => e);
    const [a, b] = [await attempt(), await attempt()];
    expect(a).toMatchObject({ code: 'UNKNOWN_NODE' });
    expect(b.message).toBe(a.message);
    expect(a.message).toContain("no node at 'nope.txt'");
  });

  it('an invalid node id returns a clear error, not a crash', async () => {
    const { engine } = await openSample();
    const unknown = 'a'.repeat(64);
    await expect(engine.getNode(unknown)).rejects.toMatchObject({ code: 'UNKNOWN_NODE', message: expect.stringContaining(unknown) });
    await expect(engine.getNode('../outside')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('outside the workspace') });
    await expect(engine.putFrame('README.md', { type: 'bad type', content: 'x' }, 'w')).rejects.toThrow(/frame type "bad type" is invalid/);
    await expect(engine.putFrame('README.md', { type: 't', content: 42 as unknown as string }, 'w')).rejects.toThrow(/content must be a string/);
    await expect(engine.getFrame('xyz')).rejects.toThrow(/not a 64-hex FrameID/);
    const unscanned = await ContextEngine.open(tempDir());
    await expect(unscanned.getNode('.')).rejects.toMatchObject({ code: 'NOT_SCANNED', message: expect.stringContaining("run 'backpackflow context scan'") });
  });

  it('handles concurrent reads and writes without races', async () => {
    const { engine } = await openSample();
    const ops: Promise<unknown>[] = [];
    for (let i = 0; i < 10; i++) {
      ops.push(engine.putFrame('docs/guide.md', { type: 'note', content: `n${i}` }, 'w'));
      ops.push(engine.getNode('docs/guide.md', { maxFrames: 100 }));
    }
    await Promise.all(ops);
    const final = await engine.getNode('docs/guide.md', { maxFrames: 100 });
    expect(final.frameCount).toBe(10);
    expect(new Set(final.frames.map((f) => f.content)).size).toBe(10);
  });
});
