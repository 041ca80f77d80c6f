import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isLargeJson, writeJsonPieces } from '../../src/fs/json-pieces.js';

const pieces = (value: unknown): string[] => {
  const out: string[] = [];
  writeJsonPieces(value, (piece) => out.push(piece));
  return out;
};

describe('writeJsonPieces', () => {
  it('hands out exactly JSON.stringify(value), for any value JSON can hold (large ones walked, small ones native)', () => {
    const anything = fc.anything({ withDate: true, withMap: true, withSet: true, withNullPrototype: true, withSparseArray: true, withTypedArray: true, withBoxedValues: true, maxDepth: 4 });
    // Wide enough that containers pass the native budget and are walked here.
    const wide = fc.array(anything, { minLength: 0, maxLength: 3000 }).map((items) => ({ items, more: items.slice(0, 100), n: items.length }));
    fc.assert(
      fc.property(fc.oneof(anything, wide, fc.array(wide, { maxLength: 3 })), (value) => {
        const text = JSON.stringify(value);
        if (text === undefined) return;
        expect(pieces(value).join('')).toBe(text);
      }),
      { numRuns: 60 },
    );
  });

  it('follows toJSON(key) as JSON does (a member it turns into undefined is left out) inside walked containers', () => {
    const big = Array.from({ length: 5000 }, (_, i) => i);
    const value = { big, when: new Date(0), gone: { toJSON: () => undefined }, keyed: { toJSON: (key: string) => `at ${key}` }, list: [big, { toJSON: () => undefined }] };
    expect(isLargeJson(value)).toBe(true);
    expect(pieces(value).join('')).toBe(JSON.stringify(value));
  });

  it('splits a large value into pieces of about a megabyte, never the whole text at once', () => {
    const rows = Array.from({ length: 60_000 }, (_, i) => ({ id: i, text: `row ${i} `.repeat(8) }));
    const out = pieces({ rows });
    expect(out.length).toBeGreaterThan(3);
    expect(Math.max(...out.map((p) => p.length))).toBeLessThan(1.1 * (1 << 20));
    expect(out.join('')).toBe(JSON.stringify({ rows }));
  });

  it('throws as JSON.stringify does on a cycle and a BigInt, and refuses a value that is not JSON', () => {
    const cyclic: unknown[] = Array.from({ length: 5000 }, () => 1);
    cyclic.push(cyclic);
    expect(() => pieces(cyclic)).toThrow(/circular/);
    expect(() => pieces({ n: 1n })).toThrow(TypeError);
    expect(() => pieces(undefined)).toThrow(/not JSON/);
  });
});
