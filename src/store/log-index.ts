/**
 * The index of the event log (`events.idx.jsonl`, see event-store.ts): the byte offset and seq of every
 * `interval`-th line, so that readers seek instead of scanning. The writer keeps it in step with the log
 * ({@link IndexWriter}); readers load it incrementally ({@link IndexReader}) and find where to start
 * ({@link nearestEntry}).
 */
import { closeSync, constants, lstatSync, readFileSync, readSync, writeSync } from 'node:fs';
import { removeFileIfExists, writeFileAtomic } from '../fs/index.js';
import { openRunFile } from './read-files.js';
import { chainOf } from './chain.js';
import { readChunk, readLines } from './lines.js';
import { parseIndex, seqOf } from './log-format.js';
import type { IndexEntry } from './log-types.js';
import { openOwnFile } from './own-file.js';

/**
 * One entry every this many events, unless the options say otherwise. There is no entry for the first line (a reader
 * without an entry starts there anyway), so a log shorter than this has no index file: the file is created with its
 * first entry (creating a file costs hundreds of microseconds on some disks, a cost every short run would pay).
 */
export const DEFAULT_INDEX_INTERVAL = 1000;

function indexText(entries: IndexEntry[]): string {
  return entries.map((e) => JSON.stringify(e) + '\n').join('');
}

function writeAll(fd: number, data: Buffer): void {
  let written = 0;
  while (written < data.length) written += writeSync(fd, data, written, data.length - written);
}

/** The line of the last of `entries`, or 0 (the first line, which has no entry). */
function lastLine(entries: readonly IndexEntry[]): number {
  return entries.length === 0 ? 0 : entries[entries.length - 1]!.line;
}

