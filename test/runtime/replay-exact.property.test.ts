/**
 * Property: the state served for a recorded step is the live state of that step, exactly. A durable run performs
 * random steps over random values of every supported type (JSON, undefined, Date, Map, Set, BigInt, typed arrays,
 * -0, NaN, nested, objects with an own `__proto__` key) with random key orders, Map and Set orders, deletes, re-packs
 * in the same step, quarantines and clears; at each step boundary the live `flow.backpack` state is recorded in its
 * encoded form (which keeps order, -0 and own `__proto__` keys); `loadRunPoint` at every step, with keyframes every
 * 1 to 5 steps or never, must give that same text.
 *
 * `REPLAY_RUNS` sets the number of cases (default 30).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { BackpackHandle } from '../../src/index.js';
import { expectReplayEqualsLive } from '../support/replay.js';

const RUNS = Number(process.env['REPLAY_RUNS'] ?? 30);
let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'bpf-replay-exact-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** An object with these own keys in this order (`__proto__` as a key, not a prototype). */
function objectOf(entries: readonly (readonly [string, unknown])[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of entries) Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  return out;
}

const objectKey = fc.constantFrom('a', 'b', 'c', 'zz', '__proto__', '$bp', '1', 'k');
/** Every kind of value the Backpack stores. Strings are short and plain, so that no value looks like a secret. */
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.oneof(
      fc.string({ maxLength: 4, unit: fc.constantFrom('a', 'b', 'é', ' ') }),
      fc.integer({ min: -3, max: 3 }),
      fc.constantFrom(undefined, null, true, false, -0, 0, NaN, Infinity, -Infinity, 1.5),
      fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }),
      fc.integer({ min: 0, max: 2e12 }).map((t) => new Date(t)),
    ),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.array(fc.tuple(objectKey, tie('value')), { maxLength: 4 }).map(objectOf),
    fc.array(fc.tuple(fc.oneof(fc.constantFrom('x', 'y', 'z'), fc.integer({ min: -1, max: 2 }), fc.constantFrom(-0)), tie('value')), { maxLength: 4 }).map((e) => new Map(e)),
    fc.array(fc.oneof(fc.constantFrom('x', 'y', 'z', -0, 0, 1, 2n)), { maxLength: 4 }).map((m) => new Set(m)),
    fc.array(fc.constantFrom(0, -0, 1.5, NaN), { maxLength: 4 }).map((xs) => Float64Array.from(xs)),
    fc.uint8Array({ maxLength: 4 }),
    fc.array(fc.bigInt({ min: -5n, max: 5n }), { maxLength: 3 }).map((xs) => BigInt64Array.from(xs)),
  ),
})).value;

/** `value` with the same contents in the reverse order (keys, entries, members), and -0 and 0 swapped. */
function reordered(v: unknown): unknown {
  if (Object.is(v, 0)) return -0;
  if (Object.is(v, -0)) return 0;
  if (v instanceof Map) return new Map([...v].reverse());
  if (v instanceof Set) return new Set([...v].reverse());
  if (Array.isArray(v)) return v.map(reordered);
  if (v !== null && typeof v === 'object' && !(v instanceof Date) && !ArrayBuffer.isView(v)) {
    return objectOf(Object.keys(v).reverse().map((k) => [k, (v as Record<string, unknown>)[k]] as const));
  }
  return v;
}

/** A next value built from the current one the way a node builds it, sharing what did not change. */
function edited(current: unknown, change: unknown, how: number): unknown {
  if (Array.isArray(current)) return how % 2 === 0 ? [...current, change] : current.slice(1);
  if (current !== null && typeof current === 'object' && Object.getPrototypeOf(current) === Object.prototype) {
    const entries = Object.keys(current).map((k) => [k, (current as Record<string, unknown>)[k]] as [string, unknown]);
    if (how % 3 === 0) return objectOf([...entries, ['k', change]]);
    if (how % 3 === 1) return objectOf(entries.slice(1));
    // The first key deleted and set again: it goes last.
    return objectOf([...entries.slice(1), ...entries.slice(0, 1)]);
  }
  return change;
}

const key = fc.constantFrom('a', 'b', 'c', 'x.y', '__proto__', '7');
type Op =
  | { op: 'pack'; key: string; value: unknown }
  | { op: 'edit'; key: string; value: unknown; how: number }
  | { op: 'reorder' | 'delete' | 'repack' | 'quarantine'; key: string }
  | { op: 'clear' };
const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant('pack' as const), key, value }), weight: 4 },
  { arbitrary: fc.record({ op: fc.constant('edit' as const), key, value, how: fc.nat(5) }), weight: 3 },
  { arbitrary: fc.record({ op: fc.constantFrom('reorder' as const, 'delete' as const, 'repack' as const, 'quarantine' as const), key }), weight: 4 },
  { arbitrary: fc.constant({ op: 'clear' as const }), weight: 1 },
);

function perform(backpack: BackpackHandle, clear: () => void, o: Op): void {
  const current = o.op === 'clear' ? undefined : backpack.peek(o.key);
  const has = o.op !== 'clear' && backpack.has(o.key);
  switch (o.op) {
    case 'pack':
      return backpack.pack(o.key, o.value);
    case 'edit':
      return backpack.pack(o.key, edited(current, o.value, o.how));
    case 'reorder':
      if (has) backpack.pack(o.key, reordered(current));
      return;
    case 'repack':
      // Deleted and packed again in the same step: last in the Backpack's order.
      if (has) {
        backpack.delete(o.key);
        backpack.pack(o.key, current);
      }
      return;
    case 'delete':
      backpack.delete(o.key);
      return;
    case 'quarantine':
      backpack.quarantine(o.key, { reason: 'test' });
      return;
    case 'clear':
      return clear();
  }
}

describe('a recorded step reads back as the live state of that step (property)', () => {
  it('loadRunPoint(step) gives, exactly, the state flow.backpack had at that step boundary', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(op, { maxLength: 4 }), { minLength: 1, maxLength: 8 }),
        fc.oneof(fc.integer({ min: 1, max: 5 }), fc.constant(1000)),
        async (steps, keyframeInterval) => {
          await expectReplayEqualsLive({ dataDir: root, runId: `r${++run}`, steps, keyframeInterval, perform: (backpack, flow, o) => perform(backpack, () => flow.backpack.clear(), o) });
        },
      ),
      { numRuns: RUNS },
    );
  }, 120_000);
});
