import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadHashBackend } from '../../src/hash/blake3.js';
import { openSealed, seal, sealJson } from '../../src/hash/sealed.js';

describe('sealJson', () => {
  it('is the UTF-8 of seal(): same checksum, same document, and it opens', async () => {
    const backend = await loadHashBackend('wasm');
    fc.assert(
      fc.property(fc.jsonValue(), fc.string({ unit: 'binary' }), (value, text) => {
        for (const data of [value, { text }]) {
          const bytes = sealJson(JSON.stringify(data), backend);
          expect(bytes.equals(Buffer.from(seal(data, backend)))).toBe(true);
          expect(openSealed(bytes.toString('utf8'), backend)).toEqual({ ok: true, data: JSON.parse(JSON.stringify(data)), sealed: true });
        }
      }),
      { numRuns: 200 },
    );
  });
});
