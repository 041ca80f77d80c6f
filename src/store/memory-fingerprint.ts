/**
 * The fingerprint of a file memory's `items/` folder that keyword.json records (see MemoryStore): which item files
 * there are (their count and a digest of their sorted names) and the folder's identity and modification time. It is
 * taken when the index is written, after the items of the operation, and compared when the index is loaded: a
 * listing of the folder's names and one `stat`, never a read of the items. So an index put back to an older copy
 * (with its witness) is caught when an item was written or deleted since, which generations alone cannot tell until
 * a search happens to read such an item.
 *
 * The names catch added and removed items whatever the clock; the folder's time catches most items rewritten in
 * place since (a rename into the folder changes it), not one rewritten within the same tick of the file system's
 * clock as the index. A folder copied or restored elsewhere has another identity and time: its first load reads the
 * items once, finds them as the index knows them, and records the new fingerprint without a word.
 */
import { statSync } from 'node:fs';
import type { HashBackend } from '../hash/blake3.js';

/** The fingerprint of `itemsDir` holding the item files `names` (listed by the caller, in any order). */
export function itemsFingerprint(itemsDir: string, names: readonly string[], backend: HashBackend): string {
  let folder: string;
  try {
    const stat = statSync(itemsDir, { bigint: true });
    folder = `${stat.ino}:${stat.mtimeNs}`;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    folder = 'none';
  }
  const digest = backend.digestOf([[...names].sort().join('\n')]).toString('hex').slice(0, 32);
  return `${names.length}:${digest}:${folder}`;
}
