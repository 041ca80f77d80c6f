import { RecordBody } from './record-body.js';
import type { HashBackend } from './hash.js';
import { parseBasis, type NodeRecord, type ScanBasis } from './tree.js';
import type { TreeJournalEntry } from './tree-journal.js';

/**
 * `.merkle/tree.stat`: the stat cache of a tree file on its own, laid out for one sequential read, like git's index.
 * A rescan that finds nothing changed needs only each record's kind, path and cached stat; the tree file also holds
 * two 32-byte hashes per record (over half its bytes) and is checked record by record as a tree, which took more
 * CPU than reading it. The stat index is derived from the tree file's bytes whenever that file is written, names it
 * by its checksum and record count, and is only ever a cache: missing, damaged or naming another tree file, it is
 * ignored and the tree file serves.
 *
 * Layout: magic `MRKLSTAT`, u32 format, the 32-byte checksum of the tree file it mirrors, the BLAKE3 of everything
 * after this field, u32 record count, the root's 32-byte NodeID, u8 1 when every path is ASCII (else 0); then per record, in the tree file's order: u8 kind,
 * u32 path length, path (UTF-8), f64 size, f64 mtimeMs, f64 ino; then u32 length and the scan basis as JSON. Numbers
 * are big-endian, as in the tree file.
 */
const MAGIC = Buffer.from('MRKLSTAT', 'latin1');
const FORMAT = 1;
/** Offsets in the stat index: tree checksum, own checksum, count, root NodeID, first record. */
const TREE_SUM = 12;
const OWN_SUM = 44;
const COUNT = 76;
const ROOT_ID = 80;
/** 1 when every path is ASCII (as the tree file the index was made from says), else 0. */
const ASCII = 112;
const RECORDS = 113;
/** Offsets in a tree file (see `Tree.encode`): its checksum and its record count, and its first record. */
const TREE_FILE_SUM = 12;
const TREE_FILE_COUNT = 44;
const TREE_FILE_RECORDS = 48;
/** Bytes after a path: three f64 in both files, then two 32-byte hashes in the tree file only. */
const STAT_BYTES = 24;
const HASH_BYTES = 64;

/** The bytes of a tree file's header a stat index must agree with (see {@link treeHeaderBytes}). */
export const TREE_HEADER_BYTES = TREE_FILE_RECORDS;

/**
 * The stat index of an encoded tree file (its bytes as `Tree.encode` made them, already checked), or undefined when
 * they are not a tree file of the layout this module knows.
 */
export function encodeStatIndex(tree: Buffer, backend: HashBackend): Buffer | undefined {
  if (tree.length < TREE_FILE_RECORDS) return undefined;
  const count = tree.readUInt32BE(TREE_FILE_COUNT);
  const out = Buffer.allocUnsafe(tree.length - count * HASH_BYTES - TREE_FILE_RECORDS + RECORDS);
  MAGIC.copy(out, 0);
  out.writeUInt32BE(FORMAT, 8);
  tree.copy(out, TREE_SUM, TREE_FILE_SUM, TREE_FILE_SUM + 32);
  out.writeUInt32BE(count, COUNT);
  let from = TREE_FILE_RECORDS;
  let to = RECORDS;
  let ascii = 1;
  for (let i = 0; i < count; i++) {
    if (from + 5 > tree.length) return undefined;
    const fixed = 5 + tree.readUInt32BE(from + 1) + STAT_BYTES;
    if (from + fixed + HASH_BYTES > tree.length) return undefined;
    tree.copy(out, to, from, from + fixed);
    if (ascii === 1) for (let k = from + 5; k < from + fixed - STAT_BYTES; k++) if (tree[k]! >= 0x80) ascii = 0;
    if (i === 0) tree.copy(out, ROOT_ID, from + fixed + 32, from + fixed + HASH_BYTES);
    from += fixed + HASH_BYTES;
    to += fixed;
  }
  out[ASCII] = ascii;
  // The scan basis: the rest of the tree file.
  tree.copy(out, to, from);
  if (to + tree.length - from !== out.length) return undefined;
  backend.digest(out.subarray(COUNT)).copy(out, OWN_SUM);
  return out;
}

/**
 * The records of a stat index read in place (the same interface as the tree file's `StoredNodes` offers the quick
 * check): kind, path and cached stat per record, a lookup by path, and the raw bytes for the stat helper thread.
 */
export class StatIndex extends RecordBody {
  private constructor(
    body: Buffer,
    starts: Int32Array,
    ascii: boolean,
    /** The root's NodeID in the tree file, as hex. */
    readonly rootId: string,
    readonly basis: ScanBasis | undefined,
  ) {
    super(body, starts, ascii);
  }

