/**
 * The batch marker of the event log (`events.pending`, see event-store.ts): `{ gen, start, end }` of the batch
 * being written, so that a crash never exposes half a batch. The writer rewrites it in place; readers use it to
 * find the committed end of the log. A writer that closes the log records its size there (`closed`): a log whose
 * data then ends anywhere else was cut, torn or extended after its writer was done with it, which no crash explains.
 */
import { closeSync, constants, fstatSync, ftruncateSync, lstatSync, readFileSync, readSync, writeSync } from 'node:fs';
import { openRegularFile, type NotRegularFile, type OpenedFile } from '../fs/index.js';
import { openRunFile } from './read-files.js';
import { SEAL_LENGTH, chainOf, chainOfLineEndingAt } from './chain.js';
import { openOwnFile } from './own-file.js';
import { endOfData, endOfLastLine, readLines } from './lines.js';
import type { RunPaths } from './paths.js';

/** A batch of the log: bytes from `start` on are invisible while the log is shorter than `end`. */
export interface PendingBatch {
  gen: number;
  start: number;
  end: number;
  /** Set by a writer that closed the log: the size of the log's data then. */
  closed?: number;
}

const PENDING_RECORD_BYTES = 96;
/** The fields of a marker's record. */
const RECORD_FIELDS: ReadonlySet<string> = new Set(['gen', 'start', 'end', 'closed']);

/**
 * The batch marker: undefined when there is none (no file, or empty), 'torn' when it is being rewritten as we read
 * it (the caller reads again).
 */
export function readPending(path: string): PendingBatch | undefined | 'torn' {
  const text = readMarkerText(path);
  if (text === undefined || text.trim() === '') return undefined;
  try {
    const parsed = JSON.parse(text) as PendingBatch;
    // Exactly the fields a writer writes: a damaged name (`"closef"`) must not pass for a record without a close.
    const keys = Object.keys(parsed);
    const exact = keys.length === (parsed.closed === undefined ? 3 : 4) && keys.every((key) => RECORD_FIELDS.has(key));
    if (exact && typeof parsed.gen === 'number' && typeof parsed.start === 'number' && typeof parsed.end === 'number' && (parsed.closed === undefined || Number.isSafeInteger(parsed.closed))) return parsed;
  } catch {
    // fall through
  }
  return 'torn';
}

/**
 * The text of the marker at `path`, undefined when there is none. It is opened as the lock is (see `openRegularFile`:
 * no link followed, no FIFO waited on): anything but a regular file there (a link planted to a file elsewhere, a FIFO,
 * a folder) is never read through, nor taken for a marker being rewritten: it counts as no marker (garbage in the
 * file reads alike), which `verify` reports as damage, naming what is there.
 */
