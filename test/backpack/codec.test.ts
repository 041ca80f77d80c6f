import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Backpack, BackpackError, decodeValue, encodeValue, summarizeValue, UnavailableValue } from '../../src/backpack/index.js';
import { adoptValue, prepareValue } from '../../src/backpack/values.js';

const roundTrip = (v: unknown): unknown => decodeValue(JSON.parse(JSON.stringify(encodeValue(v))));

describe('value codec', () => {
  it('round-trips JSON types unchanged and as themselves', () => {
    const v = { s: 'x', n: 1.5, b: true, z: null, a: [1, 'two', [3]], o: { deep: { er: 1 } } };
    expect(encodeValue(v)).toEqual(v);
    expect(roundTrip(v)).toEqual(v);
  });

  it('round-trips undefined, Date, Map, Set, BigInt, typed arrays and special numbers, nested anywhere', () => {
    const v = {
      u: undefined,
      arr: [undefined, 1],
      when: new Date(1_700_000_000_123),
      bad: new Date(Number.NaN),
      big: 12345678901234567890n,
      map: new Map<unknown, unknown>([
        ['k', new Set([1, 2])],
        [3, { inner: new Map([[1n, new Date(0)]]) }],
      ]),
      f64: new Float64Array([1.5, -2]),
      i16: new Int16Array([-1, 7]),
      u8: new Uint8Array([0, 255]),
      b64: new BigInt64Array([-5n]),
      nums: [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0],
    };
    const back = roundTrip(v) as typeof v;
    expect(back).toStrictEqual(v);
    expect(Object.is(back.nums[3], -0)).toBe(true);
    expect('u' in back).toBe(true);
    expect(back.f64).toBeInstanceOf(Float64Array);
  });

  it('keeps a plain object with a $bp key apart from tags', () => {
    const v = { $bp: 'date', v: 5 };
    expect(roundTrip(v)).toEqual(v);
    expect(roundTrip([{ $bp: 'undefined' }])).toEqual([{ $bp: 'undefined' }]);
  });

  it('round-trips the UnavailableValue marker', () => {
    const marker = new UnavailableValue('big', 200_000, '"xxx…"', 'too large');
    expect(roundTrip({ m: marker })).toEqual({ m: marker });
    expect((roundTrip(marker) as UnavailableValue).reason).toBe('too large');
  });

  it('refuses to encode functions and class instances, naming the path', () => {
    expect(() => encodeValue({ a: [() => 1] })).toThrow(/function at 'a\[0\]'/);
    expect(() => encodeValue({ e: new (class Foo {})() })).toThrow(/Foo at 'e'/);
  });

  it('reports malformed input with its path', () => {
    expect(() => decodeValue({ a: { $bp: 'nope' } })).toThrow(BackpackError);
    expect(() => decodeValue({ a: { $bp: 'nope' } })).toThrow(/'a': unknown tag "nope"/);
    expect(() => decodeValue([{ $bp: 'bigint', v: '1.5' }])).toThrow(/'\[0\]'/);
    expect(() => decodeValue({ t: { $bp: 'typed', t: 'Float64Array', v: 'AAE=' } })).toThrow(/multiple of its element size/);
    expect(() => decodeValue({ t: { $bp: 'typed', t: 'toString', v: '' } })).toThrow(/unknown typed array/);
  });

  it('summarizes values in at most maxLen characters without walking all of a large value', () => {
    expect(summarizeValue('hi')).toBe('"hi"');
    expect(summarizeValue({ a: 1, b: [true, null], m: new Map([['k', 1n]]) })).toBe('{a: 1, b: [true, null], m: Map(1) {"k" => 1n}}');
    const big = Array.from({ length: 100_000 }, (_, i) => ({ i }));
    const s = summarizeValue(big, 40);
    expect(s.length).toBe(40);
    expect(s.endsWith('…')).toBe(true);
    expect(summarizeValue('x'.repeat(1000)).length).toBe(80);
    expect(summarizeValue(undefined)).toBe('undefined');
    expect(summarizeValue(new Uint8Array(4))).toBe('Uint8Array(4)');
  });
});

