/**
 * Stored values carry no code and cannot be changed in place (audit findings 1 and 4): whatever a node packs (a
 * subclass of a built-in class with every method overridden, a proxy, a forged UnavailableValue), nothing of it runs
 * after `pack`, and whatever a reader does to what it got, through the built-in methods themselves
 * (`Map.prototype.set.call(read, …)`), the state and history stay as committed.
 */
import { types } from 'node:util';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Backpack, BackpackError, encodeValue, isUnavailable, UnavailableValue } from '../../src/backpack/index.js';
import { TYPED_ARRAYS } from '../../src/backpack/values.js';
import { trials } from '../support/soak.js';

const TYPED = Object.values(TYPED_ARRAYS);
type TypedCtor = (typeof TYPED)[number];
type Typed = InstanceType<TypedCtor>;
const TYPED_PROTO = Object.getPrototypeOf(Uint8Array.prototype) as Typed;

/** A value to build, once with the built-in classes and once as hostile as possible (see {@link build}). */
type Spec =
  | { t: 'num'; v: number }
  | { t: 'str'; v: string }
  | { t: 'date'; v: number }
  | { t: 'typed'; ctor: number; v: number[] }
  | { t: 'arr'; v: Spec[] }
  | { t: 'obj'; v: [string, Spec][] }
  | { t: 'map'; v: [Spec, Spec][] }
  | { t: 'set'; v: Spec[] };

const specArb: fc.Arbitrary<Spec> = fc.letrec<{ spec: Spec }>((tie) => ({
  spec: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record({ t: fc.constant('num' as const), v: fc.integer() }),
    fc.record({ t: fc.constant('str' as const), v: fc.string({ maxLength: 4 }) }),
    fc.record({ t: fc.constant('date' as const), v: fc.oneof(fc.integer(), fc.constant(Number.NaN)) }),
    fc.record({
      t: fc.constant('typed' as const),
      ctor: fc.nat(TYPED.length - 1),
      v: fc.array(fc.integer({ min: -300, max: 300 }), { maxLength: 4 }),
    }),
    fc.record({ t: fc.constant('arr' as const), v: fc.array(tie('spec'), { maxLength: 3 }) }),
    fc.record({
      t: fc.constant('obj' as const),
      v: fc.uniqueArray(fc.tuple(fc.constantFrom('a', 'b', 'c', '__proto__'), tie('spec')), { maxLength: 3, selector: ([k]) => k }),
    }),
    fc.record({ t: fc.constant('map' as const), v: fc.array(fc.tuple(tie('spec'), tie('spec')), { maxLength: 3 }) }),
    fc.record({ t: fc.constant('set' as const), v: fc.array(tie('spec'), { maxLength: 3 }) }),
  ),
})).spec;

/** Calls of any method of a hostile subclass, and of any proxy trap. */
const calls = { methods: 0, traps: 0 };
const ATTACKER = Object.freeze({ attacker: true });

/** A subclass of `base` whose every method and getter (own, and %TypedArray%'s for typed arrays) counts and returns ATTACKER. */
function hostile<C extends abstract new (...args: never[]) => object>(base: C): C {
  const sub = class extends (base as unknown as new (...args: unknown[]) => object) {};
  const protos = [base.prototype as object, ...(TYPED.includes(base as unknown as TypedCtor) ? [TYPED_PROTO] : [])];
  for (const proto of protos) {
    for (const name of Reflect.ownKeys(proto)) {
      if (name === 'constructor' || Object.hasOwn(sub.prototype, name)) continue;
      const d = Object.getOwnPropertyDescriptor(proto, name)!;
      const bad = (): unknown => {
        calls.methods++;
        return ATTACKER;
      };
      Object.defineProperty(sub.prototype, name, d.get ? { get: bad, configurable: true } : { value: bad, configurable: true });
    }
  }
  return sub as unknown as C;
}
const HOSTILE_MAP = hostile(Map);
const HOSTILE_SET = hostile(Set);
const HOSTILE_DATE = hostile(Date);
const HOSTILE_TYPED = TYPED.map((c) => hostile(c as unknown as abstract new () => Typed));

/** A proxy of `target` whose every trap counts, then does what the target would. */
function counted<T extends object>(target: T): T {
  const handler: ProxyHandler<T> = {};
  for (const trap of Object.getOwnPropertyNames(Reflect) as (keyof ProxyHandler<T>)[]) {
    (handler as Record<string, unknown>)[trap] = (...args: unknown[]) => {
      calls.traps++;
      return (Reflect[trap as keyof typeof Reflect] as (...a: unknown[]) => unknown)(...args);
    };
  }
  return new Proxy(target, handler);
}

