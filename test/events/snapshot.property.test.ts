/**
 * `snapshot` (events/snapshot.ts): the copy node code gets of an event shares no object anyone else reads, keeps
 * every value, and is frozen where freezing holds (plain objects and arrays).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { snapshot } from '../../src/events/index.js';

/** Every object reachable from `value`, with the path it was reached by (first path only). */
function objectsOf(value: unknown, out = new Map<object, string>(), path = '$'): Map<object, string> {
  if (value === null || typeof value !== 'object' || out.has(value)) return out;
  out.set(value, path);
  if (value instanceof Map) {
    for (const [k, v] of value) {
      objectsOf(k, out, `${path}<key>`);
      objectsOf(v, out, `${path}.get(${String(k)})`);
    }
  }
  else if (value instanceof Set) for (const v of value) objectsOf(v, out, `${path}<member>`);
  else if (!ArrayBuffer.isView(value) && !(value instanceof Date)) for (const key of Object.keys(value)) objectsOf((value as Record<string, unknown>)[key], out, `${path}.${key}`);
  return out;
}

const leaf = fc.oneof(fc.string(), fc.double(), fc.boolean(), fc.constant(null), fc.constant(undefined), fc.bigInt(), fc.date({ noInvalidDate: true }));
const { tree } = fc.letrec((tie) => ({
  tree: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, tie('array'), tie('object'), tie('map'), tie('set'), tie('bytes')),
  array: fc.array(tie('tree'), { maxLength: 4 }),
  object: fc.dictionary(fc.oneof(fc.string(), fc.constant('__proto__')), tie('tree'), { maxKeys: 4 }),
  map: fc.array(fc.tuple(fc.string(), tie('tree')), { maxLength: 3 }).map((entries) => new Map(entries)),
  set: fc.array(tie('tree'), { maxLength: 3 }).map((items) => new Set(items)),
  bytes: fc.uint8Array({ maxLength: 8 }),
}));

describe('snapshot', () => {
  it('for any value: an equal copy that shares no object with it, frozen in its plain objects and arrays', () => {
    fc.assert(
      fc.property(tree, (value) => {
        const copy = snapshot(value);
        expect(copy).toStrictEqual(value);
        const originals = objectsOf(value);
        for (const [object, path] of objectsOf(copy)) {
          expect(originals.has(object), `${path} is the original's own object`).toBe(false);
          const proto = Object.getPrototypeOf(object) as unknown;
          if (Array.isArray(object) || proto === Object.prototype || proto === null) expect(Object.isFrozen(object), `${path} is not frozen`).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('keeps a `__proto__` key an own key, cycles as cycles, and takes a class instance as its JSON form, now', () => {
    const withProto = JSON.parse('{"__proto__":{"polluted":true},"a":1}') as Record<string, unknown>;
    const copy = snapshot(withProto);
    expect(Object.keys(copy)).toEqual(['__proto__', 'a']);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();

    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic.self = cyclic;
    const again = snapshot(cyclic);
    expect(again).not.toBe(cyclic);
    expect(again.self).toBe(again);

    class Tool {
      calls = 0;
      toJSON(): unknown {
        return { calls: this.calls, kind: 'tool' };
      }
    }
    const tool = new Tool();
    const copied = snapshot({ tool, again: tool });
    tool.calls = 5;
    expect(copied).toEqual({ tool: { calls: 0, kind: 'tool' }, again: { calls: 0, kind: 'tool' } });
    expect(copied.again).toBe(copied.tool);
    expect(Object.isFrozen(copied.tool)).toBe(true);
    // A Proxy claiming a class's prototype: its traps run once, now; what they answer later changes nothing.
    let answer = 'first';
    const proxy = new Proxy({}, { getPrototypeOf: () => Tool.prototype, ownKeys: () => ['said'], getOwnPropertyDescriptor: () => ({ value: answer, enumerable: true, configurable: true }), get: (_t, key) => (key === 'said' ? answer : undefined) });
    const fromProxy = snapshot({ proxy });
    answer = 'later';
    expect(fromProxy).toEqual({ proxy: { said: 'first' } });
    // No JSON form (a BigInt inside): its own data properties, copied as data; never the object itself, whose code
    // (a getter, a method) would run wherever the event is read later (review s23a H4). Functions are left out.
    let ran = 0;
    const odd = new (class Odd {
      n = 1n;
      get later(): string {
        ran++;
        return 'ran';
      }
    })();
    const kept = snapshot({ odd, fn: () => 'code' }) as { odd: unknown; fn?: unknown };
    expect(kept.odd).not.toBe(odd);
    expect(kept.odd).toStrictEqual({ n: 1n });
    expect(Object.getPrototypeOf(kept.odd)).toBe(Object.prototype);
    expect(kept.fn).toBeUndefined();
    JSON.stringify(kept, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
    expect(ran).toBe(0);
  });

  it('copies a payload nested deeper than the stack (no recursion)', () => {
    // 50,000 levels: a recursive copy overflows Node's default stack at about 2,500 (Array.map between its calls),
    // and the simplest recursive function at about 11,000.
    let deep: unknown = [];
    for (let i = 0; i < 50_000; i++) deep = [deep];
    const copy = snapshot({ deep }) as { deep: unknown[] };
    let depth = 0;
    for (let at: unknown = copy.deep; Array.isArray(at) && at.length > 0; at = at[0]) depth++;
    expect(depth).toBe(50_000);
  });
});
