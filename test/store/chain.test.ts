import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NATIVE_FROM_BYTES, loadHashBackend, sharedHashBackend, type HashBackend } from '../../src/hash/blake3.js';
import { ChainReader, LARGE_LINE, chainFormatOf, chainOf, sealBatch, type ChainFormat, type ChainPosition } from '../../src/store/chain.js';
import { trials } from '../support/soak.js';

/** N of chain.ts's module comment: a sealed line's number as 8 bytes, big-endian (nothing in format v1). */
function tag(line: number, format: ChainFormat): Buffer {
  if (format === 'v1') return Buffer.alloc(0);
  const bytes = Buffer.alloc(8);
  bytes.writeBigUInt64BE(BigInt(line));
  return bytes;
}

/**
 * What chain.ts's module comment defines, computed the plain way: the stored bytes of a sealed batch whose first line
 * is line `at.line` of the log, and its chain.
 */
function reference(backend: HashBackend, start: Buffer, lines: readonly string[], sealFirst: boolean, at: ChainPosition = { line: 0, format: 'v2' }): { text: Buffer; head: Buffer } {
  let head = start;
  let pending = '';
  let text = '';
  lines.forEach((line, i) => {
    pending += `${line}\n`;
    if (i === lines.length - 1 || (i === 0 && sealFirst && lines.length > 1)) {
      head = backend.digest(Buffer.concat([head, tag(at.line + i, at.format), Buffer.from(pending)]));
      text += `${line.slice(0, -1)},"chain":"${head.toString('hex')}"}\n`;
      pending = '';
    } else text += `${line}\n`;
  });
  return { text: Buffer.from(text), head };
}

function joined(pieces: readonly (string | Buffer)[]): Buffer {
  return Buffer.concat(pieces.map((piece) => (typeof piece === 'string' ? Buffer.from(piece) : piece)));
}

/** Event-like JSON lines with any text in them: multi-byte UTF-8, astral characters, escapes. */
const line = fc.record({ seq: fc.nat(), text: fc.string({ unit: 'binary', maxLength: 300 }), more: fc.array(fc.string({ unit: 'grapheme' }), { maxLength: 4 }) }).map((v) => JSON.stringify(v));

describe('sealBatch', () => {
  it('seals small lines exactly as the chain is defined, into a scratch buffer or not, with any BLAKE3 backend', async () => {
    const backends = [await loadHashBackend('wasm'), await loadHashBackend('native'), await sharedHashBackend('by-size')];
    fc.assert(
      fc.property(
        fc.array(line, { minLength: 1, maxLength: 12 }),
        fc.boolean(),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.constantFrom(0, 64, 1 << 16),
        fc.record({ line: fc.oneof(fc.nat(2000), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER - 20 })), format: fc.constantFrom<ChainFormat>('v1', 'v2') }),
        (lines, sealFirst, startBytes, scratchSize, at) => {
          const start = Buffer.from(startBytes);
          const expected = reference(backends[0]!, start, lines, sealFirst, at);
          for (const backend of backends) {
            const scratch = scratchSize === 0 ? undefined : Buffer.alloc(scratchSize, 0xff);
            const sealed = sealBatch(backend, start, lines, sealFirst, at, scratch);
            const bytes = joined(sealed.pieces);
            expect(bytes.equals(expected.text)).toBe(true);
            expect(sealed.head.equals(expected.head)).toBe(true);
            expect(sealed.bytes).toBe(bytes.length);
            const stored = bytes.toString('utf8').split('\n').slice(0, -1);
            expect(sealed.lineBytes()).toEqual(stored.map((l) => Buffer.byteLength(l) + 1));
            // The seals the Postgres store builds its rows from: the closing brace and newline they replace.
            expect(stored).toEqual(lines.map((l, i) => (sealed.seals[i] === undefined ? l : `${l.slice(0, -1)}${sealed.seals[i]!.slice(0, -1)}`)));
            // A reader verifies it, and learns its format.
            const reader = new ChainReader(backend, start);
            const steps = stored.map((l, i) => reader.feed(Buffer.from(l), at.line + i));
            expect(steps.filter((s) => s.kind === 'mismatch')).toEqual([]);
            expect(reader.format).toBe(at.format);
            expect(chainOf(Buffer.from(stored[stored.length - 1]!))).toBe(expected.head.toString('hex'));
          }
        },
      ),
      { numRuns: trials(60, 750) },
    );
  });

  it('gives the same bytes for a batch with a large line (its own path) as the definition', async () => {
    const backend = await loadHashBackend('wasm');
    const start = Buffer.alloc(32, 7);
    const lines = [JSON.stringify({ a: 'é'.repeat(10) }), JSON.stringify({ big: 'x'.repeat(LARGE_LINE + 1) }), JSON.stringify({ z: '😀' })];
    for (const at of [{ line: 0, format: 'v2' }, { line: 12_345, format: 'v2' }, { line: 7, format: 'v1' }] as const) {
      const sealed = sealBatch(backend, start, lines, true, at, Buffer.alloc(1 << 16));
      const expected = reference(backend, start, lines, true, at);
      expect(joined(sealed.pieces).equals(expected.text)).toBe(true);
      expect(sealed.head.equals(expected.head)).toBe(true);
    }
  });
});