function typedOf(ctor: TypedCtor, values: number[]): Typed {
  const big = ctor === BigInt64Array || ctor === BigUint64Array;
  return (ctor as unknown as { from(v: unknown[]): Typed }).from(big ? values.map((n) => BigInt(n)) : values);
}

/** Builds `spec` with the built-in classes, or (hostile) with subclasses overriding everything and counting proxies. */
function build(spec: Spec, evil: boolean): unknown {
  switch (spec.t) {
    case 'num':
    case 'str':
      return spec.v;
    case 'date':
      return evil ? new HOSTILE_DATE(spec.v) : new Date(spec.v);
    case 'typed': {
      const plain = typedOf(TYPED[spec.ctor]!, spec.v);
      if (!evil) return plain;
      const out = new (HOSTILE_TYPED[spec.ctor] as unknown as new (n: number) => Typed)(spec.v.length);
      (TYPED_PROTO.set as (this: Typed, s: Typed) => void).call(out, plain);
      return out;
    }
    case 'arr': {
      const arr = spec.v.map((s) => build(s, evil));
      return evil ? counted(arr) : arr;
    }
    case 'obj': {
      const obj: Record<string, unknown> = {};
      for (const [k, s] of spec.v) Object.defineProperty(obj, k, { value: build(s, evil), enumerable: true, writable: true, configurable: true });
      return evil ? counted(obj) : obj;
    }
    case 'map': {
      const m = evil ? new HOSTILE_MAP() : new Map();
      for (const [k, v] of spec.v) Map.prototype.set.call(m, build(k, evil), build(v, evil));
      return m;
    }
    case 'set': {
      const s = evil ? new HOSTILE_SET() : new Set();
      for (const v of spec.v) Set.prototype.add.call(s, build(v, evil));
      return s;
    }
  }
}

const DATE_SETTERS = Object.getOwnPropertyNames(Date.prototype).filter((n) => n.startsWith('set'));

/** Applies every mutating built-in method, through `.call`, to every object reachable from `value` (Map keys included). */
function attack(value: unknown, seen = new Set<object>()): void {
  if (typeof value !== 'object' || value === null || seen.has(value)) return;
  seen.add(value);
  if (types.isMap(value)) {
    const m = value as Map<unknown, unknown>;
    Map.prototype.forEach.call(m, (v: unknown, k: unknown) => {
      attack(k, seen);
      attack(v, seen);
    });
    const first = Map.prototype.keys.call(m).next().value;
    Map.prototype.set.call(m, first, 'changed');
    Map.prototype.set.call(m, 'added', 1);
    Map.prototype.delete.call(m, first);
    Map.prototype.clear.call(m);
  } else if (types.isSet(value)) {
    const s = value as Set<unknown>;
    Set.prototype.forEach.call(s, (v: unknown) => attack(v, seen));
    Set.prototype.delete.call(s, Set.prototype.values.call(s).next().value);
    Set.prototype.add.call(s, 'added');
    Set.prototype.clear.call(s);
  } else if (types.isDate(value)) {
    for (const name of DATE_SETTERS) (Date.prototype as unknown as Record<string, (this: Date, n: number) => void>)[name]!.call(value as Date, 7);
  } else if (types.isTypedArray(value)) {
    const t = value as Typed;
    const big = t instanceof BigInt64Array || t instanceof BigUint64Array;
    (TYPED_PROTO.fill as (this: Typed, v: unknown) => void).call(t, big ? 5n : 5);
    (TYPED_PROTO.reverse as (this: Typed) => void).call(t);
  } else {
    for (const k of Reflect.ownKeys(value)) {
      attack((value as Record<PropertyKey, unknown>)[k], seen);
      Reflect.set(value, k, 'changed');
      Reflect.deleteProperty(value, k);
    }
    Reflect.set(value, 'added', 1);
    Reflect.setPrototypeOf(value, { added: 1 });
  }
}

/** A Backpack where `value` was packed as `old` (then replaced) and as `k` (see {@link reads}). */
function packed(value: unknown): Backpack {
  const bp = new Backpack();
  bp.pack('old', value);
  bp.pack('old', 1);
  bp.pack('k', value);
  return bp;
}

/** Everything a reader can get of the value {@link packed} stored, in every form the Backpack reads it. */
function reads(bp: Backpack): unknown[] {
  const [first, replaced, last] = bp.getHistory();
  const quarantined = bp.getSnapshotAtCommit(last!.commitId);
  quarantined.quarantine('k', { reason: 'test' });
  const handle = bp.forNode({ nodeId: 'reader', nodeName: 'Reader', namespace: 'app.reader' });
  return [
    bp.unpack('k'),
    bp.getItem('k')!.value,
    bp.toObject().k,
    first!.newValue,
    replaced!.previousValue,
    bp.getSnapshotAtCommit(last!.commitId).unpack('k'),
    quarantined.getQuarantined().get('k')!.value,
    handle.unpack('k'),
    Backpack.fromJSON(bp.toJSON()).unpack('k'),
  ];
}

