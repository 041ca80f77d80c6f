import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { NATIVE_FROM_BYTES, loadHashBackend, sharedHashBackend } from '../../src/hash/blake3.js';

describe("sharedHashBackend('by-size')", () => {
  it('gives the digests of either backend on both sides of the size at which it changes backend, one-shot, by parts and incremental', async () => {
    const bySize = await sharedHashBackend('by-size');
    const wasm = await loadHashBackend('wasm');
    const native = await loadHashBackend('native');
    for (const size of [0, 1, 1023, NATIVE_FROM_BYTES - 1, NATIVE_FROM_BYTES, NATIVE_FROM_BYTES + 1, 3 * NATIVE_FROM_BYTES]) {
      const input = randomBytes(size);
      const expected = wasm.digest(input).toString('hex');
      expect(native.digest(input).toString('hex')).toBe(expected);
      expect(bySize.digest(input).toString('hex')).toBe(expected);
      // The same bytes given in parts (a Buffer and text) whose sizes add up across the boundary.
      const cut = size >> 1;
      const text = input.subarray(cut).toString('latin1');
      expect(bySize.digestOf([input.subarray(0, cut), Buffer.from(text, 'latin1')]).toString('hex')).toBe(expected);
      expect(bySize.digestOf([input.subarray(0, cut), input.subarray(cut)]).toString('hex')).toBe(expected);
      const hasher = bySize.hasher();
      hasher.update(input.subarray(0, cut));
      hasher.update(input.subarray(cut));
      expect(hasher.digest().toString('hex')).toBe(expected);
    }
  });

  it('hashes text parts as UTF-8 whatever backend the size picks', async () => {
    const bySize = await sharedHashBackend('by-size');
    const wasm = await loadHashBackend('wasm');
    // Multi-byte text: its length in UTF-16 units is below the threshold, its UTF-8 above it, and the other way.
    for (const text of ['é'.repeat(NATIVE_FROM_BYTES - 10), '\u{1F600}'.repeat(NATIVE_FROM_BYTES / 2 + 3), 'a'.repeat(NATIVE_FROM_BYTES)]) {
      expect(bySize.digestOf([text]).toString('hex')).toBe(wasm.digest(Buffer.from(text, 'utf8')).toString('hex'));
    }
  });
});
