import { describe, expect, it } from 'vitest';
import { BackpackError, decodeValue, encodeValue, summarizeValue, UnavailableValue } from '../../src/backpack/index.js';

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
});
