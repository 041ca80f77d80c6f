/**
 * The writer of the event log (see event-store.ts for the file format and its guarantees): takes the run's writer
 * lock, repairs the tail, continues the chain, validates, redacts, seals and appends batches, and keeps the index
 * and the batch marker in step.
 */
import { closeSync, constants, fdatasyncSync, fstatSync, ftruncateSync, mkdirSync, writeSync } from 'node:fs';
import type { StreamEvent } from '../events/types.js';
import { DONE, describeHolder, inspectLock, runWriterClosed, runWriterOpened, syncDescriptor, syncOnPool, type FileLock } from '../fs/index.js';
import { sharedHashBackend, type HashBackend } from '../hash/blake3.js';
import type { Redactor } from '../redact/index.js';
import { BatchMarker, contradictedMarker, cutSinceClose, markerContradicted, readPending, type PendingBatch } from './batch-marker.js';
import { CHAIN_BACKEND, CHAIN_FORMAT, chainFormatOf, genesis, lastSealedLine, sealBatch, type ChainFormat, type SealedBatch } from './chain.js';
import { encodeEvent } from './event-encode.js';
import { EventStoreError, LockError, RunGoneError } from './errors.js';
import { endOfData, endOfLastLine, readLines } from './lines.js';
import { IndexWriter, firstLineOf } from './log-index.js';
import { seqOf } from './log-format.js';
import type { IndexEntry, OpenedLog } from './log-types.js';
import { acquireLock } from './lock.js';
import { assertRunDir, type RunPaths } from './paths.js';
import { openOwnFile } from './own-file.js';
import type { Durability } from './types.js';

/**
 * Writes all of `piece` (text as UTF-8: one `write` of the string, no Buffer, unless the kernel takes less) at byte
 * `position`; returns the position after it.
 */
function writePieceAt(fd: number, piece: string | Buffer, position: number): number {
  let data: Buffer;
  let done: number;
  if (typeof piece === 'string') {
    done = writeSync(fd, piece, position);
    const bytes = Buffer.byteLength(piece);
    if (done >= bytes) return position + bytes;
    data = Buffer.from(piece);
  } else {
    data = piece;
    done = 0;
  }
  while (done < data.length) done += writeSync(fd, data, done, data.length - done, position + done);
  return position + data.length;
}

/**
 * Space the writer reserves ahead of the log, whatever the durability: zeros written past the last line, so that a
 * step overwrites blocks the file already has. The fdatasync of a write that leaves the file's size as it was
 * writes the data alone; one that grows the file also commits the new size to the filesystem's journal, which on
 * this project's disks made it 1.7-2.2x as slow (`BENCH_ONLY=runtime npm run bench:store`, and the closing note of
 * the change). Without an fdatasync (durability 'never') the write itself is cheaper too: a 2.6 KB write that grows
 * a file took 7-16 µs here, one into space already written 1.5-3 µs (the file's new size and blocks are not
 * recorded per write), and the 'never' rows of the benchmark cost 0.89-0.93x with the reserve. The reserve grows
 * with the log, from {@link RESERVE_MIN} to {@link RESERVE_MAX} at a time, so that a short run reserves little and a
 * long one pays the slower fdatasync once per megabyte. It is cut when the writer
 * closes, and by the next writer after a crash; readers take a run of zero bytes at the end of the log for what it
 * is (see `endOfData` in lines.ts): a log's lines never hold a zero byte (JSON escapes it).
 */
const RESERVE_MIN = 64 * 1024;
const RESERVE_MAX = 1024 * 1024;
let zeros: Buffer | undefined;

/** What a {@link LogWriter} needs to know about its run. */
export interface LogWriterOptions {
  paths: RunPaths;
  sessionKey: string;
  runId: string;
  durability: Durability;
  indexInterval: number;
  redactor: Redactor;
}

/** The single writer of one run's log (the facade, `EventStore`, documents the behaviour). */
export class LogWriter {
  private readonly paths: RunPaths;
  private readonly sessionKey: string;
  private readonly runId: string;
  private readonly durability: Durability;
  private readonly redactor: Redactor;
  private readonly index: IndexWriter;

