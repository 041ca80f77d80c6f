import { randomFillSync } from 'node:crypto';
import { renewAfterSnapshot } from './snapshot.js';

/**
 * Random bytes for names and tokens (temp files, lock tokens, run ids), drawn from a pool that is refilled from the
 * system's CSPRNG 4 KB at a time, as `crypto.randomUUID` does (but emptied in a process restored from a startup
 * snapshot: see {@link renewAfterSnapshot}). `randomBytes(6)` for each name cost 4-15 µs here (one call into
 * OpenSSL each, slowest when calls are far apart), and a run makes several.
 */
const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let used = POOL_BYTES;

// Drawn again in a process restored from a startup snapshot (see renewAfterSnapshot).
renewAfterSnapshot(() => {
  pool.fill(0);
  used = POOL_BYTES;
});

/** `length` random bytes (at most 256), as lowercase hex. */
export function randomHex(length: number): string {
  return take(length).toString('hex');
}

/** `length` random bytes (at most 256): a view of the pool, valid until the next call. */
export function randomPoolBytes(length: number): Buffer {
  return take(length);
}

function take(length: number): Buffer {
  if (!Number.isSafeInteger(length) || length < 1 || length > 256) throw new RangeError(`random byte count must be 1-256, got ${length}`);
  if (used + length > POOL_BYTES) {
    randomFillSync(pool);
    used = 0;
  }
  const bytes = pool.subarray(used, used + length);
  used += length;
  return bytes;
}
