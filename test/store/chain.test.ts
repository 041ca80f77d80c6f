import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadHashBackend, type HashBackend } from '../../src/hash/blake3.js';
import { ChainReader, LARGE_LINE, chainOf, sealBatch } from '../../src/store/chain.js';

/** What chain.ts's module comment defines, computed the plain way: the stored bytes of a sealed batch and its chain. */
function reference(backend: HashBackend, start: Buffer, lines: readonly string[], sealFirst: boolean): { text: Buffer; head: Buffer } {
  let head = start;
  let pending = '';
  let text = '';
  lines.forEach((line, i) => {
    pending += `${line}\n`;
    if (i === lines.length - 1 || (i === 0 && sealFirst && lines.length > 1)) {
      head = backend.digest(Buffer.concat([head, Buffer.from(pending)]));
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
  it('seals small lines exactly as the chain is defined, into a scratch buffer or not, with either BLAKE3 backend', async () => {
    const backends = [await loadHashBackend('wasm'), await loadHashBackend('native')];
    fc.assert(
      fc.property(fc.array(line, { minLength: 1, maxLength: 12 }), fc.boolean(), fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.constantFrom(0, 64, 1 << 16), (lines, sealFirst, startBytes, scratchSize) => {
        const start = Buffer.from(startBytes);
        const expected = reference(backends[0]!, start, lines, sealFirst);
        for (const backend of backends) {
          const scratch = scratchSize === 0 ? undefined : Buffer.alloc(scratchSize, 0xff);
          const sealed = sealBatch(backend, start, lines, sealFirst, scratch);
          const bytes = joined(sealed.pieces);
          expect(bytes.equals(expected.text)).toBe(true);
          expect(sealed.head.equals(expected.head)).toBe(true);
          expect(sealed.bytes).toBe(bytes.length);
          const stored = bytes.toString('utf8').split('\n').slice(0, -1);
          expect(sealed.lineBytes()).toEqual(stored.map((l) => Buffer.byteLength(l) + 1));
          // The seals the Postgres store builds its rows from: the closing brace and newline they replace.
          expect(stored).toEqual(lines.map((l, i) => (sealed.seals[i] === undefined ? l : `${l.slice(0, -1)}${sealed.seals[i]!.slice(0, -1)}`)));
          // And a reader verifies it.
          const reader = new ChainReader(backend, start);
          const steps = stored.map((l) => reader.feed(Buffer.from(l)));
          expect(steps.filter((s) => s.kind === 'mismatch')).toEqual([]);
          expect(chainOf(Buffer.from(stored[stored.length - 1]!))).toBe(expected.head.toString('hex'));
        }
      }),
      { numRuns: 150 },
    );
  });

  it('gives the same bytes for a batch with a large line (its own path) as the definition', async () => {
    const backend = await loadHashBackend('wasm');
    const start = Buffer.alloc(32, 7);
    const lines = [JSON.stringify({ a: 'é'.repeat(10) }), JSON.stringify({ big: 'x'.repeat(LARGE_LINE + 1) }), JSON.stringify({ z: '😀' })];
    const sealed = sealBatch(backend, start, lines, true, Buffer.alloc(1 << 16));
    const expected = reference(backend, start, lines, true);
    expect(joined(sealed.pieces).equals(expected.text)).toBe(true);
    expect(sealed.head.equals(expected.head)).toBe(true);
  });
});
