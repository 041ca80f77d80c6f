import { chmodSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ContextEngine } from '../../src/context/index.js';
import { openSample, snapshotStore } from './helpers.js';

async function populated() {
  const sample = await openSample();
  const { engine } = sample;
  await engine.registerAgent({ agentId: 'w2', role: 'writer' });
  await engine.putFrame('src/util/strings.ts', { type: 'summary', content: 'string helpers: trim, pad' }, 'w');
  await engine.putFrame('src/util/strings.ts', { type: 'review', content: 'needs tests' }, 'w2');
  await engine.putFrame('src/util/numbers.ts', { type: 'summary', content: 'number helpers: clamp' }, 'w');
  await engine.putFrame('src/util', { type: 'summary', content: 'utility modules' }, 'w2');
  await engine.putFrame('src/main.ts', { type: 'summary', content: 'main: uses string helpers' }, 'w');
  return sample;
}

describe('multi-frame composition (spec §5)', () => {
  it('never exceeds maxFrames', async () => {
    const { engine } = await populated();
    for (const maxFrames of [0, 1, 2, 3]) {
      const c = await engine.compose('src/util/strings.ts', { maxFrames, sources: ['current', 'parent', 'siblings', { related: ['src/main.ts'] }] });
      expect(c.frames).toHaveLength(maxFrames);
      expect(c.candidates).toBe(5);
    }
    await expect(engine.compose('src', { maxFrames: -2 })).rejects.toThrow(/maxFrames must be a non-negative integer/);
  });

  it('orders deterministically: the same policy gives the same result across runs and engines', async () => {
    const { root, engine } = await populated();
    const policy = { maxFrames: 10, sources: ['current', 'parent', 'siblings'] as const, ordering: 'type' as const, typePriority: ['review'] };
    const a = await engine.compose('src/util/strings.ts', { ...policy, sources: [...policy.sources] });
    const b = await (await ContextEngine.open(root)).compose('src/util/strings.ts', { ...policy, sources: [...policy.sources] });
    expect(b).toEqual(a);
    expect(a.frames.map((f) => `${f.frame.type}:${f.source}`)).toEqual(['review:current', 'summary:parent', 'summary:siblings', 'summary:current']);
  });

  it('different policies give different results', async () => {
    const { engine } = await populated();
    const sources = ['current', 'parent', 'siblings', { related: ['src/main.ts'] }] as const;
    const ids = async (ordering: 'recency' | 'oldest' | 'agent' | 'relevance') =>
      (await engine.compose('src/util/strings.ts', { maxFrames: 10, sources: [...sources], ordering, query: 'string helpers', agentPriority: ['w2'] })).frames.map(
        (f) => f.frame.content,
      );
    const recency = await ids('recency');
    const oldest = await ids('oldest');
    const relevance = await ids('relevance');
    expect(recency).toEqual([...oldest].reverse());
    expect(relevance.slice(0, 2)).toEqual(['string helpers: trim, pad', 'main: uses string helpers']);
    expect((await ids('agent')).slice(0, 2)).toEqual(['utility modules', 'needs tests']);
    const custom = await engine.compose('src/util/strings.ts', {
      maxFrames: 2,
      sources: [...sources],
      ordering: (a, b) => a.frame.content.length - b.frame.content.length,
    });
    expect(custom.frames.map((f) => f.frame.content)).toEqual(['needs tests', 'utility modules']);
  });

  it('skips missing frames and unknown related nodes instead of failing', async () => {
    const { root, engine } = await populated();
    const review = (await engine.getHead('src/util/strings.ts', 'review'))!;
    const file = join(root, '.merkle', 'frames', review.slice(0, 2), `${review}.json`);
    chmodSync(file, 0o644);
    unlinkSync(file);
    const c = await engine.compose('src/util/strings.ts', { maxFrames: 10, sources: ['current', { related: ['gone.txt'] }] });
    expect(c.frames.map((f) => f.frame.type)).toEqual(['summary']);
    expect(c.skipped.map((s) => s.ref)).toEqual(['gone.txt', review]);
    expect(c.skipped[1].reason).toMatch(/not found/);
  });

  it('never writes', async () => {
    const { root, engine } = await populated();
    const before = snapshotStore(root);
    await engine.compose('src/util', { maxFrames: 5, sources: ['current', 'parent', 'siblings'], ordering: 'relevance', query: 'helpers' });
    expect(snapshotStore(root)).toEqual(before);
  });

  it('an empty composition is an empty result, not an error', async () => {
    const { engine } = await populated();
    const c = await engine.compose('docs', { maxFrames: 5, sources: ['current', 'siblings'], filters: { types: ['summary'] } });
    expect(c).toMatchObject({ frames: [], skipped: [] });
    const none = await engine.compose('', { maxFrames: 5, sources: ['parent', 'siblings'] });
    expect(none.frames).toEqual([]);
    const filtered = await engine.compose('src/util/strings.ts', { maxFrames: 5, filters: { until: 0 } });
    expect(filtered.frames).toEqual([]);
  });
});
