import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deepEqual, type JsonValue } from '../../src/backpack/index.js';
import { Backpack, encodeValue } from '../../src/backpack/index.js';
import { adoptValue, extendsStored, isStoredJson, prepareValue } from '../../src/backpack/values.js';
import { applyJsonDelta, diffJson, diffStored } from '../../src/runtime/json-delta.js';
import { trials } from '../support/soak.js';

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
    const start = backpack.exportState();
    backpack.pack('__proto__', { note: 'data, not a prototype' });
    const delta = tracker.next()!;
    applyStateDelta(start, delta);
    expect(Object.keys(start.items)).toEqual(['__proto__']);
    const restored = new Backpack();
    restored.importState(start);
    expect(restored.peek('__proto__')).toEqual({ note: 'data, not a prototype' });
  });

  describe('by identity, between values as the Backpack stores them (diffStored)', () => {
    /** Any value the Backpack stores: JSON, undefined, -0, NaN, BigInt, Date, Map, Set, and a `$bp` data key. */
    const stored: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.oneof(fc.string(), fc.integer(), fc.constantFrom(undefined, null, true, -0, NaN, Infinity), fc.bigInt(), fc.date({ noInvalidDate: true })),
        fc.array(tie('value'), { maxLength: 5 }),
        fc.dictionary(fc.constantFrom('a', 'b', 'c', '$bp', '__proto__'), tie('value'), { maxKeys: 4 }),
        fc.array(fc.tuple(fc.string({ maxLength: 2 }), tie('value')), { maxLength: 3 }).map((entries) => new Map(entries)),
        fc.array(fc.integer({ max: 5 }), { maxLength: 3 }).map((members) => new Set(members)),
      ),
    })).value;
    /** A next value sharing parts of `prev` the way a node builds it: appended to, a key changed, or new. */
    const edit = (prev: unknown, change: unknown, how: number): unknown => {
      if (Array.isArray(prev)) return how % 3 === 0 ? [...prev, change] : how % 3 === 1 ? prev.slice(0, -1) : [...prev.slice(1), change];
      if (prev !== null && typeof prev === 'object' && !(prev instanceof Map) && !(prev instanceof Set) && !(prev instanceof Date)) {
        const keys = Object.keys(prev);
        const copy = Object.fromEntries(Object.entries(prev));
        if (how % 2 === 0 && keys.length > 0) delete copy[keys[how % keys.length]!];
        else copy[`k${how}`] = change;
        return copy;
      }
      return change;
    };

    it('applied to the encoded previous value, gives the encoded next value (property, through a Backpack, recording growth or not)', () => {
      fc.assert(
        fc.property(stored, stored, fc.nat(20), fc.boolean(), (first, change, how, growth) => {
          const backpack = new Backpack();
          if (growth) backpack.recordGrowth();
          backpack.pack('k', first);
          const prev = backpack.exportStoredState().items['k']!.value;
          backpack.pack('k', edit(prev, change, how));
          const next = backpack.exportStoredState().items['k']!.value;
          const delta = diffStored(prev, next);
          const before = encodeValue(prev);
          const after = encodeValue(next);
          if (delta === undefined) return deepEqual(before, after);
          return deepEqual(applyJsonDelta(before, delta), after);
        }),
        { numRuns: 400 },
      );
    });

    /**
     * A list a node made from a stored one (`prev`): grown, or with an element replaced by `change`, by an equal copy
     * of itself (not the same object), or by a number that only Object.is tells apart (-0 for 0, NaN for NaN).
     */
    const grown = (prev: readonly unknown[], change: unknown, how: number): unknown[] => {
      const at = prev.length === 0 ? 0 : how % prev.length;
      const next = [...prev];
      switch (how % 5) {
        case 0:
          return [...prev, change];
        case 1:
          next[at] = change;
          return [...next, change];
        case 2:
          next[at] = structuredClone(prev[at]);
          return [...next, change];
        case 3:
          next[at] = Object.is(prev[at], 0) ? -0 : Object.is(prev[at], -0) ? 0 : Number.NaN;
          return [...next, change];
        default:
          return [{ nested: [...prev], change }];
      }
    };

    it('records a list grown from the stored one only when each of its elements is the same value in place (property)', () => {
      fc.assert(
        fc.property(fc.array(stored, { maxLength: 6 }), stored, fc.nat(50), fc.boolean(), (first, change, how, nest) => {
          const backpack = new Backpack();
          backpack.recordGrowth();
          // Also one level down: { list } grown as { list: [...list, x] }.
          const wrap = (list: unknown) => (nest ? { list, other: how } : list);
          const unwrap = (value: unknown) => (nest ? (value as { list: unknown }).list : value);
          backpack.pack('k', wrap(first));
          const prev = unwrap(backpack.exportStoredState().items['k']!.value) as readonly unknown[];
          // Shared by every read (frozen all through), not copied for each: a Map, Set, Date or typed array inside is copied.
          const shared = unwrap(backpack.exportStoredState().items['k']!.value) === prev;
          backpack.pack('k', wrap(grown(prev, change, how)));
          const next = unwrap(backpack.exportStoredState().items['k']!.value);
          if (!Array.isArray(next)) return true;
          const nextShared = unwrap(backpack.exportStoredState().items['k']!.value) === next;
          const same = next.length >= prev.length && prev.every((item, i) => Object.is(item, next[i]));
          expect(extendsStored(next, prev)).toBe(same && shared && nextShared);
          if (same) expect(encodeValue(next.slice(0, prev.length))).toEqual(encodeValue(prev));
          return true;
        }),
        { numRuns: trials(500, 5000) },
      );
    });

    it('a pack over the stored value stores and sizes it exactly as a pack without it (property: the quick pass over kept elements changes nothing but its cost)', () => {
      fc.assert(
        fc.property(fc.array(stored, { maxLength: 6 }), stored, fc.nat(50), fc.boolean(), fc.boolean(), (first, change, how, nest, adopted) => {
          // The stored value: copied by a pack, or adopted in place (a config shared with the Backpack, frozen as it is).
          let prev: unknown;
          if (adopted) {
            const plain = JSON.parse(JSON.stringify(first.map((v) => encodeValue(v)))) as unknown[];
            adoptValue('k', plain);
            prev = plain;
          } else prev = prepareValue('k', first).value;
          const next = nest ? { list: grown(prev as readonly unknown[], change, how), n: how } : grown(prev as readonly unknown[], change, how);
          const before = nest ? { list: prev, n: how } : prev;
          const over = prepareValue('k', next, before);
          const alone = prepareValue('k', next);
          expect(over.bytes).toBe(alone.bytes);
          expect(over.copyOnRead).toBe(alone.copyOnRead);
          expect(encodeValue(over.value)).toEqual(encodeValue(alone.value));
          if (over.value !== null && typeof over.value === 'object') expect(isStoredJson(over.value)).toBe(isStoredJson(alone.value as object));
          expect(Object.isFrozen(over.value)).toBe(Object.isFrozen(alone.value));
          return true;
        }),
        { numRuns: trials(400, 4000) },
      );
    });

    it('records growth only for a Backpack asked to, from the stored value of the key, one pack back', () => {
      const list = (n: number) => Array.from({ length: n }, (_, i) => `item ${i}`);
      const off = new Backpack();
      off.pack('log', list(3));
      const offPrev = off.exportStoredState().items['log']!.value as unknown[];
      off.pack('log', [...offPrev, 'more']);
      expect(extendsStored(off.exportStoredState().items['log']!.value as unknown[], offPrev)).toBe(false);

      const on = new Backpack();
      on.recordGrowth();
      on.pack('log', list(3));
      const v1 = on.exportStoredState().items['log']!.value as unknown[];
      on.pack('log', [...v1, 'more']);
      const v2 = on.exportStoredState().items['log']!.value as unknown[];
      expect(extendsStored(v2, v1)).toBe(true);
      on.pack('log', [...v2, 'again']);
      const v3 = on.exportStoredState().items['log']!.value as unknown[];
      // Two packs since v1: told by comparing elements, not by the record (which names only the value packed over).
      expect(extendsStored(v3, v1)).toBe(false);
      expect(diffStored(v1, v3)).toEqual({ a: ['more', 'again'] });
      // Packed under another key: not the stored value of that key.
      on.pack('other', [...v3, 'x']);
      expect(extendsStored(on.exportStoredState().items['other']!.value as unknown[], v3)).toBe(false);
    });

    it('an append to a stored list encodes only the new items, and an unchanged key of an object is not looked into', () => {
      const backpack = new Backpack();
      backpack.pack('log', Array.from({ length: 1000 }, (_, i) => ({ n: i, at: new Date(i) })));
      const prev = backpack.exportStoredState().items['log']!.value as unknown[];
      backpack.pack('log', [...prev, { n: 1000, at: new Date(1000) }]);
      const next = backpack.exportStoredState().items['log']!.value;
      expect(diffStored(prev, next)).toEqual({ a: [{ n: 1000, at: { $bp: 'date', v: 1000 } }] });
      const big = { keep: prev, count: 1 };
      expect(diffStored(big, { keep: prev, count: 2 })).toEqual({ o: { count: { r: 2 } } });
    });
  });

  it('refuses a delta that does not fit the value it is applied to', () => {
    expect(() => applyJsonDelta('text', { a: [1] })).toThrow('JSON delta: an append applies to an array');
    expect(() => applyJsonDelta([1], { o: {} })).toThrow('JSON delta: an object patch applies to an object');
  });
});
