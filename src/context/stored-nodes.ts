import type { NodeKind, NodeRecord } from './tree.js';

const KIND_BY_CODE: Record<number, NodeKind | undefined> = { 1: 'file', 2: 'dir', 3: 'symlink' };
const SLASH = 0x2f;
/** Bytes of a record after its path: size, mtimeMs, ino (f64 each), content hash, NodeID (32 bytes each). */
const FIXED_BYTES = 24 + 64;

/**
 * The records of a stored tree file, read in place: one pass over the file checks its structure and finds where
 * each record starts and where its subtree ends, and a record becomes an object only when asked for. A rescan of an
 * unchanged workspace then costs one small object per path (no hex strings, no map of every path), and a lookup by
 * path is a binary search over the file's canonical order (parents before children, children by code point: the
 * order of paths compared component by component).
 *
 * Record layout: u8 kind, u32 path length, path (UTF-8), f64 size, f64 mtimeMs, f64 ino, 32-byte content hash,
 * 32-byte NodeID.
 */
export class StoredNodes {
  private readonly cache: (StoredRecord | undefined)[];

  private constructor(
    private readonly body: Buffer,
    /** Where each record starts in `body`. */
    private readonly starts: Int32Array,
    /** Index of the first record after each record's subtree (the next record for a leaf). */
    private readonly ends: Int32Array,
    readonly leafCount: number,
  ) {
    this.cache = new Array<StoredRecord | undefined>(starts.length);
  }

  /**
   * Reads `count` records from `body` at `offset`, checking that each kind is known, that the first record is the
   * root directory, that every other one is a direct child of a directory before it, and that paths strictly
   * increase in canonical order (so no path appears twice). Calls `corrupt` with the reason otherwise. Returns the
   * records and the offset after them.
   */
  static read(body: Buffer, offset: number, count: number, corrupt: (why: string) => never): { nodes: StoredNodes; end: number } {
    const starts = new Int32Array(count);
    const ends = new Int32Array(count);
    /** Indices of the open directories, root first. */
    const open: number[] = [];
    let leafCount = 0;
    let o = offset;
    let previousPath = -1;
    let previousLength = 0;
    for (let i = 0; i < count; i++) {
      if (o + 5 > body.length) corrupt(`truncated at entry ${i}`);
      const kind = KIND_BY_CODE[body[o]!] ?? corrupt(`unknown node kind ${body[o]} at entry ${i}`);
      const length = body.readUInt32BE(o + 1);
      const path = o + 5;
      if (path + length + FIXED_BYTES > body.length) corrupt(`truncated at entry ${i}`);
      starts[i] = o;
      if (i === 0) {
        if (length !== 0 || kind !== 'dir') corrupt('the first entry is not the root directory');
      } else {
        if (compareStoredPaths(body, previousPath, previousLength, path, length) >= 0) {
          corrupt(`entry '${body.toString('utf8', path, path + length)}' is out of order or appears twice`);
        }
        while (open.length > 0 && !isChildBytes(body, path, length, open[open.length - 1]!, starts)) ends[open.pop()!] = i;
        if (open.length === 0) corrupt(`entry '${body.toString('utf8', path, path + length)}' is not under the directory before it`);
      }
      if (kind === 'dir') open.push(i);
      else {
        ends[i] = i + 1;
        leafCount++;
      }
      previousPath = path;
      previousLength = length;
      o = path + length + FIXED_BYTES;
    }
    for (const i of open) ends[i] = count;
    return { nodes: new StoredNodes(body, starts, ends, leafCount), end: o };
  }

  get size(): number {
    return this.starts.length;
  }

  /** The record at position `i` of the file (made once, then the same object). */
  at(i: number): StoredRecord {
    let record = this.cache[i];
    if (record === undefined) {
      const o = this.starts[i]!;
      const body = this.body;
      const length = body.readUInt32BE(o + 1);
      const p = o + 5 + length;
      record = new StoredRecord(
        body.toString('utf8', o + 5, p),
        KIND_BY_CODE[body[o]!]!,
        body.readDoubleBE(p),
        body.readDoubleBE(p + 8),
        body.readDoubleBE(p + 16),
        this,
        i,
      );
      this.cache[i] = record;
    }
    return record;
  }

  /** The records of the children of the directory at position `i`, in order. */
  childRecordsAt(i: number): StoredRecord[] {
    const out: StoredRecord[] = [];
    const end = this.ends[i]!;
    for (let j = i + 1; j < end; j = this.ends[j]!) out.push(this.at(j));
    return out;
  }

  /** The raw file bytes the records are in, and where each record starts (for the stat helper thread). */
  get raw(): { readonly body: Buffer; readonly starts: Int32Array } {
    return { body: this.body, starts: this.starts };
  }

  /** Where the path of record `i` ends in the body. */
  pathEnd(i: number): number {
    const o = this.starts[i]!;
    return o + 5 + this.body.readUInt32BE(o + 1);
  }

  /** Kind code (1 file, 2 dir, 3 symlink) of record `i`. */
  kindCodeAt(i: number): number {
    return this.body[this.starts[i]!]!;
  }

