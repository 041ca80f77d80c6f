/**
 * The chain hashes of the event log (DESIGN D15): events.jsonl is tamper-evident.
 *
 * A sealed line is a stored event whose JSON ends with a `chain` field: `{...,"chain":"<64 hex>"}`. Its value is
 *
 *     chain = BLAKE3(previous chain (32 bytes) || N || the lines since the previous sealed line || this line
 *             without its chain field), lines as stored, each with its newline
 *
 * where N is the sealed line's number in the log (counted from 0) as 8 bytes, big-endian, and the chain before the
 * first sealed line is the run's genesis, `BLAKE3("backpackflow.events.chain.v1\n" +
 * sessionKey + "\n" + runId)`, so a log copied into another run does not verify. The writer seals the last line of
 * every batch (a step's events) and the first line of the log, so:
 * - a log whose first line is sealed was written with chain hashes: lines after its last sealed line were cut from
 *   a batch or damaged, and are not served;
 * - a log with no sealed line at all was written before chain hashes existed, or had its chain fields removed
 *   (which takes no hash): readers serve it with a warning that nothing proves it unchanged, `verify` calls it
 *   unverifiable (not ok), and no writer continues it.
 *
 * N makes the chain prove where each line is, not only what it holds: a reader that starts in the middle of the log
 * (at an index entry) learns from the first batch it verifies whether it counted lines right, without counting the
 * lines before it. Logs written before N was hashed (chain format 'v1', until backpackflow 0.1.0 of 2026-11-28) are
 * still read, verified and continued in their own format: a {@link ChainReader} tells the two apart at the first
 * sealed line it checks (a hash with N never matches the formula without it), and {@link chainFormatOf} does so from
 * a log's first line.
 *
 * The field is storage-only: the event schema strips it, so readers hand out the event as it was emitted.
 */
import { closeSync, readSync } from 'node:fs';
import { openRunFile } from './read-files.js';
import type { HashBackend } from '../hash/blake3.js';

const PREFIX = ',"chain":"';
const PREFIX_BYTES = Buffer.from(PREFIX);
/** `,"chain":"` + 64 hex + `"}`. */
const SUFFIX_LENGTH = PREFIX.length + 64 + 2;
const HEX = /^[0-9a-f]{64}$/;
const NEWLINE = Buffer.from('\n');
const CLOSE = Buffer.from('}\n');

/**
 * The BLAKE3 backend of the chain: hash-wasm for the many small inputs (its calls cost less than the native
 * binding's), the native binding for large batches (see NATIVE_FROM_BYTES).
 */
export const CHAIN_BACKEND = 'by-size';

/**
 * How a log's chain hashes are computed: 'v2' hashes each sealed line's number with it (see above), 'v1' (logs
 * written before that) does not.
 */
export type ChainFormat = 'v1' | 'v2';

/** The format every new log is written in. */
export const CHAIN_FORMAT: ChainFormat = 'v2';

/** Where a batch starts: the number of its first line in the log, and the log's chain format. */
export interface ChainPosition {
  line: number;
  format: ChainFormat;
}

/**
 * The chain hash of a sealed line (see above): the previous chain, N (the line's number `line`, as 8 bytes big-endian;
 * nothing in a 'v1' log), then `lines`, the bytes since the previous sealed line up to this one without its field.
 */
function chainDigest(backend: HashBackend, previous: Uint8Array, line: number, format: ChainFormat, lines: readonly (Uint8Array | string)[]): Buffer {
  if (format === 'v1') return backend.digestOf([previous, ...lines]);
  const tag = Buffer.allocUnsafe(8);
  tag.writeUInt32BE(Math.floor(line / 0x1_0000_0000), 0);
  tag.writeUInt32BE(line >>> 0, 4);
  return backend.digestOf([previous, tag, ...lines]);
}

/** The chain before the first sealed line of run `sessionKey/runId`. */
export function genesis(backend: HashBackend, sessionKey: string, runId: string): Buffer {
  return backend.digest(Buffer.from(`backpackflow.events.chain.v1\n${sessionKey}\n${runId}`));
}