  private opening: Promise<OpenedLog> | undefined;
  private fd: number | undefined;
  private marker: BatchMarker | undefined;
  private lock: FileLock | undefined;
  private size = 0;
  /** The size of the file: {@link size} plus the space reserved after the last line (see RESERVE_MIN). */
  private reserved = 0;
  private lineCount = 0;
  private last: number | undefined;
  private readonly inflight = new Set<Promise<void>>();
  /**
   * Set when bytes were written that no fdatasync has been asked for since (lines, or the reserve): what
   * {@link flush} makes durable. Cutting the reserve does not set it: zeros after the last line, or none, read alike.
   */
  private unsynced = false;
  private closed = false;
  /** Whether this writer is counted as open for the fsync policy (see src/fs/fsync.ts, runWriterOpened). */
  private counted = false;
  /** Set when close() begins: no open starts after it (see open). */
  private closing = false;
  /** Set once {@link open} has finished repairing the log: appends before that wait for it. */
  private ready = false;
  private backend: HashBackend | undefined;
  /** The chain format of the log (see chain.ts): a new log's, or the one an existing log was written in. */
  private format: ChainFormat = CHAIN_FORMAT;
  /** The chain of the log so far (see chain.ts): the hash the last sealed line carries. */
  private head: Buffer | undefined;
  /** {@link head} as hex, made when asked. */
  private headHex: string | undefined;
  /** Where a batch of small lines is encoded, hashed and written from (see sealBatch): reused batch after batch. */
  private readonly scratch = Buffer.allocUnsafe(1 << 16);

  constructor(options: LogWriterOptions) {
    this.paths = options.paths;
    this.sessionKey = options.sessionKey;
    this.runId = options.runId;
    this.durability = options.durability;
    this.redactor = options.redactor;
    this.index = new IndexWriter(options.paths.index, options.paths.events, options.indexInterval, options.runId);
  }

  /** Whether the log is open for appends (after {@link open}, before {@link close}). */
  get writable(): boolean {
    return this.ready;
  }

  get lastSeq(): number | undefined {
    return this.last;
  }

  get chainHead(): string | undefined {
    if (this.head === undefined) return undefined;
    return (this.headHex ??= this.head.toString('hex'));
  }

  get eventCount(): number {
    return this.lineCount;
  }

  get bytes(): number {
    return this.size;
  }

  /** One index entry every this many events. */
  get indexInterval(): number {
    return this.index.interval;
  }

  /** The writer's index entries (what readers of an open writer use). */
  get indexEntries(): IndexEntry[] {
    return this.index.entries;
  }

  /** See EventStore.open; `existing`: the run must exist already (see OpenWriterOptions.existing). */
  open(existing = false): Promise<OpenedLog> {
    // Closing counts as closed: an open that started after close() would finish on a writer its close has done with.
    if (this.closed || this.closing) return Promise.reject(new EventStoreError(`event store of run ${this.runId} is closed`, { path: this.paths.events }));
    this.opening ??= this.openWriter(existing).catch((error: unknown) => {
      this.opening = undefined;
      throw error;
    });
    return this.opening;
  }