describe('ChainReader and line numbers', () => {
  /** The stored lines of `batches` batches of `size` lines each, sealed from line 0 in `format`. */
  function log(backend: HashBackend, start: Buffer, batches: number, size: number, format: ChainFormat): Buffer[] {
    const stored: Buffer[] = [];
    let head = start;
    for (let b = 0; b < batches; b++) {
      const lines = Array.from({ length: size }, (_, i) => JSON.stringify({ seq: b * size + i + 1, n: i }));
      const sealed = sealBatch(backend, head, lines, b === 0, { line: stored.length, format });
      head = sealed.head;
      stored.push(...joined(sealed.pieces).toString('utf8').split('\n').slice(0, -1).map((l) => Buffer.from(l)));
    }
    return stored;
  }

  it('a batch fed with line numbers off by any amount never verifies, in either format (v2 logs), so no reader can be misled about where it is', async () => {
    const backend = await loadHashBackend('wasm');
    const start = Buffer.alloc(32, 3);
    const stored = log(backend, start, 6, 4, 'v2');
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.integer({ min: -4, max: 1_000_000 }).filter((d) => d !== 0), (batch, shift) => {
        // Anchored after batch `batch - 1`, as a reader starting at an index entry is, with every number shifted.
        const anchor = chainOf(stored[batch * 4 - 1]!)!;
        const reader = new ChainReader(backend, Buffer.from(anchor, 'hex'));
        const steps = stored.slice(batch * 4, batch * 4 + 4).map((l, i) => reader.feed(l, batch * 4 + i + shift));
        const sealed = steps.filter((s) => s.kind !== 'open');
        expect(sealed.map((s) => s.kind)).toEqual(['mismatch']);
        expect(reader.format).toBeUndefined();
        // The same lines at their own numbers verify.
        const right = new ChainReader(backend, Buffer.from(anchor, 'hex'), 'v2');
        expect(stored.slice(batch * 4, batch * 4 + 4).map((l, i) => right.feed(l, batch * 4 + i).kind)).toEqual(['open', 'open', 'open', 'verified']);
      }),
    );
  });

  it('reads a log written in format v1 (before line numbers were hashed) as v1 from its first seal on, and tells the format from the first line', async () => {
    const backend = await loadHashBackend('wasm');
    const start = Buffer.alloc(32, 9);
    for (const format of ['v1', 'v2'] as const) {
      const stored = log(backend, start, 3, 3, format);
      const reader = new ChainReader(backend, start);
      expect(stored.map((l, i) => reader.feed(l, i).kind).filter((k) => k !== 'open')).toEqual(['verified', 'verified', 'verified', 'verified']);
      expect(reader.format).toBe(format);
      expect(chainFormatOf(backend, start, stored[0]!)).toBe(format);
      // A damaged first line shows no format.
      const damaged = Buffer.from(stored[0]!);
      damaged[2] ^= 1;
      expect(chainFormatOf(backend, start, damaged)).toBeUndefined();
    }
    // Once a reader knows the format, a batch that would match only the other one is a mismatch.
    const v1 = log(backend, start, 2, 2, 'v1');
    const strict = new ChainReader(backend, start, 'v2');
    expect(v1.map((l, i) => strict.feed(l, i).kind).filter((k) => k !== 'open')).toEqual(['mismatch', 'mismatch', 'mismatch']);
  });
});

