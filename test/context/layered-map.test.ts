import { describe, expect, it } from 'vitest';
import { LayeredMap } from '../../src/context/layered-map.js';

describe('LayeredMap', () => {
  it('a derived copy changes without touching the map it came from, through sets, deletes and re-adds', () => {
    const base = new Map(Array.from({ length: 100 }, (_, i) => [`k${i}`, i] as [string, number]));
    const a = LayeredMap.of(base);
    const b = a.derive();
    b.set('k1', -1);
    b.delete('k2');
    b.set('new', 1000);
    b.delete('new');
    b.set('again', 7);
    expect([a.get('k1'), a.get('k2'), a.has('again'), a.size]).toEqual([1, 2, false, 100]);
    expect([b.get('k1'), b.get('k2'), b.has('new'), b.get('again'), b.size]).toEqual([-1, undefined, false, 7, 100]);
    const c = b.derive();
    c.set('k2', 2);
    expect([b.has('k2'), c.get('k2'), c.size]).toEqual([false, 2, 101]);
    expect(new Map(c.entries())).toEqual(new Map([...base, ['k1', -1], ['again', 7]]));
  });

  it('folds a large overlay into a new base and keeps every entry', () => {
    let map = LayeredMap.of(new Map([['a', 0]]));
    for (let i = 0; i < 50; i++) {
      map = map.derive();
      map.set(`x${i}`, i);
      if (i % 3 === 0) map.delete(`x${i - 3}`);
    }
    const expected = new Map<string, number>([['a', 0]]);
    for (let i = 0; i < 50; i++) {
      expected.set(`x${i}`, i);
      if (i % 3 === 0) expected.delete(`x${i - 3}`);
    }
    expect(new Map(map.entries())).toEqual(expected);
    expect(map.size).toBe(expected.size);
  });
});