/**
 * How many bytes at the end of a sealed line hold its seal (`,"chain":"` + 64 hex + `"}`): the line's last
 * `SEAL_LENGTH + 1` bytes are enough for {@link chainOf} to find its chain hash.
 */
export const SEAL_LENGTH = SUFFIX_LENGTH;

/** The chain hash a stored line (its bytes, without the newline) carries, or undefined when it is not sealed. */
export function chainOf(line: Buffer): string | undefined {
  const n = line.length;
  if (n <= SUFFIX_LENGTH || line[n - 1] !== 0x7d || line[n - 2] !== 0x22) return undefined;
  const at = n - SUFFIX_LENGTH;
  if (line.compare(PREFIX_BYTES, 0, PREFIX_BYTES.length, at, at + PREFIX_BYTES.length) !== 0) return undefined;
  const hex = line.toString('latin1', at + PREFIX_BYTES.length, n - 2);
  return HEX.test(hex) ? hex : undefined;
}

/**
 * A line longer than this is hashed and written from Buffers made once, never joined with others nor copied again.
 * A line given as Buffers (the pieces of a large event's JSON, see fs/json-pieces.ts) is used as it is.
 */
export const LARGE_LINE = 1 << 16;

/** A batch sealed by {@link sealBatch}, ready to be written. */
export interface SealedBatch {
  /** The chain after the batch. */
  head: Buffer;
  /**
   * The batch's bytes in order, as written: small lines joined into strings, a large line as its own Buffer (with
   * its newline or seal in the next piece), so that a line of hundreds of megabytes exists once as text and once as
   * bytes, never more.
   */
  pieces: (string | Buffer)[];
  /** The size of the batch in bytes. */
  bytes: number;
  /**
   * Per line, what replaces its closing `}` and newline when the line is sealed (undefined: not sealed). Stores that
   * keep lines apart (Postgres rows) build a sealed line's text from it.
   */
  seals: readonly (string | undefined)[];
  /**
   * The size in bytes of each stored line, newline included (computed when asked; for a batch written from the
   * caller's scratch buffer, only until that buffer is reused).
   */
  lineBytes: () => number[];
}

/**
 * Seals a batch about to be written: `lines` (JSON texts ending with `}`, without their newline) get the chain field
 * on the last one, and on the first one too when `sealFirst`. `start` is the chain of the log so far (the genesis
 * for a new log); `at` is the number of the batch's first line in the log and the log's chain format. One digest
 * call per sealed line; small lines are hashed and written as one text, a large one (over
 * {@link LARGE_LINE}) as a Buffer made once for both.
 */
export function sealBatch(backend: HashBackend, start: Buffer, lines: readonly (string | Buffer[])[], sealFirst: boolean, at: ChainPosition, scratch?: Buffer): SealedBatch {
  let chars = 0;
  for (const line of lines) {
    if (typeof line !== 'string' || line.length > LARGE_LINE) {
      chars = -1;
      break;
    }
    chars += line.length;
  }
  if (chars >= 0) return sealText(backend, start, lines as readonly string[], sealFirst, at, chars, scratch);
  const stored = lines.map((line) => (typeof line === 'string' && line.length > LARGE_LINE ? [Buffer.from(line)] : line));
  /** What replaces the closing `}` and newline of a sealed line. */
  const seals: (string | undefined)[] = new Array(lines.length);
  let head = start;
  let from = 0;
  const sealAt = (i: number): void => {
    // The hashed bytes are the lines as they were (each with its newline), after the previous chain.
    const parts: (string | Buffer)[] = [];
    let text = '';
    for (let j = from; j <= i; j++) {
      const line = stored[j]!;
      if (typeof line === 'string') text += `${line}\n`;
      else {
        if (text !== '') parts.push(text);
        parts.push(...line);
        text = '\n';
      }
    }
    parts.push(text);
    head = chainDigest(backend, head, at.line + i, at.format, parts);
    seals[i] = `${PREFIX}${head.toString('hex')}"}\n`;
    from = i + 1;
  };
  if (sealFirst && lines.length > 1) sealAt(0);
  sealAt(lines.length - 1);
  const pieces: (string | Buffer)[] = [];
  let text = '';
  for (let i = 0; i < stored.length; i++) {
    const line = stored[i]!;
    const seal = seals[i];
    if (typeof line === 'string') text += seal === undefined ? `${line}\n` : `${line.slice(0, line.length - 1)}${seal}`;
    else {
      if (text !== '') pieces.push(text);
      const last = line.length - 1;
      for (let j = 0; j < last; j++) pieces.push(line[j]!);
      // A sealed line loses its closing brace to the seal (the last piece ends with it).
      pieces.push(seal === undefined ? line[last]! : line[last]!.subarray(0, line[last]!.length - 1));
      text = seal ?? '\n';
    }
  }
  pieces.push(text);
  let bytes = 0;
  for (const piece of pieces) bytes += typeof piece === 'string' ? Buffer.byteLength(piece) : piece.length;
  const lineBytes = (): number[] => stored.map((line, i) => storedLineBytes(typeof line === 'string' ? Buffer.byteLength(line) : line.reduce((sum, piece) => sum + piece.length, 0), seals[i]));
  return { head, pieces, bytes, lineBytes, seals };
}

