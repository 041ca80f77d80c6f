import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deepEqual, type JsonValue } from '../../src/backpack/index.js';
import { applyJsonDelta, diffJson } from '../../src/runtime/json-delta.js';

const json = fc.jsonValue() as fc.Arbitrary<JsonValue>;

describe('JSON deltas', () => {
  it('applying the delta of two values gives the second value (property)', () => {
    fc.assert(
      fc.property(json, json, (a, b) => {
        const delta = diffJson(a, b);
        if (delta === undefined) return deepEqual(a, b);
        return deepEqual(applyJsonDelta(a, delta), b) && !deepEqual(a, b);
      }),
      { numRuns: 300 },
    );
  });

  it('applying a delta does not modify the previous value (property)', () => {
    fc.assert(
      fc.property(json, json, (a, b) => {
        const before = JSON.stringify(a);
        const delta = diffJson(a, b);
        if (delta) applyJsonDelta(a, delta);
        return JSON.stringify(a) === before;
      }),
      { numRuns: 200 },
    );
  });

  it('an append to a list is stored as just the new items', () => {
    const prev = Array.from({ length: 400 }, (_, i) => `entry ${i} ${'x'.repeat(180)}`);
    const next = [...prev, 'new entry'];
    expect(diffJson(prev, next)).toEqual({ a: ['new entry'] });
  });

  it('a change deep inside an object is stored as a patch of that key', () => {
    const prev = { big: 'y'.repeat(1000), nested: { count: 1, keep: true }, gone: 1 };
    const next = { big: 'y'.repeat(1000), nested: { count: 2, keep: true } };
    expect(diffJson(prev, next)).toEqual({ o: { nested: { o: { count: { r: 2 } } } }, d: ['gone'] });
  });

  it('replaces when the structure changes or a patch would be longer', () => {
    expect(diffJson([1, 2, 3], [1, 5, 3, 4])).toEqual({ r: [1, 5, 3, 4] });
    expect(diffJson({ a: 1 }, { b: 2 })).toEqual({ r: { b: 2 } });
    expect(diffJson('a', { a: 1 })).toEqual({ r: { a: 1 } });
    expect(diffJson({ a: [1] }, { a: [1] })).toBeUndefined();
  });

  it('handles data keys named like Object.prototype members (__proto__, toString)', () => {
    const prev = JSON.parse('{"keep": 1, "toString": 2}') as JsonValue;
    const next = JSON.parse('{"keep": 1, "__proto__": [1, 2]}') as JsonValue;
    const delta = diffJson(prev, next)!;
    expect(JSON.stringify(applyJsonDelta(prev, delta))).toBe('{"keep":1,"__proto__":[1,2]}');
    expect(deepEqual(applyJsonDelta(prev, delta), next)).toBe(true);
  });

  it('a Backpack key named __proto__ survives exportState, the state tracker and importState', async () => {
    const { Backpack } = await import('../../src/index.js');
    const { StateTracker, applyStateDelta } = await import('../../src/runtime/index.js');
    const backpack = new Backpack();
    const tracker = new StateTracker(backpack);
    const start = structuredClone(tracker.state);
    backpack.pack('__proto__', { note: 'data, not a prototype' });
    const delta = tracker.next()!;
    applyStateDelta(start, delta);
    expect(Object.keys(start.items)).toEqual(['__proto__']);
    const restored = new Backpack();
    restored.importState(start);
    expect(restored.peek('__proto__')).toEqual({ note: 'data, not a prototype' });
  });

  it('refuses a delta that does not fit the value it is applied to', () => {
    expect(() => applyJsonDelta('text', { a: [1] })).toThrow('JSON delta: an append applies to an array');
    expect(() => applyJsonDelta([1], { o: {} })).toThrow('JSON delta: an object patch applies to an object');
  });
});