/** Each object reachable from `value`, Map keys and Set members included. */
function* objectsIn(value: unknown, seen = new Set<object>()): Generator<object> {
  if (typeof value !== 'object' || value === null || seen.has(value)) return;
  seen.add(value);
  yield value;
  let members: unknown[] = [];
  if (types.isMap(value)) members = [...Map.prototype.entries.call(value)].flat();
  else if (types.isSet(value)) members = [...Set.prototype.values.call(value)];
  else if (!types.isTypedArray(value) && !types.isDate(value)) {
    members = Reflect.ownKeys(value).map((k) => (value as Record<PropertyKey, unknown>)[k]);
  }
  for (const member of members) yield* objectsIn(member, seen);
}

const BUILT_IN = new Set<object>([Object.prototype, Array.prototype, Map.prototype, Set.prototype, Date.prototype, ...TYPED.map((c) => c.prototype)]);

describe('stored values carry no code of the packer', () => {
  afterEach(() => vi.useRealTimers());

  it('a value built of hostile subclasses and proxies is stored as the built-in data: no method of it runs, then or on any read', () => {
    fc.assert(
      fc.property(specArb, (spec) => {
        const hostileValue = build(spec, true);
        calls.methods = 0;
        calls.traps = 0;
        const bp = packed(hostileValue);
        expect(calls.methods).toBe(0);
        calls.traps = 0;
        const expected = encodeValue(build(spec, false));
        for (const read of reads(bp)) {
          expect(encodeValue(read)).toEqual(expected);
          for (const o of objectsIn(read)) {
            expect(types.isProxy(o)).toBe(false);
            // A read Map, Set or Date may be the Backpack's frozen subclass of the built-in one, nothing else.
            const proto = Object.getPrototypeOf(o) as object | null;
            if (proto !== null && !BUILT_IN.has(proto)) {
              expect(Object.isFrozen(proto)).toBe(true);
              expect(BUILT_IN.has(Object.getPrototypeOf(proto) as object)).toBe(true);
            }
          }
        }
        expect(calls).toEqual({ methods: 0, traps: 0 });
      }),
      { numRuns: trials(60, 750) },
    );
  });

  it('a Buffer is stored as a copy in a Uint8Array: changing the Buffer after pack changes nothing, and it round-trips through JSON', () => {
    const source = Buffer.from([1, 2, 3]);
    const bp = new Backpack();
    bp.pack('bytes', { data: source });
    source[0] = 9;
    const read = bp.unpack<{ data: Uint8Array }>('bytes')!.data;
    expect(Object.getPrototypeOf(read)).toBe(Uint8Array.prototype);
    expect([...read]).toEqual([1, 2, 3]);
    expect(Backpack.fromJSON(JSON.parse(JSON.stringify(bp.toJSON()))).unpack('bytes')).toEqual({ data: new Uint8Array([1, 2, 3]) });
  });

  it('a Date made under fake timers (a subclass of Date) is stored as a Date, and read as a built-in Date while they run', () => {
    vi.useFakeTimers({ now: 1000 });
    const bp = new Backpack();
    bp.pack('when', new Date());
    const read = bp.unpack<Date>('when')!;
    expect(Reflect.ownKeys(read)).toEqual([]);
    vi.useRealTimers();
    expect(read.getTime()).toBe(1000);
    expect(bp.unpack('when')).toBeInstanceOf(Date);
  });

  it('refuses proxies of Maps, Sets, Dates and typed arrays, and objects that only borrowed a built-in prototype, naming key and path', () => {
    const bp = new Backpack();
    for (const inner of [new Map(), new Set(), new Date(0), new Uint8Array(1)]) {
      expect(() => bp.pack('p', { at: [new Proxy(inner, {})] })).toThrow(/key 'p': the value at 'at\[0\]' is a proxy/);
    }
    for (const proto of [Map.prototype, Set.prototype, Date.prototype, Uint8Array.prototype]) {
      expect(() => bp.pack('fake', { x: Object.create(proto) as object })).toThrow(/key 'fake': the value at 'x' is a (Map|Set|Date|Uint8Array);/);
    }
    expect(() => bp.pack('view', new DataView(new ArrayBuffer(1)))).toThrow(/is a DataView/);
    expect(bp.size).toBe(0);
  });
});