/** The size of a stored line, newline included, from the bytes of its JSON (`body`) and its seal (see SealedBatch.seals). */
function storedLineBytes(body: number, seal: string | undefined): number {
  // A seal replaces the closing `}` and the newline; its text is ASCII.
  return seal === undefined ? body + 1 : body - 1 + seal.length;
}

/** `,"chain":"` + 64 hex + `"}` and the newline, less the `}` and newline they replace. */
const SEAL_EXTRA = SUFFIX_LENGTH - 1;

/** The size of each line of `bytes` (whole lines, each with its newline): what a batch sealed by sealText holds. */
function lineSizes(bytes: Buffer): number[] {
  const sizes: number[] = [];
  for (let from = 0; from < bytes.length; ) {
    const end = bytes.indexOf(0x0a, from) + 1;
    sizes.push(end - from);
    from = end;
  }
  return sizes;
}

/**
 * Writes into `out` from offset `from` the seal of the lines `out[start, at)` (each with its newline), in place of
 * the last one's closing brace and newline; returns the new chain and the seal's text. `at` is then `from` + the
 * seal's length.
 */
function sealInPlace(backend: HashBackend, previous: Buffer, position: ChainPosition, out: Buffer, start: number, at: number): { head: Buffer; seal: string } {
  // The hashed bytes are the lines as they were (each with its newline), after the previous chain and N.
  const head = chainDigest(backend, previous, position.line, position.format, [out.subarray(start, at)]);
  const seal = `${PREFIX}${head.toString('hex')}"}\n`;
  out.write(seal, at - 2, 'latin1');
  return { head, seal };
}

/**
 * {@link sealBatch} of text lines none of which is large: each line is encoded once, as UTF-8 into one Buffer (the
 * caller's `scratch` when the batch surely fits in it, which then holds the result until the caller reuses it: so
 * does `lineBytes`, which reads the line ends from it), whose bytes are hashed and written as they are; a seal is
 * written in place of the closing brace and newline it replaces once the line's hash is known.
 */
function sealText(backend: HashBackend, start: Buffer, lines: readonly string[], sealFirst: boolean, position: ChainPosition, chars: number, scratch: Buffer | undefined): SealedBatch {
  const count = lines.length;
  const sealedCount = sealFirst && count > 1 ? 2 : 1;
  // The lines are written after room for what the last seal hashes before them (the previous chain and N), so that
  // its digest is one call over one contiguous range. At most 3 bytes per UTF-16 unit; exact sizes are counted only
  // when that bound does not fit the scratch.
  let room = HASHED_PREFIX + chars * 3 + count + sealedCount * SEAL_EXTRA;
  let out: Buffer;
  if (scratch !== undefined && room <= scratch.length) out = scratch;
  else {
    room = HASHED_PREFIX + count + sealedCount * SEAL_EXTRA;
    for (const line of lines) room += Buffer.byteLength(line);
    out = Buffer.allocUnsafe(room);
  }
  const seals: (string | undefined)[] = new Array(count);
  let head = start;
  let at = HASHED_PREFIX;
  let first = 0;
  if (sealFirst && count > 1) {
    at += out.write(lines[0]!, at);
    out[at++] = 0x0a;
    const sealed = sealInPlace(backend, head, position, out, HASHED_PREFIX, at);
    head = sealed.head;
    seals[0] = sealed.seal;
    at += sealed.seal.length - 2;
    first = 1;
  }
  // The other lines in one write (one call, not one per line): each with its newline, the last one sealed.
  const from = at;
  let text = '';
  for (let i = first; i < count; i++) text += `${lines[i]!}\n`;
  at += out.write(text, at);
  // After a sealed first line, the room before these lines holds it: then the digest is taken of the parts.
  const seal = first === 0 ? sealAfterPrefix : sealInPlace;
  const sealed = seal(backend, head, { line: position.line + count - 1, format: position.format }, out, from, at);
  seals[count - 1] = sealed.seal;
  const bytes = at + sealed.seal.length - 2 - HASHED_PREFIX;
  const piece = out.subarray(HASHED_PREFIX, HASHED_PREFIX + bytes);
  return { head: sealed.head, pieces: [piece], bytes, seals, lineBytes: lineSizes.bind(undefined, piece) };
}

