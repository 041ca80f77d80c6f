import { KIND_CODE } from './hash.js';
import { ABORT, BUSY, NEXT, STAT_FIELDS, statOne, type SharedStatJob } from './stat-pool.js';
import type { RecordBody } from './record-body.js';
import { coarseRacyInstant, settledMtime, type NodeRecord, type ScanBasis, type Tree } from './tree.js';

/** What the quick check knows of a stored record: its path, kind and cached stat. */
export type CachedRecord = Pick<NodeRecord, 'path' | 'kind' | 'size' | 'mtimeMs' | 'ino'>;

/** A file or symlink of the stored tree whose lstat no longer matches its cached stat (or may not: racy). */
export interface StaleLeaf {
  /** The stored record as the quick check read it (the scan that uses it checks it against the tree). */
  readonly record: CachedRecord;
  readonly kind: 'file' | 'symlink';
  readonly size: number;
  readonly mtimeMs: number;
  readonly ino: number;
}

/** The stored records and what the journal changed on top of them, with the basis of the stored tree. */
export interface StoredStats {
  readonly stored: RecordBody;
  readonly overlay: ReadonlyMap<string, NodeRecord | undefined>;
  readonly basis: ScanBasis | undefined;
}

/** The {@link StoredStats} of a tree read from its file; undefined for a tree built in memory. */
export function treeStats(tree: Tree): StoredStats | undefined {
  const layers = tree.storedLayers();
  return layers === undefined ? undefined : { ...layers, basis: tree.basis };
}

/** Inputs of {@link quickCheck}. */
export interface QuickCheckInput {
  readonly root: string;
  /** The stored tree's records (undefined: a tree built in memory, which the check cannot use). */
  readonly tree: StoredStats | undefined;
  /** The rules key of this scan: the stored listings hold only under the same key. */
  readonly rulesKey: string;
  /** Entries whose mtime is at or after this instant may have changed again in the same tick. */
  readonly racyFromMs: number;
  readonly helper?: { statShared(job: SharedStatJob): Promise<void> };
  /** How long to wait for the helper to finish the chunk it holds (default 5 s), then stat everything here. */
  readonly helperWaitMs?: number;
}

/**
 * Records per chunk of the work shared with the helper thread (see SharedStatJob): about a millisecond of lstat
 * calls, so that the thread that finishes first waits at most that long for the other.
 */