function readMarkerText(path: string): string | undefined {
  let file: OpenedFile | NotRegularFile;
  // No marker is the common case of a new run: see openIfExists (src/fs/read.ts) for why it is asked this way first.
  if (lstatSync(path, { throwIfNoEntry: false }) === undefined) return undefined;
  try {
    file = openRegularFile(path, constants.O_RDONLY);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  // Not read through or waited on: readers go by the log's chain hashes alone, as for a run without a marker;
  // verify reports it, and a writer refuses it (BatchMarker.open), naming it.
  if ('notRegular' in file) return undefined;
  try {
    return readFileSync(file.fd, 'utf8');
  } finally {
    closeSync(file.fd);
  }
}

/** The writer's side of the marker: one fixed-size record, rewritten in place on an open descriptor. */
export class BatchMarker {
  private readonly record = Buffer.alloc(PENDING_RECORD_BYTES);
  /** The generation last written. */
  gen = 0;

  constructor(readonly fd: number) {}

  /**
   * Opens the marker at `path` for the writer of run `runId`, created when missing: only a regular file of its own is
   * opened (see own-file.ts: a link, a FIFO, a folder or a hard link there is refused, naming it, before anything is
   * written). It is not truncated on open: the first {@link write} overwrites its record in place (so it is never
   * empty), and anything a longer file held after the record is cut then.
   */
  static open(path: string, runId: string): BatchMarker {
    const marker = new BatchMarker(openOwnFile(path, constants.O_RDWR | constants.O_CREAT, runId));
    try {
      marker.longer = fstatSync(marker.fd).size > PENDING_RECORD_BYTES;
    } catch (error) {
      closeSync(marker.fd);
      throw error;
    }
    return marker;
  }

  /** Set while the file is longer than a record (found so on open): the first write cuts it to the record. */
  private longer = false;

  /** Rewrites the marker in place: one positional write of a fixed-size record, so the file is never empty. */
  write(record: PendingBatch): void {
    const data = this.record;
    // JSON.stringify's text of the record (its fields are integers), written without building it through JSON.
    const closed = record.closed === undefined ? '' : `,"closed":${record.closed}`;
    data.fill(0x20, data.write(`{"gen":${record.gen},"start":${record.start},"end":${record.end}${closed}}`, 'latin1'));
    let written = 0;
    while (written < data.length) written += writeSync(this.fd, data, written, data.length - written, written);
    if (this.longer) {
      ftruncateSync(this.fd, PENDING_RECORD_BYTES);
      this.longer = false;
    }
    this.gen = record.gen;
  }

  /** Names no batch: nothing in the log is invisible. */
  clear(): void {
    this.write({ gen: this.gen + 1, start: 0, end: 0 });
  }

  /** Names no batch, and records that the writer closed the log with `size` bytes of data. */
  close(size: number): void {
    this.write({ gen: this.gen + 1, start: 0, end: 0, closed: size });
  }
}

/**
 * What is wrong with a log whose data ends at `end` when its marker says its writer closed it with more (see
 * {@link PendingBatch.closed}): the log was cut, which no crash explains; undefined when it was not (no such record,
 * or the log holds at least what was closed). Bytes added after the close are left to the readers' other checks: a
 * torn line is not served, whole lines not covered by the chain are reported.
 */
export function cutSinceClose(pending: PendingBatch | undefined | 'torn', end: number, path: string): string | undefined {
  if (pending === undefined || pending === 'torn' || pending.closed === undefined || end >= pending.closed) return undefined;
  return `${path}: its writer closed it with ${pending.closed} bytes, it now holds ${end}: the log was cut or edited after it was closed`;
}

/**
 * Whether the marker's batch in flight (`batch`, of a log whose data ends at `data`, inside the batch) is contradicted
 * by the log: a batch being written holds no complete sealed line, as its seal is its last line, written last (a
 * first batch also seals line 0, which is allowed). A marker naming an earlier start (edited by hand, or damaged)
 * would hide sealed lines, and make the next writer cut them: it is not obeyed. (A start inside a line, which no
 * true marker has, is read as a line from there: the rest of a sealed line still shows its seal.)
 */
export async function markerContradicted(eventsPath: string, batch: PendingBatch, data: number): Promise<boolean> {
  for await (const raw of readLines(eventsPath, batch.start, data, 0)) {
    if (raw.offset === 0) continue;
    if (chainOf(raw.bytes) !== undefined) return true;
  }
  return false;
}

/** What readers and `verify` say of a marker that {@link markerContradicted} found contradicted. */
export function contradictedMarker(pendingPath: string, batch: PendingBatch, eventsPath: string): string {
  return `${pendingPath} names a batch in flight from byte ${batch.start} of ${eventsPath}, but sealed lines follow that byte: the marker was changed or damaged, and is not obeyed (nothing is hidden or cut for it)`;
}

/**
 * Bytes of the log that hold committed, complete lines: excludes a batch being written (or left unfinished by a
 * crash), a torn last line and the space the writer reserved after the last line (zeros, see `endOfData`). Safe
 * against a concurrent writer: the marker is read before and after the end of the log's data, and again if its
 * generation changed in between.
 */
export async function committedEnd(paths: RunPaths): Promise<number> {
  return (await committedLog(paths)).end;
}

/**
 * {@link committedEnd}, and what is wrong with the log when it was cut after its writer closed it (see
 * {@link cutSinceClose}): readers serve what is left, and say so.
 */
export async function committedLog(paths: RunPaths): Promise<{ end: number; cut: string | undefined; marker?: string }> {
  let fd: number;
  try {
    fd = openRunFile(paths.events);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { end: 0, cut: undefined };
    throw error;
  }
  try {
    return await committedLogOf(fd, paths);
  } finally {
    closeSync(fd);
  }
}

/**
 * The chain hash after the log's last committed line (see {@link committedEnd}), read from that line's seal without
 * verifying it (see `chainOfLineEndingAt`): null when the log has no committed line (or no file), undefined when its
 * last committed line is not sealed (a log written before chain hashes, or lines after its last seal: a damaged
 * tail). A writer's `chainHead` is this once its batches are committed. `RunStore.logHead` of files.
 */
export async function committedHead(paths: RunPaths): Promise<string | null | undefined> {
  let fd: number;
  try {
    fd = openRunFile(paths.events);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  try {
    const size = fstatSync(fd).size;
    if (size === 0) return null;
    const quick = sealAtEnd(fd, size) ?? sealAtMarkedEnd(fd, size, paths);
    if (quick !== undefined) return quick;
    const { end } = await committedLogOf(fd, paths);
    return end === 0 ? null : chainOfLineEndingAt(fd, end);
  } finally {
    closeSync(fd);
  }
}

/** How much of the log's end {@link committedHead} looks at first. */
const HEAD_TAIL = 4096;

/**
 * The chain hash of the last complete line among the log's last {@link HEAD_TAIL} bytes, when the log ends there
 * (or with a torn line after it) and that line is sealed: the last line of a whole batch, so the log's committed end,
 * found with one small read. Undefined otherwise, for {@link committedLogOf} to find the end: space the writer
 * reserved after the data (zeros), a last line longer than what was read, an unsealed line (a batch in flight, which
 * the marker tells about, or damage). A batch in flight whose first line is sealed (a new log's line 0) gives that
 * line's chain: the head of a log that has changed, never of one that has not.
 */
function sealAtEnd(fd: number, size: number): string | undefined {
  const length = Math.min(size, HEAD_TAIL);
  const tail = Buffer.allocUnsafe(length);
  if (readSync(fd, tail, 0, length, size - length) !== length || tail[length - 1] === 0) return undefined;
  const newline = tail.lastIndexOf(0x0a);
  return newline <= SEAL_LENGTH ? undefined : chainOf(tail.subarray(newline - SEAL_LENGTH - 1, newline));
}

/**
 * While a writer holds the log, space it reserved (zeros) follows the data, and the marker names the last batch it
 * wrote: when that batch is whole (its last byte written, a newline, and nothing but zeros or the end of the file
 * after it), the log's committed end is the batch's end, and the chain hash is its seal's, found with the marker and
 * one small read, not a scan back through the reserve. Undefined otherwise (a batch in flight, or anything else), for
 * {@link committedLogOf} to find the end.
 */
function sealAtMarkedEnd(fd: number, size: number, paths: RunPaths): string | undefined {
  const batch = readPending(paths.pendingBatch);
  if (batch === undefined || batch === 'torn' || !Number.isSafeInteger(batch.end) || batch.end < SEAL_LENGTH + 2 || batch.end > size) return undefined;
  // The line's last SEAL_LENGTH + 1 bytes, its newline, and the byte after it if there is one.
  const from = batch.end - SEAL_LENGTH - 2;
  const length = Math.min(SEAL_LENGTH + 3, size - from);
  const bytes = Buffer.allocUnsafe(length);
  if (readSync(fd, bytes, 0, length, from) !== length) return undefined;
  if (bytes[SEAL_LENGTH + 1] !== 0x0a || (length === SEAL_LENGTH + 3 && bytes[SEAL_LENGTH + 2] !== 0)) return undefined;
  return chainOf(bytes.subarray(0, SEAL_LENGTH + 1));
}

/** {@link committedLog} of the log open as `fd`. */
async function committedLogOf(fd: number, paths: RunPaths): Promise<{ end: number; cut: string | undefined; marker?: string }> {
  for (let attempt = 0; ; attempt++) {
    const before = readPending(paths.pendingBatch);
    const data = await endOfData(fd, fstatSync(fd).size);
    const after = readPending(paths.pendingBatch);
    if (attempt < 100 && (before === 'torn' || after === 'torn' || before?.gen !== after?.gen)) continue;
    let end = data;
    let marker: string | undefined;
    if (after !== undefined && after !== 'torn' && end > after.start && end < after.end) {
      if (await markerContradicted(paths.events, after, data)) marker = contradictedMarker(paths.pendingBatch, after, paths.events);
      else end = after.start;
    }
    const cut = cutSinceClose(after, data, paths.events);
    return { end: end === 0 ? 0 : await endOfLastLine(fd, end), cut, ...(marker !== undefined ? { marker } : {}) };
  }
}
