/**
 * The event log of one run, as one object: a thin facade over its writer (log-writer.ts), its index (log-index.ts)
 * and its readers (log-reader.ts); `verify` is log-verify.ts.
 */
import type { StreamEvent } from '../events/types.js';
import { redactorFor } from '../redact/index.js';
import { committedEnd } from './batch-marker.js';
import { EventStoreError } from './errors.js';
import { DEFAULT_INDEX_INTERVAL, IndexReader } from './log-index.js';
import { LogReader } from './log-reader.js';
import type { EventStoreOptions, OpenedLog, ReadOptions, VerifiedEvent, VerifyResult } from './log-types.js';
import { verifyLog } from './log-verify.js';
import { LogWriter } from './log-writer.js';
import { runPaths, type RunPaths } from './paths.js';
import { durabilityOf, type Durability } from './types.js';

export type { CorruptLine, EventStoreOptions, IndexEntry, OpenedLog, ReadOptions, VerifiedEvent, VerifyResult } from './log-types.js';

/**
 * The append-only event log of one run: `sessions/<sessionKey>/runs/<runId>/events.jsonl`, one {@link StreamEvent}
 * per line, with `events.idx.jsonl` recording the byte offset of every `indexInterval`-th event so that
 * {@link readPage} seeks instead of scanning (the first line has no entry: a log shorter than `indexInterval` has
 * no index file).
 *
 * Writing: the first append (or {@link open}) takes the run's writer lock (`events.lock`, one writer per run across
 * processes, stale locks of dead processes recovered), cuts a torn last line and an unfinished batch, and catches
 * the index up with the log. Appends are validated against the envelope schema ({@link parseEvent}), checked against
 * the run (runId, sessionKey, increasing seq), redacted, and written with one `write` on an open descriptor.
 *
 * Batches are all-or-nothing across a crash. One `write` is not enough: Linux may stop a large write at a page
 * boundary when the process is killed, leaving complete lines of half a batch. So before writing a batch of two or
 * more events the writer records `{ gen, start, end }` in `events.pending` (one small in-place write). A batch is
 * committed once the log is at least `end` bytes long; the marker keeps naming it until the next batch overwrites
 * the marker or `close()` clears it (one marker write per batch, not two). Readers treat bytes from `start` on as
 * invisible while the log is shorter than `end`, and the next writer truncates them. Readers read the marker, the log size, and the
 * marker again, retrying if `gen` changed, so a batch being written concurrently is never half seen.
 *
 * With durability 'batch' or 'always', the writer reserves space after the last line by writing zeros (see
 * log-writer.ts: an fdatasync that does not grow the file costs about half), cut when it closes and by the next
 * writer after a crash; readers take zeros at the end of the log for space not yet written (see `endOfData`).
 *
 * Reading needs no lock and never loads the whole log. Readers ignore a torn last line; a corrupt line in the middle
 * is an error naming its line number unless the reader asks to skip (see {@link ReadOptions}).
 */
export class EventStore {
  readonly sessionKey: string;
  readonly runId: string;
  readonly durability: Durability;
  readonly paths: RunPaths;
  private readonly writer: LogWriter;
  private readonly reader: LogReader;
  private readonly indexFile: IndexReader;

  /** Validates the ids (throws InvalidIdError before any file is touched); opens nothing yet. */
  constructor(options: EventStoreOptions) {
    this.paths = runPaths(options.dataDir, options.sessionKey, options.runId);
    this.sessionKey = options.sessionKey;
    this.runId = options.runId;
    this.durability = durabilityOf(options, 'EventStore');
    const indexInterval = options.indexInterval ?? DEFAULT_INDEX_INTERVAL;
    if (!Number.isInteger(indexInterval) || indexInterval < 1) {
      throw new EventStoreError(`indexInterval must be a positive integer, got ${String(options.indexInterval)}`);
    }
    const log = { paths: this.paths, sessionKey: this.sessionKey, runId: this.runId };
    this.writer = new LogWriter({ ...log, durability: this.durability, indexInterval, redactor: redactorFor(options.redaction) });
    this.indexFile = new IndexReader(this.paths.index);
    this.reader = new LogReader({
      ...log,
      // An open writer's entries are the index; other readers load the file.
      indexEntries: () => (this.writer.writable ? Promise.resolve(this.writer.indexEntries) : this.indexFile.entries()),
      indexStale: () => this.indexFile.reset(),
    });
  }

  /** seq of the last stored event (after {@link open} or an append), undefined when the log is empty. */
  get lastSeq(): number | undefined {
    return this.writer.lastSeq;
  }

  /**
   * The chain hash of the log after the last batch this writer wrote (or found on {@link open}), as 64 hex
   * characters; undefined before the first sealed line. Keyframes record it (see chain.ts).
   */
  get chainHead(): string | undefined {
    return this.writer.chainHead;
  }

  /**
   * Whether this store's writer found, at a write, that another process had taken the run over after its lease ran
   * out (see FileLock.confirm): it then writes nothing more, and its append fails with a LockError.
   */
  get lockLost(): boolean {
    return this.writer.lockLost;
  }

