import { randomHex, randomPoolBytes } from '../fs/random.js';
import { renewAfterSnapshot } from '../fs/snapshot.js';

/**
 * Ids for runs, spans and events: a random prefix drawn once per process (so two processes never collide) plus a
 * counter (so making one costs a few tens of nanoseconds). Only `[a-z0-9-]`, so ids are safe in file names.
 */
let processPrefix = randomHex(6);
// Each process its own prefix, one started from a startup snapshot too (see renewAfterSnapshot).
renewAfterSnapshot(() => {
  processPrefix = randomHex(6);
});
let spanCounter = 0;
let eventCounter = 0;

let lastTime = 0;
let sameTimeCounter = 0;

function randomBase36(length: number): string {
  const bytes = randomPoolBytes(length);
  let out = '';
  for (let i = 0; i < length; i++) out += (bytes[i]! % 36).toString(36);
  return out;
}

/**
 * A new id `<prefix>_<time><counter>_<random>`: sortable by creation time (milliseconds, base 36, fixed width),
 * ordered within one process by a counter, and unique across processes by 10 random base-36 characters.
 * Always valid as a path segment (a store id).
 */
export function generateId(prefix: string): string {
  if (!/^[A-Za-z0-9]{1,16}$/.test(prefix)) throw new TypeError(`id prefix must be 1-16 letters or digits, got ${JSON.stringify(prefix)}`);
  const now = Date.now();
  if (now === lastTime) sameTimeCounter++;
  else {
    lastTime = now;
    sameTimeCounter = 0;
  }
  const time = now.toString(36).padStart(9, '0');
  const seq = (sameTimeCounter % 1296).toString(36).padStart(2, '0');
  return `${prefix}_${time}${seq}_${randomBase36(10)}`;
}

/** A new run id, e.g. `run_mhx3k2a1b00_4f9zq0c1xk`: sortable by creation time, unique across processes. */
export function newRunId(): string {
  return generateId('run');
}

/** A new span id (one per node execution or flow run), unique across processes. */
export function newSpanId(): string {
  return `sp-${processPrefix}-${(++spanCounter).toString(36)}`;
}

/** A new event id, unique across processes. */
export function newEventId(): string {
  return `ev-${processPrefix}-${(++eventCounter).toString(36)}`;
}
