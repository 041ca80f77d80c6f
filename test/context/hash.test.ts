import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalJson, compareCodePoints, loadHashBackend } from '../../src/context/hash.js';

describe('BLAKE3 backends', () => {
  it('native and wasm backends give the same digests, one-shot and incremental', async () => {
    const native = await loadHashBackend('native');
    const wasm = await loadHashBackend('wasm');
    expect(native.name).toBe('native');
    expect(wasm.name).toBe('wasm');
    const inputs = [Buffer.alloc(0), Buffer.from('abc'), randomBytes(1023), randomBytes(1024), randomBytes(70_000)];
    for (const input of inputs) {
      expect(wasm.digest(input).toString('hex')).toBe(native.digest(input).toString('hex'));
      const a = native.hasher();
      const b = wasm.hasher();
      for (let i = 0; i < input.length; i += 4096) {
        a.update(input.subarray(i, i + 4096));
        b.update(input.subarray(i, i + 4096));
      }
      expect(b.digest().toString('hex')).toBe(a.digest().toString('hex'));
      expect(a.digest).toBeDefined();
    }
  });

  it('matches the published BLAKE3 digest of the empty input', async () => {
    for (const prefer of ['native', 'wasm'] as const) {
      const backend = await loadHashBackend(prefer);
      expect(backend.digest(Buffer.alloc(0)).toString('hex')).toBe('af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262');
    }
  });
});

describe('canonical encoding helpers', () => {
  it('canonicalJson sorts keys at every depth and drops undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 2 }], c: undefined } })).toBe('{"a":{"d":[2,{"y":2,"z":1}]},"b":1}');
  });

  it('orders names by code point, not by UTF-16 unit or locale', () => {
    const astral = '\u{1F600}'; // a surrogate pair in UTF-16, U+1F600 as a code point
    const high = '\uFF21'; // U+FF21, above the surrogate range
    expect(compareCodePoints(high, astral)).toBeLessThan(0);
    expect(high < astral).toBe(false); // plain JS comparison would order them the other way
    expect(['b', 'B', 'a', 'ä'].sort(compareCodePoints)).toEqual(['B', 'a', 'b', 'ä']);
  });
});