  /**
   * Whether this store's writer still holds its run's lock (asked now: see FileLock.confirm); false once it lost it,
   * and {@link lockLost} is then true. Files of the run that the log's writer does not write (a projection, a
   * keyframe) are written only while this holds.
   */
  holdsLock(): boolean {
    return this.writer.holdsLock();
  }

  /** Throws the LockError of a writer that no longer holds its run's lock (see {@link holdsLock}). */
  assertHoldsLock(): void {
    this.writer.assertHeld();
  }

  /** Number of events in the log as known to this writer (after {@link open}). */
  get eventCount(): number {
    return this.writer.eventCount;
  }

  /** Size of the log in bytes as known to this writer (after {@link open}). */
  get byteLength(): number {
    return this.writer.bytes;
  }

  /**
   * Opens the log for writing: takes the lock (LockError when another writer holds it), repairs the tail, catches
   * the index up, and reports the last seq so that a resumed run continues the numbering. Idempotent. With
   * `existing`, the run must exist already: its folder is not created, and a run deleted meanwhile (or never
   * recorded) is a RunGoneError.
   */
  open(options: { existing?: boolean } = {}): Promise<OpenedLog> {
    return this.writer.open(options.existing);
  }

  /** Appends one event. Resolves once written (and, with durability 'always', fsynced). */
  append(event: StreamEvent): Promise<void> {
    return this.writer.append(event);
  }

  /**
   * Appends several events atomically: after a crash either all of them are in the log or none. Every event is
   * validated before anything is written; one invalid event rejects the whole batch.
   */
  appendBatch(events: StreamEvent[]): Promise<void> {
    return this.writer.appendBatch(events);
  }

  /** Makes every append so far durable (fsync) unless durability is 'never'. The runtime calls it at each step boundary. */
  flush(): Promise<void> {
    return this.writer.flush();
  }

  /** Flushes (unless durability is 'never'), closes the files and releases the writer lock. Idempotent. */
  close(): Promise<void> {
    return this.writer.close();
  }

  /** Streams every event (from `options.from` on) in order, without loading the log into memory. */
  readStream(options: ReadOptions = {}): AsyncGenerator<StreamEvent> {
    return this.reader.readStream(options);
  }

  /**
   * Streams every event (from `options.from` on) with the chain hash of its batch. Only what the chain vouches for
   * is served: a batch is handed out once its chain hash matches (see chain.ts); a batch that does not match is an
   * error naming its lines (with `onCorrupt: 'skip'`, a warning, and it is not served); lines after the last chain
   * hash are not served, with a warning. A log written before chain hashes is read as it is.
   */
  readVerified(options: ReadOptions = {}): AsyncGenerator<VerifiedEvent> {
    return this.reader.readVerified(options);
  }

  /**
   * How many events the readers serve: every complete line the chain vouches for (see {@link readVerified}; a
   * corrupt line counts as a line, as in {@link readPage}), without parsing them.
   */
  countEvents(options: ReadOptions = {}): Promise<number> {
    return this.reader.countEvents(options);
  }

  /** Every event, in order. */
  readAll(options: ReadOptions = {}): Promise<StreamEvent[]> {
    return this.reader.readAll(options);
  }

  /** The events for which `predicate` holds, in order (streamed, so only the matches are kept in memory). */
  readFiltered(predicate: (event: StreamEvent) => boolean, options: ReadOptions = {}): Promise<StreamEvent[]> {
    return this.reader.readFiltered(predicate, options);
  }

  /**
   * Up to `pageSize` events starting at event number `offset` (0-based line number in the log). Seeks to the nearest
   * indexed byte offset at or before `offset`, so the cost does not grow with `offset`. A corrupt line counts as a
   * line (it is reported per `options`, see {@link ReadOptions}).
   */
  readPage(pageSize: number, offset: number, options: ReadOptions = {}): Promise<StreamEvent[]> {
    return this.reader.readPage(pageSize, offset, options);
  }

  /**
   * Rebuilds events.idx.jsonl with one entry every `eventsPerEntry` events (and uses that interval for later
   * appends). Takes the writer lock if this store does not hold it yet. The file is replaced atomically.
   */
  async buildIndex(eventsPerEntry: number = this.writer.indexInterval): Promise<void> {
    if (!Number.isInteger(eventsPerEntry) || eventsPerEntry < 1) {
      throw new EventStoreError(`buildIndex: eventsPerEntry must be a positive integer, got ${eventsPerEntry}`, { path: this.paths.index });
    }
    await this.writer.rebuildIndex(eventsPerEntry);
  }

  /**
   * Checks the whole log: recomputes the chain (see chain.ts) and reports the first line that disagrees with it,
   * corrupt lines with their 1-based numbers, lines after the last chain hash (a cut log), index entries that do not
   * match the log, and the torn tail (bytes a crash left after the last complete line or in an unfinished batch,
   * which the next writer cuts). Reads only; never repairs.
   */
  async verify(): Promise<VerifyResult> {
    return verifyLog({ paths: this.paths, sessionKey: this.sessionKey, runId: this.runId, end: await committedEnd(this.paths) });
  }
}
