import { KIND_CODE } from './hash.js';
import { STAT_FIELDS, statOne } from './stat-pool.js';
import type { NodeRecord, ScanBasis, Tree } from './tree.js';

/** A file or symlink of the stored tree whose lstat no longer matches its cached stat (or may not: racy). */
export interface StaleLeaf {
  readonly record: NodeRecord;
  readonly kind: 'file' | 'symlink';
  readonly size: number;
  readonly mtimeMs: number;
  readonly ino: number;
}

/** Inputs of {@link quickCheck}. */
export interface QuickCheckInput {
  readonly root: string;
  readonly tree: Tree;
  /** The rules key of this scan: the stored listings hold only under the same key. */
  readonly rulesKey: string;
  /** Entries whose mtime is at or after this instant may have changed again in the same tick. */
  readonly racyFromMs: number;
  readonly helper?: { statRecordsOnHelper(bytes: Uint8Array, starts: Int32Array, root: string): Promise<Float64Array> };
}

/** Share of the stored records the helper thread stats. */
const HELPER_SHARE = 0.5;
/** Kind code in a tree file (1 file, 2 dir, 3 symlink) to the kind code of a stat (1 file, 4 dir, 2 symlink). */
const STAT_KIND = [0, 1, 4, 2];
const NON_ASCII = /[^ -~]/;

/**
 * A rescan's fast path, like git's refresh of its index: every directory and file of a tree read from its file is
 * lstat'ed and compared with its cached stat in place, with no listing, no record objects and no path decoded on
 * this thread for the records the helper thread takes. A directory whose stat is unchanged has gained or lost no
 * entry, so when every directory is unchanged the stored leaves are exactly the workspace's files, and the files
 * whose stat changed are all that needs reading.
 *
 * Returns those files (an empty list: nothing changed), or undefined when the check cannot decide and the full
 * listing must run: a directory changed or is racy, an entry vanished or changed kind, a `.gitignore` changed, a
 * path is not ASCII (its spelling on disk may differ from the stored NFC), or the tree or its basis does not allow
 * reusing listings.
 */
export async function quickCheck(input: QuickCheckInput): Promise<StaleLeaf[] | undefined> {
  const { root, tree, racyFromMs } = input;
  const layers = tree.storedLayers();
  const basis: ScanBasis | undefined = tree.basis;
  if (layers === undefined || basis === undefined || !basis.reusable || basis.rules !== input.rulesKey) return undefined;
  const { stored, overlay } = layers;
  const count = stored.size;
  // Stored records an overlay entry replaces or removes: checked through the overlay, not the file.
  const shadowed = new Set<number>();
  for (const path of overlay.keys()) {
    const i = stored.indexOf(path);
    if (i >= 0) shadowed.add(i);
  }

  const split = input.helper === undefined ? 0 : Math.floor(count * HELPER_SHARE);
  const { body, starts } = stored.raw;
  // The helper gets a copy of the bytes up to the last path of its share, and reads those paths itself.
  const helped = split > 0 ? input.helper!.statRecordsOnHelper(new Uint8Array(body.subarray(0, stored.pathEnd(split - 1))), starts.slice(0, split), root) : undefined;
  const stats = new Float64Array(count * STAT_FIELDS);
  for (let i = split; i < count; i++) {
    if (shadowed.has(i)) continue;
    const path = stored.pathAt(i);
    if (NON_ASCII.test(path)) return undefined;
    statOne(path === '' ? root : `${root}/${path}`, stats, i);
  }
  if (helped !== undefined) stats.set(await helped, 0);

  const stale: StaleLeaf[] = [];
  const cached = new Float64Array(3);
  for (let i = 0; i < count; i++) {
    if (shadowed.has(i)) continue;
    const j = i * STAT_FIELDS;
    const code = stored.kindCodeAt(i);
    stored.statAt(i, cached, 0);
    // A directory's stored size is its number of children, not its stat's size.
    const same =
      stats[j] === STAT_KIND[code] && (code === 2 || stats[j + 1] === cached[0]) && stats[j + 2] === cached[1] && stats[j + 3] === cached[2] && cached[1]! < racyFromMs;
    if (same) continue;
    if (i < split && NON_ASCII.test(stored.pathAt(i))) return undefined;
    const verdict = staleLeaf(stored.at(i), stats, j, code === 2);
    if (verdict === undefined) return undefined;
    stale.push(verdict);
  }
  const one = new Float64Array(STAT_FIELDS);
  for (const record of overlay.values()) {
    if (record === undefined) continue;
    if (NON_ASCII.test(record.path)) return undefined;
    statOne(record.path === '' ? root : `${root}/${record.path}`, one, 0);
    const isDir = record.kind === 'dir';
    const same = one[0] === STAT_KIND[KIND_CODE[record.kind]] && (isDir || one[1] === record.size) && one[2] === record.mtimeMs && one[3] === record.ino && record.mtimeMs < racyFromMs;
    if (same) continue;
    const verdict = staleLeaf(record, one, 0, isDir);
    if (verdict === undefined) return undefined;
    stale.push(verdict);
  }
  return stale;
}

/** A leaf whose stat changed, or undefined when the change needs the full listing (see {@link quickCheck}). */
function staleLeaf(record: NodeRecord, stats: Float64Array, j: number, isDir: boolean): StaleLeaf | undefined {
  const kind = stats[j];
  if (isDir || (kind !== 1 && kind !== 2)) return undefined; // a directory changed, or an entry vanished or changed into one
  if (record.path === '.gitignore' || record.path.endsWith('/.gitignore')) return undefined; // the rules may have changed
  return { record, kind: kind === 1 ? 'file' : 'symlink', size: stats[j + 1]!, mtimeMs: stats[j + 2]!, ino: stats[j + 3]! };
}
