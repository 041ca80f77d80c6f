/**
 * Deltas give the next value exactly, as text: -0 is not 0, and the order of object keys, Map entries and Set
 * members counts (a reader iterates them), as does where a key of the Backpack is (a key deleted and packed again is
 * last). The comparisons here are of JSON text, which keeps all three.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Backpack, deepEqual, encodeValue, type JsonValue } from '../../src/backpack/index.js';
import { deepEqualInOrder } from '../../src/backpack/values.js';
import { applyJsonDelta, diffJson, diffStored } from '../../src/runtime/json-delta.js';
import { StateTracker, applyStateDelta } from '../../src/runtime/state-tracker.js';

/** What the Backpack stores for `value` (frozen, as the tracker sees it). */
function stored(value: unknown): unknown {
  const backpack = new Backpack();
  backpack.pack('k', value);
  return backpack.exportStoredState().items['k']!.value;
}

/** Whether the delta from `prev` to `next`, applied to `prev` encoded, gives `next` encoded, as text. */
function replaysExactly(prev: unknown, next: unknown): boolean {
  const delta = diffStored(prev, next);
  const before = encodeValue(prev);
  const got = delta === undefined ? before : applyJsonDelta(before, delta);
  return JSON.stringify(got) === JSON.stringify(encodeValue(next));
}

describe('diffStored: -0 and order', () => {
  it('sees -0 become 0 (and back) at the top, in an object, in an array and in a Map', () => {
    expect(diffStored(-0, 0)).toEqual({ r: 0 });
    expect(diffStored(0, -0)).toEqual({ r: { $bp: 'number', v: '-0' } });
    for (const [a, b] of [
      [{ e: -0, big: 'x'.repeat(50) }, { e: 0, big: 'x'.repeat(50) }],
      [[1, -0], [1, 0]],
      [new Map([['m', -0]]), new Map([['m', 0]])],
    ]) {
      expect(replaysExactly(stored(a), stored(b))).toBe(true);
      expect(replaysExactly(stored(b), stored(a))).toBe(true);
    }
  });

  it('replaces a Map, a Set or an object whose order changed (same contents)', () => {
    const cases: [unknown, unknown][] = [
      [new Map([['x', 1], ['y', 2]]), new Map([['y', 2], ['x', 1]])],
      [new Set(['a', 'b', 'c']), new Set(['c', 'b', 'a'])],
      [new Set([{ a: 1 }, { b: 2 }]), new Set([{ b: 2 }, { a: 1 }])],
      [{ x: 1, y: 2 }, { y: 2, x: 1 }],
      [{ outer: { x: 1, y: 2 }, keep: 'k' }, { outer: { y: 2, x: 1 }, keep: 'k' }],
      [[{ x: 1, y: 2 }], [{ y: 2, x: 1 }]],
    ];
    for (const [a, b] of cases) {
      const prev = stored(a);
      const next = stored(b);
      expect(diffStored(prev, next)).toBeDefined();
      expect(replaysExactly(prev, next)).toBe(true);
    }
  });

  it('patches an object whose kept keys stayed in order, and replaces one whose key was deleted and set again', () => {
    const prev = stored({ a: 1, b: 2, c: 3 }) as Record<string, unknown>;
    // b deleted, d added: a and c keep their order, d goes last: a patch.
    expect(diffStored(prev, stored({ a: 1, c: 3, d: 4 }))).toEqual({ o: { d: { r: 4 } }, d: ['b'] });
    // a deleted and set again: last now, which a patch cannot say.
    const moved = stored({ b: 2, c: 3, a: 1 });
    expect(diffStored(prev, moved)).toEqual({ r: { b: 2, c: 3, a: 1 } });
  });

  it('applied to the encoded previous value, gives the encoded next value as text, reordered or not (property)', () => {
    const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.constantFrom<unknown>(-0, 0, NaN, 1, 'a', undefined, null, 2n),
        fc.array(tie('value'), { maxLength: 4 }),
        fc.uniqueArray(fc.tuple(fc.constantFrom('a', 'b', 'c', '__proto__', '$bp'), tie('value')), { maxLength: 4, selector: (e) => e[0] }).map((entries) => {
          const out = {};
          for (const [k, v] of entries) Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
          return out;
        }),
        fc.array(fc.tuple(fc.constantFrom('x', 'y', 1), tie('value')), { maxLength: 3 }).map((e) => new Map(e)),
        fc.array(fc.constantFrom('x', 'y', 1, -0), { maxLength: 3 }).map((m) => new Set(m)),
      ),
    })).value;
    /** The same contents, each level in the reverse order, and -0 and 0 swapped. */
    const reversed = (v: unknown): unknown => {
      if (Object.is(v, 0)) return -0;
      if (Object.is(v, -0)) return 0;
      if (v instanceof Map) return new Map([...v].reverse().map(([k, x]) => [k, reversed(x)]));
      if (v instanceof Set) return new Set([...v].reverse());
      if (Array.isArray(v)) return v.map(reversed);
      if (v === null || typeof v !== 'object') return v;
      const out = {};
      for (const k of Object.keys(v).reverse()) Object.defineProperty(out, k, { value: reversed((v as Record<string, unknown>)[k]), enumerable: true, writable: true, configurable: true });
      return out;
    };
    fc.assert(
      fc.property(value, fc.boolean(), value, (a, reorder, other) => {
        const prev = stored(a);
        const next = stored(reorder ? reversed(prev) : other);
        return replaysExactly(prev, next);
      }),
      { numRuns: 400 },
    );
  });
});