const CHUNK = 512;
/** How long the calling thread waits for the helper to finish the chunk it holds before it stats everything itself. */
const HELPER_WAIT_MS = 5_000;
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
  const coarseFromMs = coarseRacyInstant(racyFromMs);
  const basis: ScanBasis | undefined = tree?.basis;
  if (tree === undefined || basis === undefined || !basis.reusable || basis.rules !== input.rulesKey) return undefined;
  const { stored, overlay } = tree;
  if (!stored.ascii) return undefined;
  const count = stored.size;
  // Stored records an overlay entry replaces or removes: checked through the overlay, not the file.
  const shadowed = new Set<number>();
  for (const path of overlay.keys()) {
    const i = stored.indexOf(path);
    if (i >= 0) shadowed.add(i);
  }

  const stat = new Float64Array(STAT_FIELDS);
  const stale: { at: number; leaf: StaleLeaf }[] = [];
  // With the working directory at the root, paths go to the kernel relative to it, which then resolves two or
  // three components per file instead of the root's too. This thread does not yield from here to its end, so the
  // working directory cannot change under it (the helper thread, which cannot rely on it, uses whole paths).
  const pathOf = pathBytes(workingDirectoryIs(root) ? '' : `${root}/`, stored.raw.body);
  // Small trees (tests, mostly) still come in a few chunks, so that the helper has some to take.
  const chunk = Math.max(1, Math.min(CHUNK, Math.ceil(count / 16)));
  const chunks = Math.ceil(count / chunk);
  if (input.helper === undefined || chunks < 2) {
    if (!statRange(stored, 0, count, shadowed, root, pathOf, racyFromMs, coarseFromMs, stale)) return undefined;
  } else {
    const job = sharedJob(stored, root, chunk);
    // Not awaited: the chunks it finished are flagged in job.done (one it failed on is not, and is statted below).
    input.helper.statShared(job).catch(() => undefined);
    const mine = new Uint8Array(chunks);
    for (let c = Atomics.add(job.control, NEXT, 1); c < chunks; c = Atomics.add(job.control, NEXT, 1)) {
      mine[c] = 1;
      if (!statRange(stored, c * chunk, Math.min(count, (c + 1) * chunk), shadowed, root, pathOf, racyFromMs, coarseFromMs, stale)) {
        Atomics.store(job.control, ABORT, 1);
        return undefined;
      }
    }
    // Every chunk is claimed. The helper holds one only while BUSY is set: wait for it to write that one's stats.
    // (A helper that died holding one is given 5 s: then this thread stats everything itself.)
    if (Atomics.load(job.control, BUSY) !== 0 && Atomics.wait(job.control, BUSY, 1, input.helperWaitMs ?? HELPER_WAIT_MS) === 'timed-out') {
      Atomics.store(job.control, ABORT, 1);
      return quickCheck({ ...input, helper: undefined });
    }
    const cached = new Float64Array(3);
    for (let c = 0; c < chunks; c++) {
      if (mine[c] === 1) continue;
      if (Atomics.load(job.done, c) === 0) {
        // Claimed by the helper, which failed on it.
        if (!statRange(stored, c * chunk, Math.min(count, (c + 1) * chunk), shadowed, root, pathOf, racyFromMs, coarseFromMs, stale)) return undefined;
        continue;
      }
      for (let i = c * chunk, end = Math.min(count, (c + 1) * chunk); i < end; i++) {
        if (shadowed.size > 0 && shadowed.has(i)) continue;
        const j = i * STAT_FIELDS;
        if (unchanged(stored, i, job.stats, j, cached, racyFromMs, coarseFromMs)) continue;
        const leaf = staleLeaf(cachedAt(stored, i), job.stats, j, stored.kindCodeAt(i) === 2);
        if (leaf === undefined) return undefined;
        stale.push({ at: i, leaf });
      }
    }
  }
  // In record order, whichever thread found them.
  const leaves = stale.sort((a, b) => a.at - b.at).map((s) => s.leaf);
  for (const record of overlay.values()) {
    if (record === undefined) continue;
    if (NON_ASCII.test(record.path)) return undefined;
    statOne(record.path === '' ? root : `${root}/${record.path}`, stat, 0);
    const isDir = record.kind === 'dir';
    const same = stat[0] === STAT_KIND[KIND_CODE[record.kind]] && (isDir || stat[1] === record.size) && stat[2] === record.mtimeMs && stat[3] === record.ino && settledMtime(record.mtimeMs, racyFromMs, coarseFromMs);
    if (same) continue;
    const verdict = staleLeaf(record, stat, 0, isDir);
    if (verdict === undefined) return undefined;
    leaves.push(verdict);
  }
  return leaves;
}

/**
 * lstat of records `from` to `to` (but the shadowed ones) on this thread, each compared with its cached stat; the
 * stale leaves go to `stale` with their record numbers. False when the check cannot decide (see {@link staleLeaf}).
 * A function of its own, and a small one: it loops over every record, so V8 compiles it while it runs (on-stack
 * replacement), and the time that compilation takes grows with the code of the whole function.
 */
function statRange(
  stored: RecordBody,
  from: number,
  to: number,
  shadowed: ReadonlySet<number>,
  root: string,
  pathOf: (start: number, length: number) => Buffer,
  racyFromMs: number,
  coarseFromMs: number,
  stale: { at: number; leaf: StaleLeaf }[],
): boolean {
  const { starts } = stored.raw;
  const stat = new Float64Array(STAT_FIELDS);
  const cached = new Float64Array(3);
  const anyShadowed = shadowed.size > 0;
  for (let i = from; i < to; i++) {
    if (anyShadowed && shadowed.has(i)) continue;
    const start = starts[i]! + 5;
    statOne(i === 0 ? root : pathOf(start, stored.pathEnd(i) - start), stat, 0);
    if (unchanged(stored, i, stat, 0, cached, racyFromMs, coarseFromMs)) continue;
    const leaf = staleLeaf(cachedAt(stored, i), stat, 0, stored.kindCodeAt(i) === 2);
    if (leaf === undefined) return false;
    stale.push({ at: i, leaf });
  }
  return true;
}

/**
 * The {@link SharedStatJob} over `stored`'s records: their bytes and starts on SharedArrayBuffers (copied there
 * unless already on one: see `StatIndex.read`), and the stats, done flags and counters it fills.
 */
