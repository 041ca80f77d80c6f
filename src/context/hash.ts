/**
 * BLAKE3 hashing and the canonical byte encoding of every identifier the context engine derives.
 *
 * ## Canonical encoding (format version 1)
 *
 * All identifiers are 32-byte BLAKE3 digests (default, unkeyed mode), written as 64 lowercase hex characters.
 * Integers are unsigned 32-bit big-endian (`u32`). A string is `str(s) = u32(byteLength) || UTF-8 bytes`.
 * Identifiers inside an encoding are their 32 raw bytes (`id32`), never hex. Each derived hash starts with
 * `str(tag)` so that no two kinds of object can collide:
 *
 * | value | bytes hashed |
 * |---|---|
 * | content hash of a file | the file's raw bytes (no tag: equals `b3sum`) |
 * | content hash of a symlink | UTF-8 bytes of the link target |
 * | file NodeID | `str("merkle.node.file.v1") str(path) id32(contentHash)` |
 * | symlink NodeID | `str("merkle.node.symlink.v1") str(path) id32(contentHash)` |
 * | directory NodeID | `str("merkle.node.dir.v1") str(path) u32(n)` then per child, in name order: `u8(kind) str(name) id32(childId)` |
 * | basis of an agent-written frame | `str("merkle.basis.node.v1") id32(nodeId) str(agentId)` |
 * | basis of a synthesized frame | `str("merkle.basis.synthesis.v1") id32(dirNodeId) str(frameType) str(sourceType) str(agentId) str(policyKey) u32(n) id32(childFrameId)…` |
 * | FrameID | `str("merkle.frame.v1") id32(basis) str(path) str(frameType) str(agentId) str(content) str(canonicalJson(metadata))` |
 *
 * - `path` is workspace-relative, POSIX separators, Unicode NFC, no leading `./` or trailing `/`; the root is `""`.
 *   The absolute location of the workspace is never hashed, so moving a workspace changes no identifier.
 * - `kind` is 1 for a file, 2 for a directory, 3 for a symlink. Children are ordered by Unicode code point of their
 *   NFC name (equal to UTF-8 byte order), never by locale.
 * - Child frame ids of a synthesis basis are ordered by the child's path, then by FrameID.
 * - `policyKey` is `canonicalJson` of the synthesis policy (see `synthesis.ts`).
 * - `canonicalJson` is JSON with object keys sorted by code point, no whitespace, and `undefined` members dropped.
 *
 * @module
 */
import { ContextError } from './errors.js';
import type { HashBackend } from '../hash/blake3.js';

export { loadHashBackend, type HashBackend } from '../hash/blake3.js';

/** Kind codes used in directory encodings. */
export const KIND_CODE = { file: 1, dir: 2, symlink: 3 } as const;

/** Builds one canonical encoding (see the module documentation) in a single growing buffer, and hashes it. */
export class Encoder {
  private buf = Buffer.allocUnsafe(256);
  private length = 0;

  constructor(tag: string) {
    this.str(tag);
  }

  private reserve(bytes: number): void {
    if (this.length + bytes <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.length + bytes));
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }

  /** Appends `u32(n)`. */
  u32(n: number): this {
    this.reserve(4);
    this.length = putU32(this.buf, this.length, n);
    return this;
  }

  /** Appends `u8(n)`. */
  u8(n: number): this {
    if (!Number.isInteger(n) || n < 0 || n > 0xff) throw new RangeError(`u8 out of range: ${n}`);
    this.reserve(1);
    this.buf[this.length++] = n;
    return this;
  }

  /** Appends `str(s)`. */
  str(s: string): this {
    // At most 3 bytes per UTF-16 unit; the exact length is written after encoding.
    this.reserve(4 + s.length * 3);
    const written = this.buf.write(s, this.length + 4, 'utf8');
    putU32(this.buf, this.length, written);
    this.length += 4 + written;
    return this;
  }

  /** Appends the 32 raw bytes of a hex identifier. */
  id(hex: string): this {
    this.reserve(32);
    if (hex.length !== 64 || this.buf.write(hex, this.length, 'hex') !== 32) idBytes(hex); // throws the clear error
    this.length += 32;
    return this;
  }

  /** Appends the 32 bytes of an identifier held in `source` at `start` (no hex string made and read back). */
  idFrom(source: Uint8Array, start: number): this {
    this.reserve(32);
    const buf = this.buf;
    let at = this.length;
    for (let k = start, end = start + 32; k < end; k++) buf[at++] = source[k]!;
    this.length = at;
    return this;
  }

  /** The BLAKE3 digest of everything appended, as hex. */
  hash(backend: HashBackend): string {
    return backend.digest(this.buf.subarray(0, this.length)).toString('hex');
  }
}

/**
 * Writes `n` big-endian at `at` and returns the offset after it: the bytes stored directly (Buffer#writeUInt32BE
 * checks its arguments in JavaScript, which costs more than the write when a directory's id encodes thousands of
 * children).
 */
function putU32(buf: Buffer, at: number, n: number): number {
  if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw new RangeError(`u32 out of range: ${n}`);
  buf[at] = n >>> 24;
  buf[at + 1] = (n >>> 16) & 0xff;
  buf[at + 2] = (n >>> 8) & 0xff;
  buf[at + 3] = n & 0xff;
  return at + 4;
}

const HEX_ID = /^[0-9a-f]{64}$/;

/** True when `value` is a 64-character lowercase hex identifier. */
export function isHexId(value: string): boolean {
  return HEX_ID.test(value);
}

/** The 32 bytes of a hex identifier; throws a ContextError naming the bad value. */
export function idBytes(hex: string): Buffer {
  if (!isHexId(hex)) throw new ContextError('INVALID_ARGUMENT', `not a 64-hex identifier: '${hex}'`, { value: hex });
  return Buffer.from(hex, 'hex');
}

/** JSON with sorted object keys and no whitespace: the canonical form hashed into FrameIDs and policy keys. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort(compareCodePoints)) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = sortKeys(v);
    }
    return out;
  }
  return value;
}

/** Orders strings by Unicode code point (= UTF-8 byte order), independent of locale. */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // UTF-16 order differs from code point order only between a surrogate and a unit at or above U+E000.
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    if (xs !== ys) return xs ? 1 : -1;
    return x - y;
  }
  return a.length - b.length;
}
