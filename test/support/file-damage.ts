/** Damage to one file for property tests of readers: deleted, cut at a fraction of its size, or one bit flipped. */
import { readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import fc from 'fast-check';

/** What is done to the file: `at` is a fraction of its size, `bit` the bit flipped in the byte there. */
export type Damage = { kind: 'delete' } | { kind: 'truncate'; at: number } | { kind: 'flip'; at: number; bit: number };

/** Any {@link Damage}. */
export const damageArb: fc.Arbitrary<Damage> = fc.oneof(
  fc.constant<Damage>({ kind: 'delete' }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }) }),
  fc.record({ kind: fc.constant('flip' as const), at: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), bit: fc.integer({ min: 0, max: 7 }) }),
);

/** Does `d` to `file`. */
export function damage(file: string, d: Damage): void {
  if (d.kind === 'delete') return rmSync(file);
  const size = statSync(file).size;
  const at = Math.floor(d.at * size);
  if (d.kind === 'truncate') return truncateSync(file, at);
  const bytes = readFileSync(file);
  bytes[at]! ^= 1 << d.bit;
  writeFileSync(file, bytes);
}
