import { describe, expect, it } from 'vitest';
import { Backpack } from '../../src/backpack/index.js';

describe('diff', () => {
  it('reports added, modified and deleted keys, sorted, with before, after and changedBy', () => {
    const before = new Backpack({ keep: 1, change: { a: [1] }, gone: 'x' });
    const after = new Backpack({ keep: 1 });
    after.pack('change', { a: [2] }, { nodeId: 'editor' });
    after.pack('zeta', 1, { nodeId: 'z' });
    after.pack('alpha', 1);
    const d = Backpack.diff(before, after);
    expect(d.added).toEqual(['alpha', 'zeta']);
    expect(d.modified).toEqual(['change']);
    expect(d.deleted).toEqual(['gone']);
    expect(d.details.change).toEqual({ before: { a: [1] }, after: { a: [2] }, changedBy: 'editor' });
    expect(d.details.gone).toEqual({ before: 'x', after: undefined, changedBy: undefined });
    expect(d.details.zeta!.changedBy).toBe('z');
    expect(d.details.keep).toBeUndefined();
    expect(before.diff(before, after)).toEqual(d);
  });

  it('compares values structurally, including Maps, Sets, Dates, typed arrays and undefined', () => {
    const v = () => ({ m: new Map([[1, new Set(['a'])]]), d: new Date(3), t: new Uint16Array([1]), u: undefined });
    const a = new Backpack({ v: v() });
    expect(Backpack.diff(a, new Backpack({ v: v() })).modified).toEqual([]);
    for (const changed of [
      { ...v(), m: new Map([[1, new Set(['b'])]]) },
      { ...v(), d: new Date(4) },
      { ...v(), t: new Uint16Array([2]) },
      { m: v().m, d: v().d, t: v().t },
      { ...v(), u: null },
    ]) {
      expect(Backpack.diff(a, new Backpack({ v: changed })).modified).toEqual(['v']);
    }
  });

  it('is empty for identical states', () => {
    const bp = new Backpack({ a: 1, b: [1, 2] });
    expect(Backpack.diff(bp, bp.getSnapshot(Date.now()))).toEqual({ added: [], modified: [], deleted: [], details: {} });
  });
});
