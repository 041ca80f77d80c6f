/** Diff of two Backpack states (PRD-001 `diff`), computed through their public API. */
import type { BackpackDiff, BackpackItem, DiffDetail } from './types.js';
import { deepEqual, isUnavailable, setOwn } from './values.js';

/** What `diff` needs of a Backpack. */
export interface ItemSource {
  keys(): string[];
  getItem(key: string): BackpackItem | undefined;
}

/**
 * Keys added, modified (value not deep-equal) and deleted going from `before` to `after`, sorted, with the before
 * and after values and the node that packed the after value. A value history kept only a reference of (above
 * `maxValueBytes`) is modified unless it is the same reference, with `unknown` set: it may have changed.
 */
export function diffBackpacks(before: ItemSource, after: ItemSource): BackpackDiff {
  const result: BackpackDiff = { added: [], modified: [], deleted: [], details: {} };
  const keys = new Set([...before.keys(), ...after.keys()]);
  for (const key of [...keys].sort()) {
    const a = before.getItem(key);
    const b = after.getItem(key);
    if (a && b && deepEqual(a.value, b.value)) continue;
    if (!a) result.added.push(key);
    else if (!b) result.deleted.push(key);
    else result.modified.push(key);
    const detail: DiffDetail = { before: a?.value, after: b?.value, changedBy: b?.metadata.sourceNodeId };
    if (a && b && (holdsUnavailable(a.value) || holdsUnavailable(b.value))) detail.unknown = true;
    setOwn(result.details, key, detail);
  }
  return result;
}

/** Whether `value` is, or holds (in an array, a plain object, a Map or a Set), an UnavailableValue. */
function holdsUnavailable(value: unknown, depth = 0): boolean {
  if (isUnavailable(value)) return true;
  if (typeof value !== 'object' || value === null || depth > 64) return false;
  const parts = Array.isArray(value) || value instanceof Set ? [...value] : value instanceof Map ? [...value].flat() : Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null ? Object.values(value) : [];
  return parts.some((part) => holdsUnavailable(part, depth + 1));
}
