import fc from 'fast-check';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { readJsonChunked } from '../../src/fs/index.js';
import { trials } from '../support/soak.js';

const dir = mkdtempSync(join(tmpdir(), 'bpf-json-read-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

function fileOf(content: string | Buffer): string {
  const path = join(dir, `${files++}.json`);
  writeFileSync(path, content);
  return path;
}

/** Small windows and batches, so that small values walk every path: batches, large containers, long tokens, refills. */
const chunking = fc.record({ window: fc.integer({ min: 8, max: 96 }), batch: fc.integer({ min: 1, max: 7 }) }).map(({ window, batch }) => ({ window, batch }));

const text = fc.oneof(fc.string({ maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 12 }), fc.constantFrom('__proto__', 'a"b', 'back\\slash', 'é', '😀', '\u2028', 'constructor'));
const value: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(null, true, false, 0, -0, 1e21, -1.5e-7, 2 ** 70),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    text,
    fc.array(tie('value'), { maxLength: 8 }),
    fc.array(fc.tuple(text, tie('value')), { maxLength: 8 }).map((entries) => {
      // JSON object text with these members in order (duplicates included: the last wins, as JSON.parse has it)
      const out: Record<string, unknown> = {};
      for (const [k, v] of entries) Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
      return out;
    }),
  ),
})).value;

/** The JSON text of `v`, laid out one of several ways. */
const jsonText = fc.tuple(value, fc.constantFrom(undefined, 0, 1, 2, '\t', ' \r\n ')).map(([v, space]) => JSON.stringify(v, null, space as never) ?? 'null');

/** Same value and same text again (key order, `__proto__` keys as own members, -0 kept). */
function expectSame(actual: unknown, expected: unknown): void {
  // (node's strict deep equality: prototypes, own keys such as `constructor` and `__proto__`, -0)
  expect(isDeepStrictEqual(actual, expected)).toBe(true);
  expect(JSON.stringify(actual)).toBe(JSON.stringify(expected));
}

describe('readJsonChunked: JSON.parse of a file read in chunks', () => {
  it('gives exactly what JSON.parse of the whole text gives, for any layout and any window and batch size', () => {
    fc.assert(
      fc.property(jsonText, chunking, fc.boolean(), (json, options, bom) => {
        const read = readJsonChunked(fileOf(bom ? `\uFEFF${json}` : json), options);
        expect(read).toBeDefined();
        expectSame(read!.value, JSON.parse(json));
      }),
      { numRuns: trials(200, 5000) },
    );
  });

  it('damaged text: the same value as JSON.parse when it still parses, and undefined (never a wrong value, never a throw) when it does not', () => {
    fc.assert(
      fc.property(jsonText, chunking, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('flip', 'cut', 'insert'), (json, options, at, byte, how) => {
        const bytes = Buffer.from(json);
        const i = bytes.length === 0 ? 0 : at % bytes.length;
        const damaged =
          how === 'cut' ? bytes.subarray(0, i) : how === 'flip' ? Buffer.concat([bytes.subarray(0, i), Buffer.from([byte]), bytes.subarray(i + 1)]) : Buffer.concat([bytes.subarray(0, i), Buffer.from([byte]), bytes.subarray(i)]);
        let expected: { value: unknown } | undefined;
        try {
          expected = { value: JSON.parse(damaged.toString('utf8')) };
        } catch {
          expected = undefined;
        }
        const read = readJsonChunked(fileOf(damaged), options);
        if (expected === undefined) expect(read).toBeUndefined();
        // (a value the chunked reader declines is read whole by its callers: declining is never wrong)
        else if (read !== undefined) expectSame(read.value, expected.value);
      }),
      { numRuns: trials(300, 8000) },
    );
  });

  it('reads large files with the default window: arrays of many items, objects of many members, long strings', () => {
    const big = {
      items: Array.from({ length: 20_000 }, (_, i) => ({ id: i, name: `row ${i}`, tags: ['a', 'é', '😀'] })),
      members: Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, i % 3 === 0 ? null : `v${i}\n"`])),
      long: 'x\\"y'.repeat(600_000),
    };
    const json = JSON.stringify(big);
    expect(json.length).toBeGreaterThan(2 ** 21);
    expectSame(readJsonChunked(fileOf(json))!.value, big);
  });

  it('declines, without overflowing the stack, large containers nested 100,000 deep; and files over maxBytes', () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    expect(readJsonChunked(fileOf(deep), { window: 4096, batch: 1024 })).toBeUndefined();
    expect(readJsonChunked(fileOf('[1, 2, 3]'), { maxBytes: 5 })).toBeUndefined();
    expect(readJsonChunked(fileOf('[1, 2, 3]'), { maxBytes: 9 })!.value).toEqual([1, 2, 3]);
  });

  it('throws what the file system says (a missing file)', () => {
    expect(() => readJsonChunked(join(dir, 'missing.json'))).toThrow(/ENOENT/);
  });
});