/** Room before a batch's lines in {@link sealText}'s buffer: the previous chain (32 bytes) and N (8 bytes). */
const HASHED_PREFIX = 40;

/**
 * {@link sealInPlace} of the lines `out[start, at)` where the {@link HASHED_PREFIX} bytes before `start` are free:
 * the previous chain and N are written there (nothing in a 'v1' log), and the digest is of one range, with no
 * copy. The bytes before `start` are left overwritten.
 */
function sealAfterPrefix(backend: HashBackend, previous: Buffer, position: ChainPosition, out: Buffer, start: number, at: number): { head: Buffer; seal: string } {
  let from = start;
  if (position.format !== 'v1') {
    from -= 8;
    out.writeUInt32BE(Math.floor(position.line / 0x1_0000_0000), from);
    out.writeUInt32BE(position.line >>> 0, from + 4);
  }
  from -= 32;
  previous.copy(out, from);
  const head = backend.digest(out.subarray(from, at));
  const seal = `${PREFIX}${head.toString('hex')}"}\n`;
  out.write(seal, at - 2, 'latin1');
  return { head, seal };
}

/** The result of feeding a line to a {@link ChainReader}. */
export type ChainStep =
  /** Not sealed: it waits for the next sealed line. */
  | { kind: 'open' }
  /** Sealed, and the chain matches: the lines since the previous sealed line are verified. */
  | { kind: 'verified'; chain: string }
  /** Sealed, and the chain does not match: some line since the previous sealed line was changed. */
  | { kind: 'mismatch'; chain: string; expected: string };

/**
 * Recomputes the chain over stored lines, fed in order from a sealed line (or the start of the log), each with its
 * number in the log.
 */
export class ChainReader {
  /** The previous chain, then the lines since (copies: the reader's buffers are reused), hashed at the next seal. */
  private parts: Uint8Array[];

  /**
   * Starts after a sealed line whose chain is `previous` (or at the start of the log, with the genesis). `format` is
   * the log's chain format when the caller knows it; otherwise the first sealed line that matches either format
   * decides it for every later one.
   */
  constructor(
    private readonly backend: HashBackend,
    previous: Buffer,
    private chainFormat?: ChainFormat,
  ) {
    this.parts = [previous];
  }

  /** The log's chain format: as given, or as the first sealed line that matched showed it (undefined before). */
  get format(): ChainFormat | undefined {
    return this.chainFormat;
  }

  /**
   * Passes over the next stored line without checking it: a sealed line restarts the chain at the hash it carries
   * (the batch it ends is not verified), any other line is kept for the next seal. Readers use it for the lines
   * before the first one they serve, so that only the batches they serve are hashed. Returns whether it was sealed.
   */
  skip(line: Buffer): boolean {
    const chain = chainOf(line);
    if (chain === undefined) this.parts.push(Buffer.from(line), NEWLINE);
    else this.parts = [Buffer.from(chain, 'hex')];
    return chain !== undefined;
  }