describe('diffJson: key order', () => {
  it('applied, gives the next value as text (property)', () => {
    const json = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<JsonValue>;
    const shuffled = (v: JsonValue): JsonValue => {
      if (Array.isArray(v)) return v.map(shuffled);
      if (v === null || typeof v !== 'object') return v;
      const out: Record<string, JsonValue> = {};
      for (const k of Object.keys(v).reverse()) Object.defineProperty(out, k, { value: shuffled(v[k]!), enumerable: true, writable: true, configurable: true });
      return out;
    };
    fc.assert(
      fc.property(json, fc.boolean(), json, (a, reorder, other) => {
        const b = reorder ? shuffled(a) : other;
        const delta = diffJson(a, b);
        return JSON.stringify(delta === undefined ? a : applyJsonDelta(a, delta)) === JSON.stringify(b);
      }),
      { numRuns: 300 },
    );
  });
});

describe('deepEqualInOrder beside deepEqual', () => {
  it('tells order apart where deepEqual does not (deepEqual keeps its meaning)', () => {
    const pairs: [unknown, unknown][] = [
      [new Map([['x', 1], ['y', 2]]), new Map([['y', 2], ['x', 1]])],
      [new Set([1, 2]), new Set([2, 1])],
      [{ a: 1, b: 2 }, { b: 2, a: 1 }],
    ];
    for (const [a, b] of pairs) {
      expect(deepEqual(a, b)).toBe(true);
      expect(deepEqualInOrder(a, b)).toBe(false);
      expect(deepEqualInOrder(a, a)).toBe(true);
    }
    expect(deepEqualInOrder(-0, 0)).toBe(false);
    expect(deepEqualInOrder(NaN, NaN)).toBe(true);
  });
});

describe('StateTracker: where keys are', () => {
  /** Replays the tracker's delta on the state it started from; returns both states' JSON text. */
  function track(setup: (b: Backpack) => void, step: (b: Backpack) => void): { live: string; replayed: string } {
    const backpack = new Backpack();
    setup(backpack);
    const tracker = new StateTracker(backpack);
    const state = backpack.exportState();
    step(backpack);
    const delta = tracker.next();
    if (delta) applyStateDelta(state, delta);
    return { live: JSON.stringify(backpack.exportState()), replayed: JSON.stringify(state) };
  }

  it('a key deleted (or quarantined, or cleared) and packed again in one step is last, as in the Backpack', () => {
    const setup = (b: Backpack): void => ['a', 'b', 'c'].forEach((k, i) => b.pack(k, i));
    for (const leave of [(b: Backpack) => b.delete('a'), (b: Backpack) => b.quarantine('a', { reason: 'r' }), (b: Backpack) => b.clear()]) {
      const { live, replayed } = track(setup, (b) => {
        leave(b);
        b.pack('a', 0);
      });
      expect(replayed).toBe(live);
    }
  });

  it('new keys go last in the order the Backpack has them, also one deleted and packed again', () => {
    const { live, replayed } = track(
      (b) => b.pack('old', 1),
      (b) => {
        b.pack('x', 1);
        b.pack('y', 2);
        b.delete('x');
        b.pack('x', 3);
        b.delete('old');
        b.pack('old', 1);
      },
    );
    expect(Object.keys(JSON.parse(live).items)).toEqual(['y', 'x', 'old']);
    expect(replayed).toBe(live);
  });

  it('a key changed in place keeps its place and its delta (an append stays an append)', () => {
    const backpack = new Backpack();
    backpack.pack('log', ['one']);
    backpack.pack('count', 1);
    const tracker = new StateTracker(backpack);
    backpack.pack('log', [...(backpack.peek('log') as string[]), 'two']);
    backpack.pack('count', 2);
    expect(tracker.next()).toEqual({
      set: {
        log: expect.objectContaining({ value: { a: ['two'] } }),
        count: expect.objectContaining({ value: { r: 2 } }),
      },
    });
  });
});
