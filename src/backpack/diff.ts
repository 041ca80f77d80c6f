/** Diff of two Backpack states (PRD-001 `diff`), computed through their public API. */
import type { BackpackDiff, BackpackItem } from './types.js';
import { deepEqual, setOwn } from './values.js';

/** What `diff` needs of a Backpack. */
export interface ItemSource {
  keys(): string[];
  getItem(key: string): BackpackItem | undefined;
}

/**
 * Keys added, modified (value not deep-equal) and deleted going from `before` to `after`, sorted, with the before
 * and after values and the node that packed the after value.
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
    const detail = { before: a?.value, after: b?.value, changedBy: b?.metadata.sourceNodeId };
    setOwn(result.details, key, detail);
  }
  return result;
}
