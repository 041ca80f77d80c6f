import { describe, expect, it } from 'vitest';
import type { ContextEngine, SynthesisInput } from '../../src/context/index.js';
import { openSample, tempDir, writeTree } from './helpers.js';
import { ContextEngine as Engine } from '../../src/context/index.js';

async function annotate(engine: ContextEngine): Promise<void> {
  await engine.putFrame('src/main.ts', { type: 'summary', content: 'main entry\nmore' }, 'w');
  await engine.putFrame('src/util/strings.ts', { type: 'summary', content: 'string helpers' }, 'w');
  await engine.putFrame('src/util/numbers.ts', { type: 'summary', content: 'number helpers' }, 'w');
  await engine.putFrame('src/util/numbers.ts', { type: 'review', content: 'looks fine' }, 'w');
}

describe('branch synthesis (spec §3)', () => {
  it('same child frames give the same branch frame, in any workspace', async () => {
    const a = await openSample();
    const b = await openSample();
    await annotate(a.engine);
    await annotate(b.engine);
    const fa = await a.engine.synthesizeBranch('src', 'summary', 's');
    const fb = await b.engine.synthesizeBranch('src', 'summary', 's');
    expect(fb).toBe(fa);
    expect(await a.engine.synthesizeBranch('src', 'summary', 's')).toBe(fa);
    const frame = await a.engine.getFrame(fa);
    expect(frame.content).toBe(
      '## src/main.ts [summary]\nmain entry\nmore\n\n## src/util [summary]\n## src/util/numbers.ts [summary]\nnumber helpers\n\n## src/util/strings.ts [summary]\nstring helpers\n\n',
    );
  });

  it('synthesizes bottom-up: every subdirectory gets its frame first and the parent basis lists it', async () => {
    const { engine } = await openSample();
    await annotate(engine);
    const top = await engine.synthesizeBranch('src', 'summary', 's');
    const util = await engine.getHead('src/util', 'summary');
    const frame = await engine.getFrame(top);
    expect(frame.basis.kind).toBe('synthesis');
    if (frame.basis.kind !== 'synthesis') return;
    expect(frame.basis.childFrameIds).toEqual([await engine.getHead('src/main.ts', 'summary'), util]);
  });

  it('a child change changes the parent basis', async () => {
    const { engine } = await openSample();
    await annotate(engine);
    const first = await engine.getFrame(await engine.synthesizeBranch('src', 'summary', 's'));
    await engine.putFrame('src/util/strings.ts', { type: 'summary', content: 'string helpers v2' }, 'w');
    const second = await engine.getFrame(await engine.synthesizeBranch('src', 'summary', 's'));
    expect(second.basis.hash).not.toBe(first.basis.hash);
    expect(second.frameId).not.toBe(first.frameId);
  });

  it('is limited to the subtree: no parent or sibling frames are read or written', async () => {
    const { engine } = await openSample();
    await annotate(engine);
    await engine.putFrame('docs/guide.md', { type: 'summary', content: 'SIBLING' }, 'w');
    await engine.putFrame('README.md', { type: 'summary', content: 'PARENT LEVEL' }, 'w');
    const id = await engine.synthesizeBranch('src/util', 'summary', 's');
    const content = (await engine.getFrame(id)).content;
    expect(content).not.toMatch(/SIBLING|PARENT|main entry/);
    expect(await engine.listFrames('src')).toEqual([]);
    expect(await engine.listFrames('')).toEqual([]);
    expect(await engine.listFrames('docs')).toEqual([]);
  });

  it('an empty directory produces a stable empty frame', async () => {
    const a = await openSample();
    const b = await openSample();
    const fa = await a.engine.synthesizeBranch('empty', 'summary', 's');
    const fb = await b.engine.synthesizeBranch('empty', 'summary', 's');
    expect(fa).toBe(fb);
    expect(await a.engine.synthesizeBranch('empty', 'summary', 's')).toBe(fa);
    const frame = await a.engine.getFrame(fa);
    expect(frame.content).toBe('');
    expect(frame.basis.kind === 'synthesis' && frame.basis.childFrameIds).toEqual([]);
  });

  it('preserves deterministic child ordering whatever the order frames were written in', async () => {
    const files = { 'd/b.txt': 'b', 'd/a.txt': 'a', 'd/c.txt': 'c' };
    const one = tempDir();
    const two = tempDir();
    writeTree(one, files);
    writeTree(two, files);
    const results: string[] = [];
    for (const [root, order] of [
      [one, ['d/a.txt', 'd/b.txt', 'd/c.txt']],
      [two, ['d/c.txt', 'd/a.txt', 'd/b.txt']],
    ] as const) {
      const engine = await Engine.open(root);
      await engine.scan();
      await engine.registerAgent({ agentId: 'w', role: 'writer' });
      await engine.registerAgent({ agentId: 's', role: 'synthesis' });
      for (const path of order) await engine.putFrame(path, { type: 'summary', content: path }, 'w');
      const frame = await engine.getFrame(await engine.synthesizeBranch('d', 'summary', 's', { kind: 'summarization' }));
      expect(frame.content).toBe('d: 3 child frame(s) of type summary\n- a.txt: d/a.txt\n- b.txt: d/b.txt\n- c.txt: d/c.txt\n');
      results.push(frame.frameId);
    }
    expect(results[1]).toBe(results[0]);
  });

  it('supports summarization, filtering, every-head sources and registered custom policies', async () => {
    const { engine } = await openSample();
    await annotate(engine);
    const summary = await engine.getFrame(await engine.synthesizeBranch('src/util', 'summary', 's', { kind: 'summarization', maxLineLength: 10 }));
    expect(summary.content).toBe('src/util: 2 child frame(s) of type summary\n- numbers.ts: number he…\n- strings.ts: string he…\n');

    const filtered = await engine.getFrame(
      await engine.synthesizeBranch('src/util', 'filtered', 's', { kind: 'filtering', sourceType: '*', types: ['review'] }),
    );
    expect(filtered.content).toBe('## src/util/numbers.ts [review]\nlooks fine\n');

    const everything = await engine.getFrame(await engine.synthesizeBranch('src/util', 'all', 's', { kind: 'concatenation', sourceType: '*' }));
    expect(everything.basis.kind === 'synthesis' && everything.basis.childFrameIds).toHaveLength(3);

    const seen: SynthesisInput[] = [];
    engine.registerSynthesisPolicy('count', (input) => {
      seen.push(input);
      return `${input.path}:${input.children.length}`;
    });
    const custom = await engine.getFrame(await engine.synthesizeBranch('src', 'counted', 's', { kind: 'custom', name: 'count', sourceType: 'summary' }));
    expect(custom.content).toBe('src:2');
    expect(seen.map((s) => s.path)).toContain('src/util');
  });

  it('rejects a nondeterministic or unregistered custom policy, a bad policy and a file target', async () => {
    const { root, engine } = await openSample();
    let n = 0;
    engine.registerSynthesisPolicy('clock', () => `${n++}`);
    await expect(engine.synthesizeBranch('src', 'x', 's', { kind: 'custom', name: 'clock' })).rejects.toMatchObject({ code: 'NONDETERMINISTIC_POLICY' });
    await expect(engine.synthesizeBranch('src', 'x', 's', { kind: 'custom', name: 'missing' })).rejects.toMatchObject({
      code: 'UNKNOWN_POLICY',
      message: expect.stringContaining("registerSynthesisPolicy('missing'"),
    });
    await expect(engine.synthesizeBranch('src', 'x', 's', { kind: 'filtering' })).rejects.toThrow(/give at least one of agents, types, contains/);
    await expect(engine.synthesizeBranch('README.md', 'x', 's')).rejects.toMatchObject({ code: 'NOT_A_DIRECTORY' });
    expect(await (await Engine.open(root)).listFrames('src')).toEqual([]);
  });
});
