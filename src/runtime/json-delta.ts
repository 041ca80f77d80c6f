/**
 * Structural deltas between JSON values, so that a chain of checkpoints stores what changed, not the whole state at
 * every step. An agent that appends 200 bytes to a list at each of 400 steps writes about 200 bytes per step,
 * where whole-value checkpoints would write steps × state.
 *
 * A delta is one of:
 * - `{ r: value }`: replace with `value`;
 * - `{ a: items }`: the array grew by `items` at its end (everything before is unchanged);
 * - `{ o: { key: delta }, d: [keys] }`: an object whose listed keys changed (`d`: keys deleted).
 * `diffJson` picks whichever is shorter when serialized.
 *
 * Applying a delta gives the next value exactly, order included: a patch keeps the keys it does not delete where they
 * were and puts new keys last, so an object whose keys changed order (the same keys, or a key deleted and set again)
 * is replaced, and so is a Map or Set whose entries changed order. Numbers compare with Object.is (-0 is not 0).
 */

import { CODEC_TAG, encodeValue, setOwn, type JsonValue } from '../backpack/index.js';
import { deepEqualInOrder, extendsStored } from '../backpack/values.js';

export type { JsonValue };

/** A delta from one JSON value to another (see the module comment). */
export type JsonDelta = { r: JsonValue } | { a: JsonValue[] } | { o: Record<string, JsonDelta>; d?: string[] };

function isObject(value: JsonValue): value is { [key: string]: JsonValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Whether a patch from an object with keys `prevKeys` gives the order of `nextKeys` (see the module comment): the
 * keys both have come first in `nextKeys`, in the order they had, and the new keys after them.
 */
function patchKeepsOrder(prevKeys: readonly string[], prev: object, nextKeys: readonly string[], next: object): boolean {
  let p = 0;
  let added = false;
  for (const key of nextKeys) {
    if (!Object.hasOwn(prev, key)) {
      added = true;
      continue;
    }
    while (p < prevKeys.length && !Object.hasOwn(next, prevKeys[p]!)) p++;
    if (added || prevKeys[p] !== key) return false;
    p++;
  }
  return true;
}

/** The shortest delta that turns `prev` into `next`; undefined when they are equal (key order included). */
export function diffJson(prev: JsonValue, next: JsonValue): JsonDelta | undefined {
  if (deepEqualInOrder(prev, next)) return undefined;
  const replace: JsonDelta = { r: next };
  if (Array.isArray(prev) && Array.isArray(next) && next.length > prev.length) {
    for (let i = 0; i < prev.length; i++) if (!deepEqualInOrder(prev[i]!, next[i]!)) return replace;
    return { a: next.slice(prev.length) };
  }
  if (isObject(prev) && isObject(next)) {
    const prevKeys = Object.keys(prev);
    if (!patchKeepsOrder(prevKeys, prev, Object.keys(next), next)) return replace;
    const changed: Record<string, JsonDelta> = {};
    const deleted = prevKeys.filter((key) => !Object.hasOwn(next, key));
    for (const [key, value] of Object.entries(next)) {
      const delta = Object.hasOwn(prev, key) ? diffJson(prev[key]!, value) : { r: value };
      if (delta) setOwn(changed, key, delta);
    }
    const patch: JsonDelta = deleted.length ? { o: changed, d: deleted } : { o: changed };
    return JSON.stringify(patch).length < JSON.stringify(replace).length ? patch : replace;
  }
  return replace;
}

/** Whether `value` is encoded as a plain JSON object of its keys (see the codec: no tag key of its own). */
function isPlainRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return (proto === Object.prototype || proto === null) && !Object.hasOwn(value, CODEC_TAG);
}

/**
 * The delta from `encodeValue(prev)` to `encodeValue(next)`, where both are values as the Backpack stores them
 * (frozen, and sharing what did not change: an array grown by a node keeps its elements), computed by identity
 * instead of by encoding both: what is the same object, or the same primitive, is not looked into, so the cost
 * follows what changed, not the size of the value. Only the parts that changed are encoded. Undefined when the two
 * encode alike (order and -0 included). Like {@link diffJson}: an array grown at its end is an append, a plain object
 * whose keys kept their order a patch of the keys that changed (or a replacement when every key changed), anything
 * else a replacement.
 */
export function diffStored(prev: unknown, next: unknown): JsonDelta | undefined {
  if (Object.is(prev, next)) return undefined;
  if (Array.isArray(prev) && Array.isArray(next)) {
    if (next.length < prev.length) return { r: encodeValue(next) };
    // An array a node grew from this one, as the Backpack recorded it: its elements need not be looked at.
    if (extendsStored(next, prev)) return next.length === prev.length ? undefined : { a: encodeValue(next.slice(prev.length)) as JsonValue[] };
    for (let i = 0; i < prev.length; i++) {
      // Identity first: a deep comparison only for an element that is not the same (a fresh copy of equal data).
      if (!Object.is(prev[i], next[i]) && !deepEqualInOrder(prev[i], next[i])) return { r: encodeValue(next) };
    }
    return next.length === prev.length ? undefined : { a: encodeValue(next.slice(prev.length)) as JsonValue[] };
  }
  if (isPlainRecord(prev) && isPlainRecord(next)) {
    const prevKeys = Object.keys(prev);
    const nextKeys = Object.keys(next);
    if (!patchKeepsOrder(prevKeys, prev, nextKeys, next)) return { r: encodeValue(next) };
    let changed: Record<string, JsonDelta> | undefined;
    let kept = 0;
    let shared = 0;
    for (const key of nextKeys) {
      const had = Object.hasOwn(prev, key);
      if (had) shared++;
      const delta = had ? diffStored(prev[key], next[key]) : { r: encodeValue(next[key]) };
      if (delta === undefined) kept++;
      else setOwn((changed ??= {}), key, delta);
    }
    const deleted = shared === prevKeys.length ? [] : prevKeys.filter((key) => !Object.hasOwn(next, key));
    if (changed === undefined && deleted.length === 0) return undefined;
    if (kept === 0 && nextKeys.length > 0) return { r: encodeValue(next) };
    return deleted.length ? { o: changed ?? {}, d: deleted } : { o: changed! };
  }
  return deepEqualInOrder(prev, next) ? undefined : { r: encodeValue(next) };
}

/** Applies `delta` to `prev` (which is not modified) and returns the new value. */
export function applyJsonDelta(prev: JsonValue | undefined, delta: JsonDelta): JsonValue {
  if ('r' in delta) return delta.r;
  if ('a' in delta) {
    if (!Array.isArray(prev)) throw new TypeError('JSON delta: an append applies to an array');
    return [...prev, ...delta.a];
  }
  if (prev === undefined || !isObject(prev)) throw new TypeError('JSON delta: an object patch applies to an object');
  const next: { [key: string]: JsonValue } = { ...prev };
  for (const key of delta.d ?? []) delete next[key];
  for (const [key, inner] of Object.entries(delta.o)) setOwn(next, key, applyJsonDelta(Object.hasOwn(prev, key) ? prev[key] : undefined, inner));
  return next;
}