function sharedJob(stored: RecordBody, root: string, chunk: number): SharedStatJob {
  const { body, starts } = stored.raw;
  return {
    bytes: onShared(body),
    starts: onShared(starts),
    root,
    stats: new Float64Array(new SharedArrayBuffer(starts.length * STAT_FIELDS * 8)),
    done: new Uint8Array(new SharedArrayBuffer(Math.ceil(starts.length / chunk))),
    control: new Int32Array(new SharedArrayBuffer(3 * 4)),
    chunk,
  };
}

/**
 * Copies on shared memory of arrays that are not, made once per array: an engine that stays open rescans from the
 * same tree in memory, whose records would otherwise be copied (megabytes) at every scan.
 */
const sharedCopies = new WeakMap<Uint8Array | Int32Array, Uint8Array | Int32Array>();

/** `array` itself when it is on a SharedArrayBuffer, else its copy on one (see {@link sharedCopies}). */
function onShared<T extends Uint8Array | Int32Array>(array: T): T {
  if (array.buffer instanceof SharedArrayBuffer) return array;
  let copy = sharedCopies.get(array);
  if (copy === undefined) {
    const buffer = new SharedArrayBuffer(array.byteLength);
    copy = array instanceof Int32Array ? new Int32Array(buffer) : new Uint8Array(buffer);
    copy.set(array);
    sharedCopies.set(array, copy);
  }
  return copy as T;
}

/**
 * The path of a record as `prefix` and its bytes in `body`, in a buffer reused for every path of the same length:
 * one lstat per file then allocates nothing (a string per path costs a young-generation collection every few
 * thousand files).
 */
function pathBytes(prefix: string, body: Buffer): (start: number, length: number) => Buffer {
  const head = Buffer.from(prefix, 'utf8');
  const byLength: (Buffer | undefined)[] = [];
  return (start, length) => {
    let buffer = byLength[length];
    if (buffer === undefined) {
      buffer = Buffer.allocUnsafeSlow(head.length + length);
      head.copy(buffer, 0);
      byLength[length] = buffer;
    }
    const at = head.length;
    for (let k = 0; k < length; k++) buffer[at + k] = body[start + k]!;
    return buffer;
  };
}

/** Whether the stat at `j` of `stats` matches record `i`'s cached stat, which is older than the racy window. */
function unchanged(stored: RecordBody, i: number, stats: Float64Array, j: number, cached: Float64Array, racyFromMs: number, coarseFromMs: number): boolean {
  const code = stored.kindCodeAt(i);
  stored.statAt(i, cached, 0);
  // A directory's stored size is its number of children, not its stat's size.
  return stats[j] === STAT_KIND[code] && (code === 2 || stats[j + 1] === cached[0]) && stats[j + 2] === cached[1] && stats[j + 3] === cached[2] && settledMtime(cached[1]!, racyFromMs, coarseFromMs);
}

/**
 * Whether the process's working directory is `dir`: by name, and as the same directory (a directory renamed away
 * from `dir` keeps being the working directory of a process that was in it). False when it cannot be read.
 */
function workingDirectoryIs(dir: string): boolean {
  try {
    if (process.cwd() !== dir) return false;
  } catch {
    return false; // removed
  }
  const both = new Float64Array(2 * STAT_FIELDS);
  statOne('.', both, 0);
  statOne(dir, both, 1);
  return both[0] === 4 && both[4] === 4 && both[3] === both[7] && both[2] === both[6];
}

/** Record `i` as the quick check knows it. */
function cachedAt(stored: RecordBody, i: number): CachedRecord {
  const stat = new Float64Array(3);
  stored.statAt(i, stat, 0);
  return { path: stored.pathAt(i), kind: stored.kindAt(i), size: stat[0]!, mtimeMs: stat[1]!, ino: stat[2]! };
}

/** A leaf whose stat changed, or undefined when the change needs the full listing (see {@link quickCheck}). */
function staleLeaf(record: CachedRecord, stats: Float64Array, j: number, isDir: boolean): StaleLeaf | undefined {
  const kind = stats[j];
  if (isDir || (kind !== 1 && kind !== 2)) return undefined; // a directory changed, or an entry vanished or changed into one
  if (record.path === '.gitignore' || record.path.endsWith('/.gitignore')) return undefined; // the rules may have changed
  return { record, kind: kind === 1 ? 'file' : 'symlink', size: stats[j + 1]!, mtimeMs: stats[j + 2]!, ino: stats[j + 3]! };
}