describe('UnavailableValue markers', () => {
  const genuine = new UnavailableValue('big', 200_000, '"xxx…"', 'too large');

  it('only markers its constructor made are packed, kept as they are', () => {
    const bp = new Backpack();
    bp.pack('m', { marker: genuine });
    expect(bp.unpack<{ marker: UnavailableValue }>('m')!.marker).toBe(genuine);
    expect(isUnavailable(genuine)).toBe(true);
  });

  it('a forged marker (Object.create, a proxy, a subclass) is refused, and is not a marker', () => {
    let getterRuns = 0;
    const forged = Object.create(UnavailableValue.prototype, {
      key: {
        enumerable: true,
        get() {
          getterRuns++;
          return 'k';
        },
      },
    }) as object;
    class Sub extends UnavailableValue {}
    const bp = new Backpack();
    for (const fake of [forged, new Proxy(genuine, {}), new Sub('k', 1, 's', 'r')]) {
      expect(isUnavailable(fake)).toBe(false);
      expect(() => bp.pack('s', { summary: fake })).toThrow(BackpackError);
    }
    expect(() => bp.pack('s', forged)).toThrow(/key 's': the value is an UnavailableValue its constructor did not make/);
    expect(getterRuns).toBe(0);
    expect(bp.size).toBe(0);
  });

  it('holds only strings and a number: other field types are refused', () => {
    expect(() => new UnavailableValue({ toString: () => 'k' } as unknown as string, 1, 's', 'r')).toThrow(/key must be a string, got object/);
    expect(() => new UnavailableValue('k', '1' as unknown as number, 's', 'r')).toThrow(/bytes must be a number/);
    expect(Object.isFrozen(UnavailableValue.prototype)).toBe(true);
  });
});

describe('committed Maps, Sets, Dates and typed arrays cannot be changed in place', () => {
  it('after every mutating built-in method is applied through .call to everything read, the state and history are as committed', () => {
    fc.assert(
      fc.property(specArb, (spec) => {
        const original = build(spec, false);
        const expected = encodeValue(original);
        const bp = packed(original);
        for (const read of reads(bp)) attack(read);
        for (const read of reads(bp)) expect(encodeValue(read)).toEqual(expected);
        expect(encodeValue(bp.getHistory()[0]!.newValue)).toEqual(expected);
      }),
      { numRuns: trials(60, 750) },
    );
  });

  it('a value above maxValueBytes (kept in state, referenced in history) is copied on read too', () => {
    const bp = new Backpack(undefined, { maxValueBytes: 30 });
    bp.pack('config', new Map([['role', 'reader'], ['padding', 'x'.repeat(40)]]));
    Map.prototype.set.call(bp.unpack('config'), 'role', 'admin');
    expect((bp.unpack('config') as Map<string, string>).get('role')).toBe('reader');
  });

  it('a Backpack restored from JSON copies on read whatever copy flags the file claims (an older file, or one edited)', () => {
    const bp = new Backpack();
    bp.pack('config', new Map([['role', 'reader']]));
    bp.pack('config', new Map([['role', 'writer']]));
    const json = JSON.parse(JSON.stringify(bp.toJSON())) as unknown;
    // Every flag of every commit cleared, wherever the format keeps them.
    const clear = (v: unknown): void => {
      if (Array.isArray(v)) v.forEach(clear);
      else if (v !== null && typeof v === 'object') {
        for (const [k, x] of Object.entries(v)) {
          if (k === 'flags' && typeof x === 'number') (v as Record<string, unknown>)[k] = 0;
          else clear(x);
        }
      }
    };
    clear(json);
    const restored = Backpack.fromJSON(json);
    Map.prototype.set.call(restored.unpack('config'), 'role', 'admin');
    const roles = () =>
      restored
        .getHistory()
        .map((c) => [c.newValue, c.previousValue].map((v) => (v instanceof Map ? (v as Map<string, string>).get('role') : undefined)))
        .filter((pair) => pair.some((role) => role !== undefined));
    const before = roles();
    expect(before).toContainEqual(['writer', 'reader']);
    for (const commit of restored.getHistory()) {
      for (const value of [commit.newValue, commit.previousValue]) if (value instanceof Map) Map.prototype.set.call(value, 'role', 'admin');
    }
    expect((restored.unpack('config') as Map<string, string>).get('role')).toBe('writer');
    expect(roles()).toEqual(before);
  });

  it('the prototypes read Maps, Sets and Dates share are frozen, so a reader cannot change what others run', () => {
    const bp = new Backpack();
    bp.pack('v', { m: new Map([['a', 1]]), s: new Set([1]), d: new Date(5) });
    const read = bp.unpack<{ m: Map<string, number>; s: Set<number>; d: Date }>('v')!;
    for (const o of [read.m, read.s, read.d]) {
      const proto = Object.getPrototypeOf(o) as object;
      expect(Object.isFrozen(proto)).toBe(true);
      expect(Reflect.set(proto, 'get', () => 'hijacked')).toBe(false);
    }
    expect(() => read.m.set('b', 2)).toThrow(/frozen/);
    expect(bp.unpack<{ m: Map<string, number> }>('v')!.m.get('a')).toBe(1);
  });
});