  /** Feeds the next stored line (its bytes, without the newline) and its number in the log (counted from 0). */
  feed(line: Buffer, index: number): ChainStep {
    const chain = chainOf(line);
    if (chain === undefined) {
      this.parts.push(Buffer.from(line), NEWLINE);
      return { kind: 'open' };
    }
    const [previous, ...lines] = this.parts;
    lines.push(line.subarray(0, line.length - SUFFIX_LENGTH), CLOSE);
    // Go on from the stored chain: later batches are checked on their own even after a mismatch.
    this.parts = [Buffer.from(chain, 'hex')];
    const digest = (format: ChainFormat): string => chainDigest(this.backend, previous!, index, format, lines).toString('hex');
    const expected = digest(this.chainFormat ?? CHAIN_FORMAT);
    if (chain === expected) {
      this.chainFormat ??= CHAIN_FORMAT;
      return { kind: 'verified', chain };
    }
    if (this.chainFormat === undefined && chain === digest('v1')) {
      this.chainFormat = 'v1';
      return { kind: 'verified', chain };
    }
    return { kind: 'mismatch', chain, expected };
  }
}

/**
 * The chain format of a log, from its first line (`first`, without the newline; the writer seals it in every log)
 * and the run's genesis: undefined when that line carries no chain hash or matches neither format (it is damaged).
 */
export function chainFormatOf(backend: HashBackend, start: Buffer, first: Buffer): ChainFormat | undefined {
  const reader = new ChainReader(backend, start);
  return reader.feed(first, 0).kind === 'verified' ? reader.format : undefined;
}

/** A sealed line found by {@link sealedLinesBefore}. */
export interface SealedLineAt {
  /** Where the line starts, and the offset just after it (after its newline). */
  start: number;
  end: number;
  /** The chain hash it carries. */
  chain: string;
  /** How many lines follow it in the bytes searched. */
  linesAfter: number;
}

/**
 * The last `count` sealed lines among the first `size` bytes of the log (which end at a line end), the last one
 * first, read backwards in 64 KB chunks (the lines of a few batches are usually in one); fewer when the log holds
 * fewer. The reads are synchronous: one or two chunks of the page cache cost less than a trip through the thread pool.
 */
export function sealedLinesBefore(path: string, size: number, count: number): SealedLineAt[] {
  const found: SealedLineAt[] = [];
  if (size === 0 || count < 1) return found;
  const fd = openRunFile(path);
  try {
    let position = size;
    let carry = Buffer.alloc(0);
    let linesAfter = 0;
    while (position > 0) {
      const length = Math.min(64 * 1024, position);
      position -= length;
      const chunk = Buffer.allocUnsafe(length);
      const bytesRead = readSync(fd, chunk, 0, length, position);
      const buffer = Buffer.concat([chunk.subarray(0, bytesRead), carry]);
      // `end` is just after a newline; the line before it runs from the previous newline (or the buffer start).
      let end = buffer.length;
      while (end > 0) {
        const nl = end >= 2 ? buffer.lastIndexOf(0x0a, end - 2) : -1;
        if (nl === -1 && position > 0) break; // the line starts in an earlier chunk
        const chain = chainOf(buffer.subarray(nl + 1, end - 1));
        if (chain !== undefined) {
          found.push({ start: position + nl + 1, end: position + end, chain, linesAfter });
          if (found.length === count) return found;
        }
        linesAfter++;
        end = nl + 1;
      }
      carry = Buffer.from(buffer.subarray(0, end));
    }
    return found;
  } finally {
    closeSync(fd);
  }
}

/**
 * The chain hash the line that ends at byte `end` of the open log `fd` carries (`end` is just after its newline),
 * read from the line's last bytes alone (one small read, whatever the line's length), unverified; undefined when that
 * line is not sealed.
 */
export function chainOfLineEndingAt(fd: number, end: number): string | undefined {
  const length = Math.min(SUFFIX_LENGTH + 1, end - 1);
  if (length <= SUFFIX_LENGTH) return undefined;
  const tail = Buffer.allocUnsafe(length);
  return readSync(fd, tail, 0, length, end - 1 - length) === length ? chainOf(tail) : undefined;
}

/** The last sealed line among the first `size` bytes of the log (see {@link sealedLinesBefore}), or undefined. */
export function lastSealedLine(path: string, size: number): SealedLineAt | undefined {
  return sealedLinesBefore(path, size, 1)[0];
}