  /**
   * Reads a stat index and checks that it mirrors the tree file whose first {@link TREE_HEADER_BYTES} bytes are
   * `treeHeader`: its own checksum, the tree file's checksum and record count, every record in bounds and of a
   * known kind, the first one the root (see {@link scanRecords}). Undefined when any of this fails: the caller reads
   * the tree file instead.
   */
  static read(data: Buffer, treeHeader: Buffer, backend: HashBackend): StatIndex | undefined {
    if (data.length < RECORDS || treeHeader.length < TREE_FILE_RECORDS || !data.subarray(0, 8).equals(MAGIC) || data.readUInt32BE(8) !== FORMAT) return undefined;
    if (!data.subarray(TREE_SUM, TREE_SUM + 32).equals(treeHeader.subarray(TREE_FILE_SUM, TREE_FILE_SUM + 32))) return undefined;
    const count = data.readUInt32BE(COUNT);
    if (count === 0 || count !== treeHeader.readUInt32BE(TREE_FILE_COUNT)) return undefined;
    if (!backend.digest(data.subarray(COUNT)).equals(data.subarray(OWN_SUM, OWN_SUM + 32))) return undefined;
    // On shared memory when the bytes are (see readStatView): the quick check's helper thread reads both.
    const starts = data.buffer instanceof SharedArrayBuffer ? new Int32Array(new SharedArrayBuffer(count * 4)) : new Int32Array(count);
    const end = scanRecords(data, starts);
    if (end === undefined) return undefined;
    const basis = basisAt(data, end);
    if (basis === null) return undefined;
    return new StatIndex(data, starts, data[ASCII] === 1, data.toString('hex', ROOT_ID, ROOT_ID + 32), basis);
  }
}

/**
 * Where each record starts (into `starts`); the offset after the last one, or undefined when a record is out of
 * bounds, of an unknown kind, or the first is not the root. Nothing more is checked, and nothing per byte of a path
 * (that doubled the cost of reading the index): the checksum rules out damage, and the index is only ever used to
 * find what changed. A forged index can make the quick check lstat other paths or miss a change, as a forged tree
 * file could; the records of stale leaves are taken from the tree file, which is checked as a tree, before anything
 * is read or stored (see `scan.ts`).
 */
function scanRecords(data: Buffer, starts: Int32Array): number | undefined {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const size = data.length;
  let o = RECORDS;
  if (o + 5 > size || data[o] !== 2 || view.getUint32(o + 1) !== 0) return undefined;
  for (let i = 0; i < starts.length; i++) {
    if (o + 5 + STAT_BYTES > size) return undefined;
    const code = data[o]!;
    if (code < 1 || code > 3) return undefined;
    starts[i] = o;
    o += 5 + STAT_BYTES + view.getUint32(o + 1);
  }
  return o > size ? undefined : o;
}

/** The scan basis at `o` (undefined: none recorded), or null when malformed or not at the very end. */
function basisAt(data: Buffer, o: number): ScanBasis | undefined | null {
  if (o + 4 > data.length) return null;
  const end = o + 4 + data.readUInt32BE(o);
  if (end !== data.length) return null;
  const basis = parseBasis(data.toString('utf8', o + 4, end));
  return basis === undefined ? null : (basis ?? undefined);
}


/** A stat index with the tree journal applied on top: what the quick check needs of the stored tree. */
export interface StatView {
  readonly stored: StatIndex;
  /** Records the journal added or replaced since the tree file, and paths it removed (undefined). */
  readonly overlay: ReadonlyMap<string, NodeRecord | undefined>;
  readonly basis: ScanBasis | undefined;
  /** Root NodeID and node count of the stored tree (tree file and journal). */
  readonly rootId: string;
  readonly size: number;
}

/**
 * The stat index with journal entries applied as `Tree.applyJournal` applies them to the tree file. Unlike that,
 * it does not check that each directory an entry touched lists only existing records (a lookup per child: at a
 * journal near compaction, more CPU than the rest of an unchanged rescan): each entry's checksum rules out damage,
 * and a scan that finds a change reads the tree file, which is checked in full. Undefined when the root is gone.
 */
export function statView(stored: StatIndex, entries: readonly TreeJournalEntry[]): StatView | undefined {
  const overlay = new Map<string, NodeRecord | undefined>();
  const has = (path: string): boolean => (overlay.has(path) ? overlay.get(path) !== undefined : stored.indexOf(path) >= 0);
  let basis = stored.basis;
  for (const entry of entries) {
    for (const path of entry.removed) if (has(path)) overlay.set(path, undefined);
    for (const record of entry.upserts) overlay.set(record.path, record);
    basis = entry.basis ?? undefined;
  }
  if (!has('')) return undefined;
  let size = stored.size;
  for (const [path, record] of overlay) {
    const inBase = stored.indexOf(path) >= 0;
    if (record === undefined) size -= inBase ? 1 : 0;
    else size += inBase ? 0 : 1;
  }
  return { stored, overlay, basis, rootId: overlay.get('')?.nodeId ?? stored.rootId, size };
}