/** The last entry at or before `line` inside the committed log (`end` bytes), or undefined (read from the start). */
export function nearestEntry(entries: IndexEntry[], line: number, end: number): IndexEntry | undefined {
  let lo = 0;
  let hi = entries.length - 1;
  let best: IndexEntry | undefined;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const e = entries[mid]!;
    if (e.line <= line && e.offset < end) {
      best = e;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return best;
}

/**
 * The first line of the log at `eventsPath` (whose committed lines end at `end`): its bytes (without the newline;
 * undefined for an empty log), whether it is sealed (the log was written with chain hashes, see chain.ts), and its
 * seq (undefined when it has none).
 */
export async function firstLineOf(eventsPath: string, end: number): Promise<{ bytes: Buffer | undefined; sealed: boolean; seq: number | undefined }> {
  const found = (bytes: Buffer, text: string) => ({ bytes, sealed: chainOf(bytes) !== undefined, seq: seqOf(text) });
  // The first line is short (run.started): one small read (synchronous: a page of the cache, not worth a trip
  // through the thread pool), a full scan only for a longer one.
  const fd = openRunFile(eventsPath);
  try {
    const head = Buffer.allocUnsafe(Math.min(4096, end));
    const bytesRead = readSync(fd, head, 0, head.length, 0);
    const nl = head.subarray(0, bytesRead).indexOf(0x0a);
    if (nl !== -1) return found(head.subarray(0, nl), head.toString('utf8', 0, nl));
  } finally {
    closeSync(fd);
  }
  for await (const raw of readLines(eventsPath, 0, end, 0)) return found(Buffer.from(raw.bytes), raw.text);
  return { bytes: undefined, sealed: false, seq: undefined };
}

/**
 * Whether the log vouches for the line number of index entry `entry`, whose line holds `entry.seq` (checked by the
 * caller): the lines before `entry.offset` are counted, a scan of bytes with no parsing. Seqs only increase, so an
 * entry whose seq is below `firstSeq + entry.line` is refused without a scan; one at exactly that seq is not taken on
 * its word, as it once was: in a log with gaps in its seqs (folded model.delta events leave them) an edited line
 * number can match it (an index entry of line 14 with seq 57, moved to line 56 of a log starting at seq 1, read a
 * page 42 lines off). The writer checks its last entry so before it counts lines from it, and so do readers of a log
 * with no chain hash; a reader of a log with chain hashes does not seek by counting (see LogReader: the chain proves
 * the entry's line number, or the log is read from its start).
 */
export async function lineVouched(eventsPath: string, entry: IndexEntry, firstSeq: number | undefined): Promise<boolean> {
  if (firstSeq !== undefined && entry.seq - firstSeq < entry.line) return false;
  return (await linesBefore(eventsPath, entry.offset)) === entry.line;
}

/**
 * The number of lines that end in the first `offset` bytes of the log at `path`, or -1 when those bytes do not end
 * at a line end (`offset` is not the start of a line).
 */
async function linesBefore(path: string, offset: number): Promise<number> {
  if (offset === 0) return 0;
  // Opened as the log's readers open it: a link or FIFO in its place is refused, never read through or waited on.
  const fd = openRunFile(path);
  try {
    const chunk = Buffer.allocUnsafe(Math.min(offset, 1 << 20));
    let lines = 0;
    let last = -1;
    for (let position = 0; position < offset; ) {
      const bytesRead = await readChunk(fd, chunk, Math.min(chunk.length, offset - position), position, position);
      if (bytesRead === 0) return -1;
      const read = chunk.subarray(0, bytesRead);
      for (let at = read.indexOf(0x0a); at !== -1; at = read.indexOf(0x0a, at + 1)) lines++;
      last = read[bytesRead - 1]!;
      position += bytesRead;
    }
    return last === 0x0a ? lines : -1;
  } finally {
    closeSync(fd);
  }
}

async function entryMatches(eventsPath: string, size: number, entry: IndexEntry): Promise<boolean> {
  if (entry.offset > 0) {
    const fd = openRunFile(eventsPath);
    try {
      const byte = Buffer.alloc(1);
      readSync(fd, byte, 0, 1, entry.offset - 1);
      if (byte[0] !== 0x0a) return false;
    } finally {
      closeSync(fd);
    }
  }
  for await (const raw of readLines(eventsPath, entry.offset, size, entry.line)) {
    return seqOf(raw.text) === entry.seq;
  }
  return false;
}

/** The index file as readers see it: read incrementally (only what was appended since) and cached. */
export class IndexReader {
  private cache: { entries: IndexEntry[]; bytes: number } | undefined;

  constructor(private readonly path: string) {}

  /** The entries of the file as it is now. */
  async entries(): Promise<IndexEntry[]> {
    // No index, or anything but a regular file in its place (a planted link, a FIFO): none. An index only speeds
    // reads up; every reader checks its entries against the log, and the writer rebuilds it.
    let size: number;
    try {
      const stat = lstatSync(this.path, { throwIfNoEntry: false });
      if (stat === undefined || !stat.isFile()) {
        this.cache = undefined;
        return [];
      }
      size = stat.size;
    } catch {
      this.cache = undefined;
      return [];
    }
    let cache = this.cache;
    if (cache === undefined || size < cache.bytes) cache = { entries: [], bytes: 0 };
    if (size > cache.bytes) {
      // Synchronous, as the log's small reads are (see SYNC_BYTES in lines.ts): the index is an entry per 1,000 events.
      const fd = openRunFile(this.path);
      try {
        const buffer = Buffer.alloc(size - cache.bytes);
        const bytesRead = readSync(fd, buffer, 0, buffer.length, cache.bytes);
        const complete = buffer.subarray(0, bytesRead).lastIndexOf(0x0a) + 1;
        const fresh = parseIndex(buffer.toString('utf8', 0, complete));
        const lastLine = cache.entries[cache.entries.length - 1]?.line ?? -1;
        cache = { entries: cache.entries.concat(fresh.filter((e) => e.line > lastLine)), bytes: cache.bytes + complete };
      } finally {
        closeSync(fd);
      }
    }
    this.cache = cache;
    return cache.entries;
  }

  /** Forgets the cache (the file was rebuilt or replaced behind the reader's back): the next read starts over. */
  reset(): void {
    this.cache = undefined;
  }
}

/** The writer's side of the index: its entries in memory, appended to the file as the log grows. */
export class IndexWriter {
  /** The entries, in line order. */
  entries: IndexEntry[] = [];
  private fd: number | undefined;

  constructor(
    private readonly path: string,
    private readonly eventsPath: string,
    public interval: number,
    /** The run, named in errors. */
    private readonly runId = '(unnamed)',
  ) {}

  /**
   * The text of the index file, '' when there is none. It is read as the writer will append to it (see own-file.ts):
   * a link planted in its place (to a file outside the data directory), or anything but a regular file of its own, is
   * refused when the writer opens the run, not when a step reaches its next entry.
   */
  private readOwn(): string {
    let fd: number;
    try {
      fd = openOwnFile(this.path, constants.O_RDONLY, this.runId);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '';
      throw error;
    }
    try {
      return readFileSync(fd, 'utf8');
    } catch {
      return '';
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Loads the index of a log of `size` bytes, drops entries that do not match the log, rebuilds it if needed, then
   * indexes the tail. Returns the number of lines of the log and the text of its last line (undefined when empty).
   */
  async recover(size: number): Promise<{ lineCount: number; lastText: string | undefined }> {
    if (size === 0) {
      // An empty log has no entries: a stale index (which readers would only ignore, as they check entries against
      // the log) is removed without being read; the file is created with the first entry (see record).
      this.entries = [];
      removeFileIfExists(this.path);
      return { lineCount: 0, lastText: undefined };
    }
    let entries = parseIndex(this.readOwn());
    const valid = entries.filter((e) => e.offset < size);
    let rewrite = valid.length !== entries.length;
    entries = valid;
    const lastEntry = entries[entries.length - 1];
    // The writer counts the log's lines from its last entry: its seq and its line number must both be the log's.
    if (lastEntry && !((await entryMatches(this.eventsPath, size, lastEntry)) && (await lineVouched(this.eventsPath, lastEntry, (await firstLineOf(this.eventsPath, size)).seq)))) {
      entries = [];
      rewrite = true;
    }
    const from = entries[entries.length - 1] ?? { line: 0, offset: 0, seq: -1 };
    let lastText: string | undefined;
    let count = from.line;
    for await (const raw of readLines(this.eventsPath, from.offset, size, from.line)) {
      if (raw.index - lastLine(entries) >= this.interval) {
        const seq = seqOf(raw.text);
        if (seq !== undefined) {
          entries.push({ line: raw.index, offset: raw.offset, seq });
          rewrite = true;
        }
      }
      lastText = raw.text;
      count = raw.index + 1;
    }
    this.entries = entries;
    if (rewrite) await writeFileAtomic(this.path, indexText(entries));
    return { lineCount: count, lastText };
  }

  /**
   * Records the lines just appended (the first at line `firstLine` and byte `start`, with their `seqs`; `lineBytes`
   * gives their sizes, asked only when an entry is reached): the entries they reach are added and appended to the file.
   */
  record(firstLine: number, start: number, lineBytes: () => number[], seqs: number[]): void {
    // Byte offsets are counted only when this batch reaches the next index entry.
    if (firstLine + seqs.length - 1 - lastLine(this.entries) < this.interval) return;
    const lines = lineBytes();
    let text = '';
    let offset = start;
    for (let i = 0; i < lines.length; i++) {
      const line = firstLine + i;
      if (line - lastLine(this.entries) >= this.interval) {
        const entry = { line, offset, seq: seqs[i]! };
        this.entries.push(entry);
        text += JSON.stringify(entry) + '\n';
      }
      offset += lines[i]!;
    }
    if (text) writeAll((this.fd ??= openOwnFile(this.path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT, this.runId)), Buffer.from(text));
  }

  /**
   * Rebuilds the index of a log of `size` bytes with one entry every `interval` events (and uses that interval for
   * later appends). The file is replaced atomically.
   */
  async rebuild(size: number, interval: number): Promise<void> {
    const entries: IndexEntry[] = [];
    for await (const raw of readLines(this.eventsPath, 0, size, 0, (i) => i % interval === 0)) {
      if (raw.index === 0 || raw.index % interval !== 0) continue;
      const seq = seqOf(raw.text);
      if (seq !== undefined) entries.push({ line: raw.index, offset: raw.offset, seq });
    }
    this.close();
    await writeFileAtomic(this.path, indexText(entries));
    this.entries = entries;
    this.interval = interval;
  }

  /** Closes the file (idempotent). */
  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}