describe('codec errors', () => {
  it('name where the non-data value is: keys, indexes and map or set positions', () => {
    const fn = () => 1;
    expect(() => encodeValue({ a: { list: [1, 2, fn] } })).toThrow("Cannot encode the function at 'a.list[2]'");
    expect(() => encodeValue([{ m: new Map([['k', fn]]) }])).toThrow("Cannot encode the function at '[0].m<value 0>'");
    expect(() => encodeValue(new Set([Symbol('s')]))).toThrow("Cannot encode the symbol at '<member 0>'");
    expect(() => encodeValue(fn)).toThrow("Cannot encode the function at '(root)'");
  });

  describe('stored values that are plain JSON are their own encoding', () => {
    const anything = fc.anything({ withDate: true, withMap: true, withSet: true, withBigInt: true, withNullPrototype: true, withSparseArray: false, withTypedArray: true, withBoxedValues: false });
    it('the encoding of a stored (packed) value is the encoding of the value it was packed from', () => {
      fc.assert(
        fc.property(fc.oneof(anything, fc.jsonValue(), fc.dictionary(fc.constantFrom('$bp', 'v', 'a'), fc.jsonValue())), (value) => {
          const stored = prepareValue('k', value).value;
          expect(encodeValue(stored)).toEqual(encodeValue(value));
        }),
      );
    });

    it('a stored plain-JSON value is handed out as is; one holding anything else is encoded into a new value', () => {
      const plain = prepareValue('k', { a: [1, 'x', null, { b: true }] }).value;
      expect(encodeValue(plain)).toBe(plain);
      for (const odd of [{ a: [undefined] }, { a: -0 }, { a: Number.NaN }, { a: [new Date(0)] }, { a: { $bp: 'date' } }, { a: 1n }, { a: new Map() }]) {
        const stored = prepareValue('k', odd).value;
        expect(encodeValue(stored)).not.toBe(stored);
        expect(encodeValue(stored)).toEqual(encodeValue(odd));
      }
    });

    it('an adopted value (frozen in place) is packed without a copy and encodes as itself', () => {
      const value = JSON.parse('{"rows":[{"id":1,"tags":["a"]},{"id":2,"__proto__":{"x":1}}]}') as { rows: { id: number }[] };
      adoptValue('k', value);
      expect(Object.isFrozen(value.rows[1])).toBe(true);
      const backpack = new Backpack();
      backpack.pack('k', value);
      expect(backpack.unpack('k')).toBe(value);
      expect(encodeValue(value)).toBe(value);
      expect(JSON.stringify(encodeValue(value))).toBe(JSON.stringify(value));
    });

    it('adoption refuses anything that is not plain data, naming the path, and a refused value is copied when packed', () => {
      const cases: [unknown, RegExp][] = [
        [{ a: [1, { get g() {
          return 1;
        } }] }, /'a\[1\]\.g'.*getter/],
        [{ a: new Proxy({}, {}) }, /'a' is a proxy/],
        [{ a: [new Date(0)] }, /'a\[0\]' is not plain JSON/],
        [{ a: Object.assign(new Array<number>(3), { 0: 1, 2: 3 }) }, /'a\[1\]' has a hole/],
        [{ a: Object.defineProperty({}, 'hidden', { value: 1, enumerable: false }) }, /'a' has non-enumerable/],
        [{ f: () => 1 }, /'f' is a function/],
      ];
      for (const [value, message] of cases) {
        expect(() => adoptValue('k', value)).toThrow(message);
        if (message.source.includes('function')) continue; // not packable at all
        const backpack = new Backpack();
        backpack.pack('k', value);
        expect(backpack.unpack('k')).not.toBe(value);
      }
      // A refused value is not recorded as stored: the root stays unfrozen.
      const refused = { ok: { n: 1 }, bad: new Date(0) };
      expect(() => adoptValue('k', refused)).toThrow(BackpackError);
      expect(Object.isFrozen(refused)).toBe(false);
    });
  });
});
