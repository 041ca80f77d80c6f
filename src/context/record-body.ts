import type { NodeKind } from './tree.js';

/** A record's kind by its code (see `KIND_CODE` in hash.ts). */
export const KIND_BY_CODE: readonly (NodeKind | undefined)[] = [undefined, 'file', 'dir', 'symlink'];

/**
 * Records read in place from a file's bytes (the tree file's `StoredNodes`, the stat index's `StatIndex`): each
 * record starts with its kind code (1 byte), its path's byte length (4 bytes, big-endian) and its path, followed by
 * its cached stat (size, mtimeMs, ino as three doubles) and what the file adds after that.
 */
export abstract class RecordBody {
  /** The body as a DataView: its number reads are single loads, where Buffer's read byte by byte in JavaScript. */
  protected readonly view: DataView;

  protected constructor(
    protected readonly body: Buffer,
    /** Where each record starts in `body`. */
    protected readonly starts: Int32Array,
    /** Every path is ASCII (so its UTF-8 bytes are its characters, and NFC leaves it as it is). */
    readonly ascii: boolean,
  ) {
    this.view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  }

  /** The number of records. */
  get size(): number {
    return this.starts.length;
  }

  /** Position of `path`, or -1 (records are in canonical path order). */
  indexOf(path: string): number {
    // With ASCII paths only, the key's characters are compared with the bytes as they are (a key with any other
    // character is not there); otherwise the key is encoded first.
    let key: Buffer | string = path;
    if (!this.ascii) key = Buffer.from(path, 'utf8');
    else if (NON_ASCII.test(path)) return -1;
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const o = this.starts[mid]!;
      const c = compareStoredPaths(this.body, o + 5, this.view.getUint32(o + 1), key);
      if (c === 0) return mid;
      if (c < 0) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /** The raw bytes the records are in, and where each record starts (for the stat helper thread). */
  get raw(): { readonly body: Buffer; readonly starts: Int32Array } {
    return { body: this.body, starts: this.starts };
  }

  /** Where the path of record `i` ends in the body. */
  pathEnd(i: number): number {
    const o = this.starts[i]!;
    return o + 5 + this.view.getUint32(o + 1);
  }

  /** Kind code (1 file, 2 dir, 3 symlink) of record `i`. */
  kindCodeAt(i: number): number {
    return this.body[this.starts[i]!]!;
  }

  /** The kind of record `i`. */
  kindAt(i: number): NodeKind {
    return KIND_BY_CODE[this.body[this.starts[i]!]!]!;
  }

  /** The path of record `i`, without making its record. */
  pathAt(i: number): string {
    const o = this.starts[i]!;
    const end = o + 5 + this.view.getUint32(o + 1);
    return this.ascii ? latin1Slice(this.body, o + 5, end) : this.body.toString('utf8', o + 5, end);
  }

  /** Size, mtimeMs and ino of record `i` into `out` at `j`. */
  statAt(i: number, out: Float64Array, j: number): void {
    const o = this.starts[i]!;
    const view = this.view;
    const p = o + 5 + view.getUint32(o + 1);
    out[j] = view.getFloat64(p);
    out[j + 1] = view.getFloat64(p + 8);
    out[j + 2] = view.getFloat64(p + 16);
  }
}

const SLASH = 0x2f;
const NON_ASCII = /[^\0-\x7f]/;

/**
 * Canonical order of two UTF-8 paths: byte order (= code point order) with `/` below every other byte, which is the
 * order of comparing them component by component, an ancestor first. `a` is in `body`; `key` is UTF-8 bytes, or a
 * string of ASCII characters (each its own byte).
 */
function compareStoredPaths(body: Buffer, a: number, aLength: number, key: Buffer | string): number {
  const bLength = key.length;
  const n = Math.min(aLength, bLength);
  const text = typeof key === 'string';
  for (let k = 0; k < n; k++) {
    const x = body[a + k]!;
    const y = text ? key.charCodeAt(k) : key[k]!;
    if (x === y) continue;
    if (x === SLASH) return -1;
    if (y === SLASH) return 1;
    return x - y;
  }
  return aLength - bLength;
}

/**
 * The characters of Latin-1 bytes: Buffer's own `latin1Slice` where it has one (what `toString('latin1')` calls
 * after looking the encoding up by name, once per call), else `toString`.
 */
export const latin1Slice: (body: Buffer, start: number, end: number) => string =
  typeof (Buffer.prototype as { latin1Slice?: unknown }).latin1Slice === 'function'
    ? (body, start, end) => (body as Buffer & { latin1Slice(start: number, end: number): string }).latin1Slice(start, end)
    : (body, start, end) => body.toString('latin1', start, end);