  /** The path of record `i`, without making its record. */
  pathAt(i: number): string {
    const o = this.starts[i]!;
    return this.body.toString('utf8', o + 5, o + 5 + this.body.readUInt32BE(o + 1));
  }

  /** Size, mtimeMs and ino of record `i` into `out` at `j`. */
  statAt(i: number, out: Float64Array, j: number): void {
    const o = this.starts[i]!;
    const p = o + 5 + this.body.readUInt32BE(o + 1);
    out[j] = this.body.readDoubleBE(p);
    out[j + 1] = this.body.readDoubleBE(p + 8);
    out[j + 2] = this.body.readDoubleBE(p + 16);
  }

  /** The hex of the 32-byte hash at `field` (24: content hash, 56: NodeID) of record `i`. */
  hexAt(i: number, field: 24 | 56): string {
    const o = this.starts[i]!;
    const p = o + 5 + this.body.readUInt32BE(o + 1) + field;
    return this.body.toString('hex', p, p + 32);
  }

  /** Position of `path` in the file, or -1. */
  indexOf(path: string): number {
    const key = Buffer.from(path, 'utf8');
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const o = this.starts[mid]!;
      const c = compareStoredPaths(this.body, o + 5, this.body.readUInt32BE(o + 1), key, 0, key.length);
      if (c === 0) return mid;
      if (c < 0) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  get(path: string): NodeRecord | undefined {
    const i = this.indexOf(path);
    return i < 0 ? undefined : this.at(i);
  }

  has(path: string): boolean {
    return this.indexOf(path) >= 0;
  }

  *values(): IterableIterator<NodeRecord> {
    for (let i = 0; i < this.starts.length; i++) yield this.at(i);
  }

  *entries(): IterableIterator<[string, NodeRecord]> {
    for (const record of this.values()) yield [record.path, record];
  }
}

/**
 * A record of a stored tree. Its hashes and its children's paths are read from the file when first used; `toJSON`
 * and {@link plainRecord} give the plain object.
 */
export class StoredRecord implements NodeRecord {
  #nodeId: string | undefined;
  #contentHash: string | undefined;
  #children: readonly string[] | undefined;

  constructor(
    readonly path: string,
    readonly kind: NodeKind,
    readonly size: number,
    readonly mtimeMs: number,
    readonly ino: number,
    /** The records this one belongs to. */
    readonly store: StoredNodes,
    /** Its position in the file. */
    readonly index: number,
  ) {}

  get nodeId(): string {
    return (this.#nodeId ??= this.store.hexAt(this.index, 56));
  }

  get contentHash(): string {
    if (this.kind === 'dir') return '';
    return (this.#contentHash ??= this.store.hexAt(this.index, 24));
  }

  get children(): readonly string[] | undefined {
    if (this.kind !== 'dir') return undefined;
    return (this.#children ??= this.store.childRecordsAt(this.index).map((child) => child.path));
  }

  toJSON(): NodeRecord {
    return plainRecord(this);
  }
}

/** A record as a plain object (what the API hands out: spreading or serializing it keeps every field). */
export function plainRecord(record: NodeRecord): NodeRecord {
  if (!(record instanceof StoredRecord)) return record;
  const { path, kind, nodeId, contentHash, size, mtimeMs, ino, children } = record;
  return children === undefined ? { path, kind, nodeId, contentHash, size, mtimeMs, ino } : { path, kind, nodeId, contentHash, size, mtimeMs, ino, children: [...children] };
}

/**
 * Canonical order of two UTF-8 paths: byte order (= code point order) with `/` below every other byte, which is the
 * order of comparing them component by component, an ancestor first. `a` is in `body`; `b` in `other` (default
 * `body`).
 */
function compareStoredPaths(body: Buffer, a: number, aLength: number, other: Buffer | number, bOrLength: number, bLength?: number): number {
  let bBuf: Buffer;
  let b: number;
  let bLen: number;
  if (typeof other === 'number') {
    bBuf = body;
    b = other;
    bLen = bOrLength;
  } else {
    bBuf = other;
    b = bOrLength;
    bLen = bLength!;
  }
  const n = Math.min(aLength, bLen);
  for (let k = 0; k < n; k++) {
    const x = body[a + k]!;
    const y = bBuf[b + k]!;
    if (x === y) continue;
    if (x === SLASH) return -1;
    if (y === SLASH) return 1;
    return x - y;
  }
  return aLength - bLen;
}

/** Whether the path at `path` (`length` bytes) is a direct child of the directory record `dir`. */
function isChildBytes(body: Buffer, path: number, length: number, dir: number, starts: Int32Array): boolean {
  const o = starts[dir]!;
  const dirLength = body.readUInt32BE(o + 1);
  let from = 0;
  if (dirLength > 0) {
    if (length <= dirLength + 1 || body[path + dirLength] !== SLASH) return false;
    if (body.compare(body, o + 5, o + 5 + dirLength, path, path + dirLength) !== 0) return false;
    from = dirLength + 1;
  }
  for (let k = from; k < length; k++) if (body[path + k] === SLASH) return false;
  return length > from;
}