  private async openWriter(existing: boolean): Promise<OpenedLog> {
    // A run that must exist is not recreated: its folder is not made, and one deleted since the caller read it (a
    // delete renames the folder away, then removes it) fails here, or at the log's open below.
    const gone = (error: unknown): unknown => (existing && (error as NodeJS.ErrnoException).code === 'ENOENT' ? new RunGoneError(this.sessionKey, this.runId, this.paths.dir) : error);
    let lock: FileLock | undefined;
    for (let attempt = 0; lock === undefined; attempt++) {
      // Before anything is created or locked: a folder of the run that is a link (to a folder elsewhere) or not a
      // folder at all is refused, naming it, so that nothing is written outside the data directory through it.
      assertRunDir(this.paths);
      if (!existing) mkdirSync(this.paths.dir, { recursive: true });
      try {
        lock = acquireLock(this.paths.lock, `run ${this.runId} of session ${this.sessionKey}`);
      } catch (error) {
        // A delete of this id in another process (`runs delete`, a prune) may remove the folder just made, which holds
        // no run yet: it is made again, once.
        if (!existing && attempt === 0 && (error as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw gone(error);
      }
    }
    try {
      // Read and write, created if missing (unless the run must exist), not in append mode: lines are written at the
      // end of the data, which the space reserved after it (see RESERVE_MIN) puts before the end of the file.
      let fd: number;
      try {
        // Only a regular file of the run's own (see own-file.ts): a link planted in its place, to a file outside the
        // data directory, is refused, never appended to.
        fd = openOwnFile(this.paths.events, existing ? constants.O_RDWR : constants.O_RDWR | constants.O_CREAT, this.runId);
      } catch (error) {
        throw gone(error);
      }
      this.fd = fd;
      const fileSize = fstatSync(fd).size;
      const pending = readPending(this.paths.pendingBatch);
      const batch = pending === 'torn' ? undefined : pending;
      let size = 0;
      if (fileSize > 0) {
        const data = await endOfData(fd, fileSize);
        // A log changed after its last writer closed it is damaged: refused before the marker (the witness) is
        // rewritten.
        this.refuseCutSinceClose(batch, data);
        // A batch in flight (a crash in the middle of writing it) is cut, unless the log contradicts the marker.
        const inFlight = batch !== undefined && data > batch.start && data < batch.end;
        if (inFlight && (await markerContradicted(this.paths.events, batch, data))) {
          throw new EventStoreError(`${contradictedMarker(this.paths.pendingBatch, batch, this.paths.events)}. Check it with 'backpackflow runs verify ${this.runId}'; it cannot be continued.`, {
            path: this.paths.pendingBatch,
          });
        }
        size = inFlight ? batch.start : data;
        if (size > 0) size = await endOfLastLine(fd, size);
      } else this.refuseCutSinceClose(batch, 0);
      // Not append mode: the marker is rewritten in place (positional writes of a fixed-size record). A marker that
      // is not a regular file of its own was refused above (readPending) or is here, before anything is written.
      this.marker = BatchMarker.open(this.paths.pendingBatch, this.runId);
      if (batch !== undefined) this.marker.gen = batch.gen;
      this.marker.clear();
      // The writer starts at the end of the last whole line, with no space reserved: what lies past it (a torn line,
      // an unfinished batch, the space a crashed writer reserved) is cut.
      if (size < fileSize) ftruncateSync(fd, size);
      if (size > 0) {
        fdatasyncSync(fd);
        // A continued log: its marker no longer records the close before a line is added (else a crash of the machine
        // could leave the old close record beside the lines added since, which verify reports as a changed log).
        if (this.durability !== 'never') fdatasyncSync(this.marker.fd);
      }
      this.reserved = size;
      this.size = size;
      this.backend = await sharedHashBackend(CHAIN_BACKEND);
      await this.recoverChain();
      const { lineCount, lastText } = await this.index.recover(this.size);
      this.lineCount = lineCount;
      this.last = lastText === undefined ? undefined : seqOf(lastText);
      if (this.last === undefined && lineCount > 0) this.last = await this.lastValidSeq();
      this.lock = lock;
      this.ready = true;
      // Counted for the fsync policy (src/fs/fsync.ts) until close, which uncounts it whether or not it succeeds.
      runWriterOpened();
      this.counted = true;
      return { lastSeq: this.last, eventCount: this.lineCount };
    } catch (error) {
      this.closeDescriptors();
      lock.release();
      throw error;
    }
  }

  /** Throws when the marker says the log was closed with more data than it holds (see cutSinceClose). */
  private refuseCutSinceClose(pending: PendingBatch | undefined, data: number): void {
    const cut = cutSinceClose(pending, data, this.paths.events);
    if (cut !== undefined) {
      throw new EventStoreError(`${cut}. Check it with EventStore.verify() or 'backpackflow runs verify ${this.runId}'; it cannot be continued.`, { path: this.paths.events });
    }
  }

  /**
   * Finds where the chain stands: the last sealed line's chain. A log whose last lines are not covered by its chain
   * was cut or damaged, and a log with lines but no chain hash at all was written before chain hashes existed or had
   * its chain fields removed (which takes no hash): nothing proves either unchanged, and sealing its lines into this
   * writer's chain would vouch for them, so the writer refuses both.
   */
  private async recoverChain(): Promise<void> {
    const last = lastSealedLine(this.paths.events, this.size);
    if (last === undefined) {
      this.setHead(undefined);
      if (this.size === 0) return;
      throw new EventStoreError(
        `${this.paths.events} holds events but no chain hash: it was written before chain hashes existed, or its chain fields were removed, so nothing proves it unchanged. ` +
          `It cannot be continued (that would seal its lines as they are); 'backpackflow runs fork ${this.runId} --step N' starts a new run from one of its steps once you have checked what it holds.`,
        { path: this.paths.events },
      );
    }
    if (last.end < this.size) {
      throw new EventStoreError(
        `${this.paths.events}: the bytes after offset ${last.end} (after its last chain hash) are not covered by the chain: the log was cut or damaged there. ` +
          `Check it with EventStore.verify() or 'backpackflow runs verify ${this.runId}'; it cannot be continued.`,
        { path: this.paths.events },
      );
    }
    this.setHead(Buffer.from(last.chain, 'hex'));
    // The log is continued in its own chain format (see chain.ts), which its first line shows.
    const first = await firstLineOf(this.paths.events, this.size);
    const format = first.bytes === undefined ? undefined : chainFormatOf(this.backend!, genesis(this.backend!, this.sessionKey, this.runId), first.bytes);
    if (format === undefined) {
      throw new EventStoreError(
        `${this.paths.events}: its first line does not match its chain hash: the log was changed there. Check it with EventStore.verify() or 'backpackflow runs verify ${this.runId}'; it cannot be continued.`,
        { path: this.paths.events, line: 1 },
      );
    }
    this.format = format;
  }

  private setHead(head: Buffer | undefined): void {
    this.head = head;
    this.headHex = undefined;
  }

  private async lastValidSeq(): Promise<number | undefined> {
    let last: number | undefined;
    for await (const raw of readLines(this.paths.events, 0, this.size, 0)) last = seqOf(raw.text) ?? last;
    return last;
  }

  /** Seals a batch's lines (see chain.ts): what to write, and what to restore if writing it fails. */
  private seal(lines: (string | Buffer[])[]): { sealed: SealedBatch; restore: () => void } {
    const backend = this.backend!;
    const previous = this.head;
    const sealed = sealBatch(backend, previous ?? genesis(backend, this.sessionKey, this.runId), lines, this.lineCount === 0, { line: this.lineCount, format: this.format }, this.scratch);
    this.setHead(sealed.head);
    return { sealed, restore: () => this.setHead(previous) };
  }

  /**
   * Validates an event for this run and returns its stored form (redacted) as a line of JSON without its newline:
   * text, or for an event with a large payload the Buffers of its pieces (see event-encode.ts).
   */
  private prepare(event: StreamEvent, previousSeq: number | undefined, position: string): { line: string | Buffer[]; seq: number } {
    return encodeEvent({ sessionKey: this.sessionKey, runId: this.runId, redactor: this.redactor, where: this.paths.events }, event, previousSeq, position);
  }

  async append(event: StreamEvent): Promise<void> {
    if (!this.ready) await this.open();
    const { line, seq } = this.prepare(event, this.last, '');
    const { sealed, restore } = this.seal([line]);
    this.writeLines(1, [seq], sealed, false, restore);
    await this.syncIfAlways();
  }

  appendBatch(events: StreamEvent[]): Promise<void> {
    // Not an async function: a step boundary appends one batch, and with durability 'batch' or 'never' the append
    // is synchronous work; this saves the promise machinery of an async call on every step.
    if (!Array.isArray(events)) return Promise.reject(new EventStoreError('appendBatch expects an array of events', { path: this.paths.events }));
    if (events.length === 0) return DONE;
    if (!this.ready) return this.open().then(() => this.appendBatch(events));
    try {
      const lines: (string | Buffer[])[] = [];
      const seqs: number[] = [];
      let previous = this.last;
      for (let i = 0; i < events.length; i++) {
        const { line, seq } = this.prepare(events[i]!, previous, ` ${i} of the batch`);
        lines.push(line);
        seqs.push(seq);
        previous = seq;
      }
      const { sealed, restore } = this.seal(lines);
      lines.length = 0;
      this.writeLines(seqs.length, seqs, sealed, seqs.length > 1, restore);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.syncIfAlways();
  }

  private writeLines(count: number, seqs: number[], sealed: SealedBatch, framed: boolean, restore: () => void): void {
    this.assertWritable();
    const marker = this.marker!;
    const start = this.size;
    const { bytes, pieces } = sealed;
    if (framed) {
      marker.write({ gen: marker.gen + 1, start, end: start + bytes });
      if (this.durability === 'always') fdatasyncSync(marker.fd);
    }
    this.unsynced = true;
    try {
      let at = start;
      for (const piece of pieces) at = writePieceAt(this.fd!, piece, at);
      if (at > this.reserved) this.reserve(at);
    } catch (error) {
      ftruncateSync(this.fd!, start);
      this.reserved = start;
      restore();
      if (framed) marker.clear();
      throw new EventStoreError(`could not append to ${this.paths.events}: ${(error as Error).message}`, { path: this.paths.events, cause: error });
    }
    // Committed. The marker still names this batch until the next batch overwrites it or close() clears it.
    const firstLine = this.lineCount;
    this.size = start + bytes;
    this.lineCount += count;
    this.last = seqs[seqs.length - 1];
    this.index.record(firstLine, start, sealed.lineBytes, seqs);
  }

  /**
   * Writes zeros from `end` (the end of the data) on: the space the next steps write into (see RESERVE_MIN). Written
   * before the step's fdatasync, which then commits the file's new size once for the steps that fill the space.
   */
  private reserve(end: number): void {
    const length = Math.min(RESERVE_MAX, Math.max(RESERVE_MIN, end));
    zeros ??= Buffer.alloc(RESERVE_MAX);
    try {
      writePieceAt(this.fd!, zeros.subarray(0, length), end);
      this.reserved = end + length;
    } catch {
      // Best effort (a full disk): the lines are written; what part of the zeros was is cut, and the next step tries
      // again. The append itself does not fail for space it did not need.
      try {
        ftruncateSync(this.fd!, end);
      } catch {
        // The file keeps some zeros after its lines, which readers and the next writer take for unwritten space.
      }
      this.reserved = end;
    }
  }

  /** Cuts the space reserved after the last line (see RESERVE_MIN), so that a closed log ends with its last line. */
  private releaseReserve(): void {
    if (this.fd === undefined || this.reserved <= this.size || !this.ready) return;
    ftruncateSync(this.fd, this.size);
    this.reserved = this.size;
  }

  private assertWritable(): void {
    if (this.closed || !this.ready) throw new EventStoreError(`event store of run ${this.runId} is closed`, { path: this.paths.events });
    this.assertHeld();
  }

  /**
   * Throws a LockError when this writer no longer holds its run's lock (see {@link holdsLock}): what every write of
   * the run's files by this writer asks first (the log's appends, and the projection, keyframes and documents of
   * FileRunWriter), so that a writer that lost the run writes nothing more.
   */
  assertHeld(): void {
    if (!this.holdsLock()) throw new LockError(this.lost!, { path: this.paths.lock });
  }

  /**
   * Whether this writer still holds its run's lock: false once it found (now or before) that its lease ran out and
   * another process took the run over (FileLock.confirm; a store opened without a lock, or not yet opened, holds it).
   */
  holdsLock(): boolean {
    if (this.lost !== undefined) return false;
    if (!this.ready || this.lock?.confirm() !== false) return true;
    let by = '';
    try {
      const now = inspectLock(this.paths.lock);
      by = now.state === 'held' || now.state === 'stale' ? `: ${describeHolder(now.holder)} holds it now` : now.state === 'free' ? ': it has been removed' : '';
    } catch {
      // Who holds it now is only the message's detail.
    }
    this.lost =
      `the writer of run ${this.runId} of session ${this.sessionKey} no longer holds ${this.paths.lock}${by}. Its lease ran out (the process did not ` +
      `refresh it for more than the lease, 30 s: its event loop was blocked or it was suspended) and another process took the run over. ` +
      `Nothing more is written by this writer; see where the run stands with 'backpackflow runs show ${this.runId}'`;
    return false;
  }

  /**
   * Why this writer lost its lock (see FileLock.confirm), once a write found it: from then on it writes nothing, not
   * even on close (the files are the new holder's).
   */
  private lost: string | undefined;

  /** Whether this writer found that another process took its run over (see {@link assertWritable}). */
  get lockLost(): boolean {
    return this.lost !== undefined;
  }

  private syncIfAlways(): Promise<void> {
    return this.durability === 'always' ? this.sync() : DONE;
  }

  private async sync(): Promise<void> {
    this.unsynced = false;
    const sync = syncOnPool(this.fd!, 'data').catch((error: unknown) => {
      this.unsynced = true;
      throw error;
    });
    this.inflight.add(sync);
    try {
      await sync;
    } finally {
      this.inflight.delete(sync);
    }
  }

  /**
   * Makes what was written durable (durability 'batch' and 'always'): one fdatasync, after those in flight; none when
   * nothing was written since the last one was asked for (a second flush, or the close after a step's flush).
   */
  flush(): Promise<void> {
    if (!this.ready || this.durability === 'never') return DONE;
    if (!this.unsynced) return this.inflight.size === 0 ? DONE : Promise.all(this.inflight).then(() => undefined);
    this.unsynced = false;
    const fd = this.fd!;
    const synced = this.inflight.size === 0 ? syncDescriptor(fd, 'data') : Promise.all(this.inflight).then(() => syncDescriptor(fd, 'data'));
    if (synced === DONE) return DONE;
    return synced.catch((error: unknown) => {
      this.unsynced = true;
      throw error;
    });
  }

  /** Rebuilds the index with one entry every `interval` events (opening the log first if needed). */
  async rebuildIndex(interval: number): Promise<void> {
    if (!this.ready) await this.open();
    this.assertWritable();
    await this.index.rebuild(this.size, interval);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    // From here on no open starts (see open): one already under way is waited for.
    this.closing = true;
    if (this.opening) await this.opening.catch(() => undefined);
    try {
      // A writer that lost its lock leaves the files as they are: they are the new holder's (see assertWritable).
      const owner = this.holdsLock();
      // The cut of the reserve is not synced on its own (the flush below syncs only lines not yet synced): a crash
      // that undoes it leaves zeros after the last line, which readers and the next writer take for unwritten space.
      if (owner) this.releaseReserve();
      await this.flush();
      // The size the log was closed with (see PendingBatch.closed), after the lines it counts are durable.
      if (this.ready && owner) this.marker?.close(this.size);
    } finally {
      // A close that failed (its fdatasync or ftruncate did) is not retried by the runtime: left counted, this writer
      // would keep every fsync of the process on the event loop's policy for one open run (src/fs/fsync.ts) for good.
      // (It stays open with its lock, as before: a failed close leaves the files as they are.)
      if (this.counted) {
        this.counted = false;
        runWriterClosed();
      }
    }
    this.closed = true;
    this.ready = false;
    this.closeDescriptors();
    this.lock?.release();
    this.lock = undefined;
  }

  private closeDescriptors(): void {
    // Clear the marker so that later damage to the log (a shorter line) is never taken for the last batch (close()
    // has recorded the log's size in it already).
    if (this.marker !== undefined) {
      if (!this.closed && this.lost === undefined) this.marker.clear();
      closeSync(this.marker.fd);
      this.marker = undefined;
    }
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    this.index.close();
  }
}
