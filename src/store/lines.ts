import { closeSync, fstatSync, read, readSync } from 'node:fs';
import { promisify } from 'node:util';
import { openRunFile, openRunFileIfExists } from './read-files.js';

const NEWLINE = 0x0a;
const CHUNK = 64 * 1024;
/**
 * The largest chunk {@link readLineBatches} grows to: a long read makes fewer trips to the disk and the thread pool,
 * while the work on one chunk stays short enough for a server to answer other requests between chunks.
 */
const MAX_CHUNK = 256 * 1024;
/**
 * How much a scan of the log ({@link readLineBatches} forwards, {@link endOfData} and {@link endOfLastLine}
 * backwards) reads synchronously before it goes through the thread pool. Readers read small ranges (a page of events,
 * the batch before it, the tail of the log) far more often than long ones, and on these machines each trip through
 * the thread pool cost 60-120 µs of waiting, against 5-30 µs for reading a chunk from the page cache in place: a
 * readPage(100) spent a third of its time idle. Past this much, a long scan (verify, a whole run for a projection, a
 * tail of zeros longer than any writer reserves) goes asynchronous, chunk by chunk, so that a server still answers
 * other requests while it runs.
 */
const SYNC_BYTES = 1024 * 1024;
const readAsync = promisify(read);

/**
 * `length` bytes at `position` of `fd` into `buffer`, for a scan that has read `scanned` bytes so far: in place
 * within its first {@link SYNC_BYTES}, through the thread pool after.
 */
export function readChunk(fd: number, buffer: Buffer, length: number, position: number, scanned: number): number | Promise<number> {
  return scanned < SYNC_BYTES ? readSync(fd, buffer, 0, length, position) : readAsync(fd, buffer, 0, length, position).then((r) => r.bytesRead);
}

/**
 * Descriptors of scans whose iterator was dropped without being finished or closed (a consumer that took a few
 * events and let go): closed when the iterator is collected, so that a long-lived process never runs out of them
 * (nor keeps a deleted log's space). A scan that ends, or is closed, closes its own and leaves this.
 */
const openScans = new FinalizationRegistry<{ fd: number }>((held) => {
  if (held.fd >= 0) closeSync(held.fd);
});

/**
 * One complete line of a JSONL file: its text (without the newline), byte offset and 0-based line index, and its
 * bytes (without the newline: a view that is valid only until the generator is resumed).
 */
export interface RawLine {
  text: string;
  /** Whether `decode` rejected the line (its text is then empty). */
  skipped: boolean;
  offset: number;
  index: number;
  bytes: Buffer;
}

/**
 * Yields the complete lines of `path` between byte offsets `start` (a line start) and `end`, one by one (see
 * {@link readLineBatches}, which this flattens; a line's `bytes` are valid only until the generator is resumed).
 */
export async function* readLines(
  path: string,
  start: number,
  end: number,
  firstIndex: number,
  decode: (index: number, bytes: Buffer) => boolean = () => true,
): AsyncGenerator<RawLine> {
  for await (const batch of readLineBatches(path, start, end, firstIndex, decode)) yield* batch;
}

/**
 * Yields the complete lines of `path` between byte offsets `start` (a line start) and `end`, reading chunks of 64 KB
 * that double up to 256 KB as the read goes on (a reader that stops after a page reads little; one that reads a long
 * log makes few trips to the disk), so memory stays flat whatever the file size: one batch per chunk (the lines that
 * end in it), so that a reader of a long log pays one asynchronous step per chunk, not per line. The first
 * {@link SYNC_BYTES} are read in place, the rest through the thread pool. `firstIndex` is the line index of the line
 * at `start`. Bytes after the last newline before `end` (a torn tail) are not yielded. `decode(index, bytes)` decides
 * whether a line's text is decoded; lines it rejects are yielded with empty text and `skipped` (counting lines
 * without decoding them is cheap). A line's `bytes` are a view that is valid only until the generator is resumed.
 * Anything but a regular file at `path` is refused (see openFileForReading); a scan dropped unfinished closes its
 * file when it is collected.
 */
export function readLineBatches(
  path: string,
  start: number,
  end: number,
  firstIndex: number,
  decode: (index: number, bytes: Buffer) => boolean = () => true,
): AsyncGenerator<RawLine[]> {
  const held = { fd: -1 };
  const scan = scanLines(held, path, start, end, firstIndex, decode);
  openScans.register(scan, held, held);
  return scan;
}

