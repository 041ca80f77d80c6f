import type { Encoder } from './hash.js';
import { KIND_BY_CODE, latin1Slice, RecordBody } from './record-body.js';
import type { NodeKind, NodeRecord } from './tree.js';

const SLASH = 0x2f;
const DIR_CODE = 2;
const DOT = 0x2e;
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
export class StoredNodes extends RecordBody {
  private readonly cache: (StoredRecord | undefined)[];

  private constructor(
    body: Buffer,
    starts: Int32Array,
    /** Index of the first record after each record's subtree (the next record for a leaf). */
    private readonly ends: Int32Array,
    readonly leafCount: number,
    ascii: boolean,
  ) {
    super(body, starts, ascii);
    this.cache = new Array<StoredRecord | undefined>(starts.length);
  }

  /**
   * Reads `count` records from `body` at `offset`, checking that each kind is known, that the first record is the
   * root directory, that every other one is a direct child of a directory before it (depth first), that siblings
   * strictly increase by name in code point order (together: paths strictly increase in canonical order, so no path
   * appears twice), and that no path holds a NUL byte or a '.' or '..' name. Calls `corrupt` with the reason
   * otherwise. Returns the records and the offset after them.
   */
  static read(body: Buffer, offset: number, count: number, corrupt: (why: string) => never): { nodes: StoredNodes; end: number } {
    const starts = new Int32Array(count);
    const ends = new Int32Array(count);
    // The open directories, root first: their index, where their path starts and its length, and where the name of
    // their last child so far starts and its length (-1: none yet). Names hold no '/', so their byte order is the
    // canonical order of siblings.
    const open: number[] = [];
    const openPath: number[] = [];
    const openLength: number[] = [];
    const lastName: number[] = [];
    const lastLength: number[] = [];
    let leafCount = 0;
    let ascii = true;
    const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
    let o = offset;
    for (let i = 0; i < count; i++) {
      if (o + 5 > body.length) corrupt(`truncated at entry ${i}`);
      const code = body[o]!;
      if (code < 1 || code > 3) corrupt(`unknown node kind ${code} at entry ${i}`);
      const length = view.getUint32(o + 1);
      const path = o + 5;
      if (path + length + FIXED_BYTES > body.length) corrupt(`truncated at entry ${i}`);
      starts[i] = o;
      if (i === 0) {
        if (length !== 0 || code !== DIR_CODE) corrupt('the first entry is not the root directory');
      } else {
        // Close the directories this path is not under; the one left open is its parent if it is a direct child.
        let top = open.length - 1;
        while (top >= 0) {
          const dirLength = openLength[top]!;
          if (dirLength === 0) break;
          if (length > dirLength + 1 && body[path + dirLength] === SLASH && sameBytes(body, openPath[top]!, path, dirLength)) break;
          ends[open.pop()!] = i;
          openPath.pop();
          openLength.pop();
          lastName.pop();
          lastLength.pop();
          top--;
        }
        const name = top < 0 ? path : path + (openLength[top] === 0 ? 0 : openLength[top]! + 1);
        const end = path + length;
        if (top < 0 || name === end) corrupt(`entry '${body.toString('utf8', path, end)}' is not under the directory before it`);
        for (let k = name; k < end; k++) {
          const byte = body[k]!;
          if (byte === SLASH) corrupt(`entry '${body.toString('utf8', path, end)}' is not under the directory before it`);
          if (byte === 0) corrupt(`entry ${i} has a NUL byte in its path`);
          if (byte >= 0x80) ascii = false;
        }
        // '.' and '..' are never listed; as stored names they would point outside the directory they are under.
        if (body[name] === DOT && (end === name + 1 || (end === name + 2 && body[name + 1] === DOT))) {
          corrupt(`entry '${body.toString('utf8', path, end)}' names '.' or '..'`);
        }
        const last = lastLength[top]!;
        if (last >= 0 && compareBytes(body, lastName[top]!, last, name, end - name) >= 0) {
          corrupt(`entry '${body.toString('utf8', path, end)}' is out of order or appears twice`);
        }
        lastName[top] = name;
        lastLength[top] = end - name;
      }
      if (code === DIR_CODE) {
        open.push(i);
        openPath.push(path);
        openLength.push(length);
        lastName.push(0);
        lastLength.push(-1);
      } else {
        ends[i] = i + 1;
        leafCount++;
      }
      o = path + length + FIXED_BYTES;
    }
    for (const i of open) ends[i] = count;
    return { nodes: new StoredNodes(body, starts, ends, leafCount, ascii), end: o };
  }

  /** The record at position `i` of the file (made once, then the same object). */
  at(i: number): StoredRecord {
    let record = this.cache[i];
    if (record === undefined) {
      const o = this.starts[i]!;
      const view = this.view;
      const p = o + 5 + view.getUint32(o + 1);
      record = new StoredRecord(
        this.ascii ? latin1Slice(this.body, o + 5, p) : this.body.toString('utf8', o + 5, p),
        KIND_BY_CODE[this.body[o]!]!,
        view.getFloat64(p),
        view.getFloat64(p + 8),
        view.getFloat64(p + 16),
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

  /** Where the 32-byte hash at `field` (24: content hash, 56: NodeID) of record `i` starts in the file. */
  private hashAt(i: number, field: 24 | 56): number {
    const o = this.starts[i]!;
    return o + 5 + this.view.getUint32(o + 1) + field;
  }

  /** The hex of the 32-byte hash at `field` (24: content hash, 56: NodeID) of record `i`. */
  hexAt(i: number, field: 24 | 56): string {
    const p = this.hashAt(i, field);
    return this.body.toString('hex', p, p + 32);
  }

  /** Appends the NodeID of record `i` to `enc` from the file's bytes. */
  appendNodeId(i: number, enc: Encoder): void {
    enc.idFrom(this.body, this.hashAt(i, 56));
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

// Byte loops rather than Buffer#compare: its argument checks cost more than comparing a few bytes of a path.

/** Whether the `length` bytes of `body` at `a` and at `b` are equal. */
function sameBytes(body: Buffer, a: number, b: number, length: number): boolean {
  for (let k = 0; k < length; k++) if (body[a + k] !== body[b + k]) return false;
  return true;
}

/** Byte order of the `aLength` bytes of `body` at `a` and the `bLength` bytes at `b`: negative, zero or positive. */
function compareBytes(body: Buffer, a: number, aLength: number, b: number, bLength: number): number {
  const n = Math.min(aLength, bLength);
  for (let k = 0; k < n; k++) {
    const d = body[a + k]! - body[b + k]!;
    if (d !== 0) return d;
  }
  return aLength - bLength;
}