/*
 * Batches sealed by sealText (one contiguous digest after the 40 reserved bytes) with the 'by-size' backend, across
 * the 16 KB switch to the native binding: the bytes and chain are the definition's, a reader on either backend
 * verifies them, and any damaged byte makes the batch fail to verify.
 */
/** JSON lines whose total size lands near the 16 KB switch (and the 40-byte prefix), with multi-byte text. */
const lineOf = fc.tuple(fc.nat(), fc.constantFrom('a', 'é', '😀', '\u2028', '"', '\\'), fc.integer({ min: 0, max: 9000 })).map(([seq, ch, n]) => JSON.stringify({ seq, t: ch.repeat(n) }));

describe('sealText and the by-size backend', () => {
  it('seals batches around the native switch as defined; readers on either backend verify them; any damaged byte fails (property)', async () => {
    const bySize = await sharedHashBackend('by-size');
    const wasm = await loadHashBackend('wasm');
    const native = await loadHashBackend('native');
    expect(native.name).toBe('native');
    const sizes: number[] = [];
    await fc.assert(
      fc.asyncProperty(
        fc.array(lineOf, { minLength: 1, maxLength: 5 }),
        fc.boolean(),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.constantFrom(0, 40, 1 << 15, 1 << 16, 1 << 17),
        fc.record({ line: fc.oneof(fc.nat(5), fc.constantFrom(0xffffffff, 0x100000000, Number.MAX_SAFE_INTEGER - 10)), format: fc.constantFrom<ChainFormat>('v1', 'v2') }),
        fc.nat(),
        async (lines, sealFirst, startBytes, scratchSize, at, flip) => {
          fc.pre(lines.every((l) => l.length <= LARGE_LINE));
          const start = Buffer.from(startBytes);
          const expected = reference(wasm, start, lines, sealFirst, at);
          const scratch = scratchSize === 0 ? undefined : Buffer.alloc(scratchSize, 0xa5);
          const sealed = sealBatch(bySize, start, lines, sealFirst, at, scratch);
          const bytes = joined(sealed.pieces);
          sizes.push(bytes.length);
          expect(bytes.equals(expected.text)).toBe(true);
          expect(sealed.head.equals(expected.head)).toBe(true);
          const stored = bytes.toString('latin1').split('\n').slice(0, -1).map((l) => Buffer.from(l, 'latin1'));
          for (const backend of [wasm, native, bySize]) {
            const reader = new ChainReader(backend, start, at.format);
            expect(stored.map((l, i) => reader.feed(l, at.line + i).kind).filter((k) => k !== 'open')).toEqual(sealed.seals.filter((x) => x !== undefined).map(() => 'verified'));
          }
          // One byte damaged (not a newline: the line split is the reader's): the batch never verifies whole.
          const all = Buffer.concat(stored.map((l) => Buffer.concat([l, Buffer.from('\n')])));
          const pos = flip % all.length;
          if (all[pos] === 0x0a) return;
          const damaged = Buffer.from(all);
          damaged[pos] ^= 1 << (flip % 7);
          if (damaged[pos] === 0x0a) return;
          const lines2 = damaged.toString('latin1').split('\n').slice(0, -1).map((l) => Buffer.from(l, 'latin1'));
          const reader = new ChainReader(bySize, start, at.format);
          const kinds = lines2.map((l, i) => reader.feed(l, at.line + i).kind);
          expect(kinds.filter((k) => k === 'verified').length).toBeLessThan(sealed.seals.filter((x) => x !== undefined).length);
        },
      ),
      { numRuns: trials(60, 750) },
    );
    // The runs crossed the switch both ways.
    expect(sizes.filter((n) => n >= NATIVE_FROM_BYTES).length).toBeGreaterThan(10);
    expect(sizes.filter((n) => n < NATIVE_FROM_BYTES).length).toBeGreaterThan(10);
  }, 120_000);

  it('native and wasm agree on text parts with lone surrogates and other odd UTF-16 (the large-line path hashes strings)', async () => {
    const wasm = await loadHashBackend('wasm');
    const native = await loadHashBackend('native');
    for (const s of ['\ud800', 'a\udc00b', '\ud83d', '😀\ud800', 'x'.repeat(NATIVE_FROM_BYTES) + '\udfff']) {
      expect(native.digestOf([s]).toString('hex')).toBe(wasm.digestOf([s]).toString('hex'));
      expect(native.digestOf([s]).toString('hex')).toBe(wasm.digest(Buffer.from(s)).toString('hex'));
    }
  });
});