async function* scanLines(
  held: { fd: number },
  path: string,
  start: number,
  end: number,
  firstIndex: number,
  decode: (index: number, bytes: Buffer) => boolean,
): AsyncGenerator<RawLine[]> {
  if (end <= start) return;
  const fd = (held.fd = openRunFile(path));
  try {
    let carry: Buffer | undefined;
    let carryOffset = start;
    let position = start;
    let index = firstIndex;
    let size = CHUNK;
    let buffer = Buffer.allocUnsafe(size);
    while (position < end) {
      const bytesRead = await readChunk(fd, buffer, Math.min(size, end - position), position, position - start);
      if (bytesRead === 0) break;
      const chunk = buffer.subarray(0, bytesRead);
      const batch: RawLine[] = [];
      let lineStart = 0;
      let nl = chunk.indexOf(NEWLINE, 0);
      while (nl !== -1) {
        if (carry !== undefined) {
          const bytes = Buffer.concat([carry, chunk.subarray(0, nl)]);
          const wanted = decode(index, bytes);
          batch.push({ text: wanted ? bytes.toString('utf8') : '', skipped: !wanted, offset: carryOffset, index, bytes });
          carry = undefined;
        } else {
          const bytes = chunk.subarray(lineStart, nl);
          const wanted = decode(index, bytes);
          batch.push({ text: wanted ? chunk.toString('utf8', lineStart, nl) : '', skipped: !wanted, offset: position + lineStart, index, bytes });
        }
        index++;
        lineStart = nl + 1;
        nl = chunk.indexOf(NEWLINE, lineStart);
      }
      if (lineStart < bytesRead) {
        const rest = Buffer.from(chunk.subarray(lineStart));
        if (carry === undefined) {
          carry = rest;
          carryOffset = position + lineStart;
        } else carry = Buffer.concat([carry, rest]);
      }
      position += bytesRead;
      if (batch.length > 0) yield batch;
      // The lines yielded are views of `buffer`, valid until this resumes: a larger one can be taken now.
      if (size < MAX_CHUNK && position < end) buffer = Buffer.allocUnsafe((size *= 2));
    }
  } finally {
    held.fd = -1;
    openScans.unregister(held);
    closeSync(fd);
  }
}

/**
 * The end of the data of an open file whose first `size` bytes are read: the offset just after its last byte that is
 * not zero (0 when there is none). The event log's writer reserves space after its last line by writing zeros (see
 * log-writer.ts), and a line never holds a zero byte, so zeros at the end of the log are space not yet written.
 * Reads back from the end in chunks, comparing each with zeros; the reserve is at most a megabyte.
 */
export async function endOfData(fd: number, size: number): Promise<number> {
  let position = size;
  const buffer = Buffer.allocUnsafe(CHUNK);
  while (position > 0) {
    const length = Math.min(CHUNK, position);
    const bytesRead = await readChunk(fd, buffer, length, position - length, size - position);
    const chunk = buffer.subarray(0, bytesRead);
    if (bytesRead < length) return position - length + lastNonZero(chunk) + 1;
    if (!chunk.equals(ZEROS.subarray(0, length))) return position - length + lastNonZero(chunk) + 1;
    position -= length;
  }
  return 0;
}

const ZEROS = Buffer.alloc(CHUNK);

/** {@link endOfData} of the file at `path` as it is now; undefined when there is no such file. */
export async function dataEndOf(path: string): Promise<number | undefined> {
  const fd = openRunFileIfExists(path);
  if (fd === undefined) return undefined;
  try {
    return await endOfData(fd, fstatSync(fd).size);
  } finally {
    closeSync(fd);
  }
}

/** Index of the last byte of `bytes` that is not zero, -1 when there is none. */
function lastNonZero(bytes: Buffer): number {
  let i = bytes.length - 1;
  while (i >= 0 && bytes[i] === 0) i--;
  return i;
}

/** Byte offset just after the last newline of the first `size` bytes of an open file (0 when there is none). */
export async function endOfLastLine(fd: number, size: number): Promise<number> {
  let position = size;
  const buffer = Buffer.allocUnsafe(CHUNK);
  while (position > 0) {
    const length = Math.min(CHUNK, position);
    position -= length;
    const bytesRead = await readChunk(fd, buffer, length, position, size - position - length);
    const nl = buffer.subarray(0, bytesRead).lastIndexOf(NEWLINE);
    if (nl !== -1) return position + nl + 1;
  }
  return 0;
}
