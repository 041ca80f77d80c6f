import { randomBytes } from 'node:crypto';

let lastTime = 0;
let counter = 0;

function randomBase36(length: number): string {
  const bytes = randomBytes(length);
  let out = '';
  for (let i = 0; i < length; i++) out += (bytes[i]! % 36).toString(36);
  return out;
}

/**
 * A new id `<prefix>_<time><counter>_<random>`: sortable by creation time (milliseconds, base 36, fixed width),
 * ordered within one process by a counter, and unique across processes by 10 random base-36 characters.
 * Always valid as a path segment.
 */
export function generateId(prefix: string): string {
  if (!/^[A-Za-z0-9]{1,16}$/.test(prefix)) throw new TypeError(`id prefix must be 1-16 letters or digits, got ${JSON.stringify(prefix)}`);
  const now = Date.now();
  if (now === lastTime) counter++;
  else {
    lastTime = now;
    counter = 0;
  }
  const time = now.toString(36).padStart(9, '0');
  const seq = (counter % 1296).toString(36).padStart(2, '0');
  return `${prefix}_${time}${seq}_${randomBase36(10)}`;
}

/** A new run id, e.g. `run_mhx3k2a1b00_4f9zq0c1xk`. */
export function newRunId(): string {
  return generateId('run');
}

/** A new session key. */
export function newSessionKey(): string {
  return generateId('ses');
}

/** A new event id. */
export function newEventId(): string {
  return generateId('evt');
}

/** A new memory item id. */
export function newMemoryId(): string {
  return generateId('mem');
}
