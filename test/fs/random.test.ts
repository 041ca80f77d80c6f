import { describe, expect, it } from 'vitest';
import { randomHex, randomPoolBytes } from '../../src/fs/index.js';

describe('randomHex (the pooled random names and tokens)', () => {
  it('gives lowercase hex of twice the byte count', () => {
    for (const n of [1, 4, 6, 8, 32, 256]) expect(randomHex(n)).toMatch(new RegExp(`^[0-9a-f]{${2 * n}}$`));
  });

  it('never repeats a value across many draws, refills of the pool included', () => {
    // 4,096-byte pool: 3,000 draws of 8 bytes cross it about six times, each time at a different offset.
    const seen = new Set<string>();
    for (let i = 0; i < 3000; i++) seen.add(randomHex(8));
    expect(seen.size).toBe(3000);
  });

  it('hands out fresh bytes on each call, not the same view again', () => {
    const a = Buffer.from(randomPoolBytes(16));
    const b = Buffer.from(randomPoolBytes(16));
    expect(a.equals(b)).toBe(false);
  });

  it('refuses a byte count it cannot serve, naming it', () => {
    for (const n of [0, -1, 257, 1.5, Number.NaN]) expect(() => randomHex(n)).toThrow(`random byte count must be 1-256, got ${n}`);
  });
});
