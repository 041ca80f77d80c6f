/**
 * Batches sealed by sealText (one contiguous digest after the 40 reserved bytes) with the 'by-size'
 * backend, across the 16 KB switch to the native binding: the bytes and chain are the definition's, a reader on
 * either backend verifies them, and any damaged byte makes the batch fail to verify.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NATIVE_FROM_BYTES, loadHashBackend, sharedHashBackend, type HashBackend } from '../../src/hash/blake3.js';
import { ChainReader, LARGE_LINE, sealBatch, type ChainFormat, type ChainPosition } from '../../src/store/chain.js';

function tag(line: number, format: ChainFormat): Buffer {
  if (format === 'v1') return Buffer.alloc(0);
  const bytes = Buffer.alloc(8);
  bytes.writeBigUInt64BE(BigInt(line));
  return bytes;
}

function reference(backend: HashBackend, start: Buffer, lines: readonly string[], sealFirst: boolean, at: ChainPosition): { text: Buffer; head: Buffer } {
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
      { numRuns: 150 },
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
