import {
  closeSync,
  fdatasync,
  fdatasyncSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  promises as fsp,
  statSync,
  writeSync,
} from 'node:fs';
import type { StreamEvent } from '../events/types.js';
import { readTextIfExistsSync, writeFileAtomic } from '../fs/index.js';
import { sharedHashBackend, type HashBackend } from '../hash/blake3.js';
import { CHAIN_BACKEND, ChainReader, chainOf, genesis, lastSealedLine, sealBatch, type Hasher } from './chain.js';
import { decodeLine, parseIndex, seqOf } from './log-format.js';
import { verifyLog } from './log-verify.js';
import { parseEvent } from './envelope.js';
import { EventStoreError, describeIssues } from './errors.js';
import { endOfLastLine, readLines, type RawLine } from './lines.js';
import type { FileLock } from '../fs/index.js';
import { acquireLock } from './lock.js';
import { runPaths, type RunPaths } from './paths.js';
import { redactorFor, type RedactionOptions, type Redactor } from '../redact/index.js';
import { durabilityOf, type Durability } from './types.js';

/** Options of {@link EventStore}. */
export interface EventStoreOptions {
  dataDir: string;
  sessionKey: string;
  runId: string;
  /** When appends reach the disk: `'always'` fsyncs each append before it resolves, `'batch'` (default) on
   * {@link EventStore.flush} and {@link EventStore.close}, `'never'` leaves it to the OS. */
  durability?: Durability;
  /** One index entry every this many events (default 1000). */
  indexInterval?: number;
  /** Secrets of your own to redact, on top of the built-in catalogue (see the README's Redaction section). */
  redaction?: RedactionOptions;
}

/** A line of events.jsonl that is not a valid event. `line` is 1-based. */
export interface CorruptLine {
  line: number;
  offset: number;
  error: string;
}

/** How readers treat a corrupt line in the middle of the log. */
export interface ReadOptions {
  /**
   * `'error'` (default): throw an {@link EventStoreError} naming the line. `'skip'`: skip it and report it with
   * `process.emitWarning`. A function: skip it and hand it to the function. Never silent.
   */
  onCorrupt?: 'error' | 'skip' | ((corrupt: CorruptLine) => void);
  /**
   * Start at this event number (0-based line of the log; default 0), found through the index, so that reading
   * the tail of a long log (e.g. replaying the events after a checkpoint) does not scan it from the start.
   */
  from?: number;
  /**
   * Receives each warning about lines that are not served: lines after the last chain hash (a cut or damaged log),
   * and, with `onCorrupt: 'skip'`, a batch that fails its chain hash. Default: `process.emitWarning`.
   */
  onWarning?: (message: string) => void;
  /**
   * Only events of these types are decoded and served (the others are still verified against the chain): a reader
   * that needs a few events of a long log (the checkpoints, to rebuild a step's state) skips parsing the rest.
   */
  types?: readonly string[];
}

/** An event as read, with the chain hash of its batch (undefined in a log written before chain hashes). */
export interface VerifiedEvent {
  event: StreamEvent;
  /** 0-based line of the log. */
  line: number;
  chain: string | undefined;
}

/** Result of {@link EventStore.verify}. */
export interface VerifyResult {
  /**
   * No corrupt line and no damage to the chain (a torn tail alone does not make a log invalid: it is cut on the
   * next open). A log written before chain hashes is ok when its lines are valid; `chain` says it is unverifiable.
   */
  ok: boolean;
  /**
   * `'verified'`: every line is covered by a chain hash that matches. `'damaged'`: a batch does not match its chain
   * hash, lines follow the last chain hash (a cut log), or the index points past the end of the log; `firstBadLine`
   * and `problem` say where. `'unverifiable'`: no line carries a chain hash (written before chain hashes existed).
   */
  chain: 'verified' | 'damaged' | 'unverifiable';
  /** The first line (1-based) that disagrees with the chain, or the first corrupt line. */
  firstBadLine?: number;
  /** What is wrong, naming the file and the lines. */
  problem?: string;
  /** Lines covered by a matching chain hash. */
  verifiedLines: number;
  /** The chain hash of the last sealed line. */
  chainHead?: string;
  /** Complete lines in the log. */
  lines: number;
  /** Valid events among them. */
  events: number;
  corruptLines: CorruptLine[];
  /** Bytes after the last complete line or of an unfinished batch, which readers ignore and the writer cuts. */
  tornTailBytes: number;
}

/** One entry of events.idx.jsonl: the event at 0-based `line` starts at byte `offset` and has `seq`. */
export interface IndexEntry {
  line: number;
  offset: number;
  seq: number;
}

/** What {@link EventStore.open} found in the log. */
export interface OpenedLog {
  /** seq of the last stored event, undefined for an empty log. */
  lastSeq: number | undefined;
  /** Number of events (lines) in the log. */
  eventCount: number;
}

interface PendingBatch {
  gen: number;
  start: number;
  end: number;
}

const PENDING_RECORD_BYTES = 96;
/** What the methods that have nothing to wait for return. */
const DONE = Promise.resolve();
const DEFAULT_INDEX_INTERVAL = 1000;

function fdatasyncAsync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fdatasync(fd, (error) => (error ? reject(error) : resolve())));
}

function writeAll(fd: number, data: Buffer): void {
  let written = 0;
  while (written < data.length) written += writeSync(fd, data, written, data.length - written);
}

/** Writes all `bytes` bytes of `text` as UTF-8: one `write` of the string (no Buffer), unless the kernel takes less. */
function writeText(fd: number, text: string, bytes: number): void {
  const written = writeSync(fd, text);
  if (written < bytes) writeAll(fd, Buffer.from(text).subarray(written));
}

/**
 * The batch marker: undefined when there is none (no file, or empty), 'torn' when it is being rewritten as we read
 * it (the caller reads again).
 */
function readPending(path: string): PendingBatch | undefined | 'torn' {
  const text = readTextIfExistsSync(path);
  if (text === undefined || text.trim() === '') return undefined;
  try {
    const parsed = JSON.parse(text) as PendingBatch;
    if (typeof parsed.gen === 'number' && typeof parsed.start === 'number' && typeof parsed.end === 'number') return parsed;
  } catch {
    // fall through
  }
  return 'torn';
}

/**
 * The append-only event log of one run: `sessions/<sessionKey>/runs/<runId>/events.jsonl`, one {@link StreamEvent}
 * per line, with `events.idx.jsonl` recording the byte offset of every `indexInterval`-th event so that
 * {@link readPage} seeks instead of scanning.
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
 * Reading needs no lock and never loads the whole log. Readers ignore a torn last line; a corrupt line in the middle
 * is an error naming its line number unless the reader asks to skip (see {@link ReadOptions}).
 */
export class EventStore {
  readonly sessionKey: string;
  readonly runId: string;
  readonly durability: Durability;
  readonly paths: RunPaths;
  private indexInterval: number;
  private readonly redactor: Redactor;

  private opening: Promise<OpenedLog> | undefined;
  private fd: number | undefined;
  private indexFd: number | undefined;
  private pendingFd: number | undefined;
  private lock: FileLock | undefined;
  private size = 0;
  private lineCount = 0;
  private last: number | undefined;
  private batchGen = 0;
  private readonly pendingRecord = Buffer.alloc(PENDING_RECORD_BYTES);
  private entries: IndexEntry[] = [];
  private readerIndex: { entries: IndexEntry[]; bytes: number } | undefined;
  private readonly inflight = new Set<Promise<void>>();
  private closed = false;
  /** Set once {@link open} has finished repairing the log: appends before that wait for it. */
  private writable = false;
  private backend: HashBackend | undefined;
  /** The chain of the log so far (see chain.ts): the hex of the last sealed line. */
  private head: string | undefined;
  /** For a log written before chain hashes: a hasher holding the genesis and every line, used by the first batch. */
  private legacyHasher: Hasher | undefined;
  /** Set when a failed write used up the legacy hasher: the chain can no longer be continued by this writer. */
  private chainLost = false;

  /** Validates the ids (throws InvalidIdError before any file is touched); opens nothing yet. */
  constructor(options: EventStoreOptions) {
    this.paths = runPaths(options.dataDir, options.sessionKey, options.runId);
    this.sessionKey = options.sessionKey;
    this.runId = options.runId;
    this.durability = durabilityOf(options, 'EventStore');
    this.indexInterval = options.indexInterval ?? DEFAULT_INDEX_INTERVAL;
    this.redactor = redactorFor(options.redaction);
    if (!Number.isInteger(this.indexInterval) || this.indexInterval < 1) {
      throw new EventStoreError(`indexInterval must be a positive integer, got ${String(options.indexInterval)}`);
    }
  }

  /** seq of the last stored event (after {@link open} or an append), undefined when the log is empty. */
  get lastSeq(): number | undefined {
    return this.last;
  }

  /**
   * The chain hash of the log after the last batch this writer wrote (or found on {@link open}), as 64 hex
   * characters; undefined before the first sealed line. Keyframes record it (see chain.ts).
   */
  get chainHead(): string | undefined {
    return this.head;
  }

  /** Number of events in the log as known to this writer (after {@link open}). */
  get eventCount(): number {
    return this.lineCount;
  }

  /**
   * Opens the log for writing: takes the lock (LockError when another writer holds it), repairs the tail, catches
   * the index up, and reports the last seq so that a resumed run continues the numbering. Idempotent.
   */
  open(): Promise<OpenedLog> {
    if (this.closed) return Promise.reject(new EventStoreError(`event store of run ${this.runId} is closed`, { path: this.paths.events }));
    this.opening ??= this.openWriter().catch((error: unknown) => {
      this.opening = undefined;
      throw error;
    });
    return this.opening;
  }

  private async openWriter(): Promise<OpenedLog> {
    mkdirSync(this.paths.dir, { recursive: true });
    const lock = acquireLock(this.paths.lock, `run ${this.runId} of session ${this.sessionKey}`);
    try {
      const fd = openSync(this.paths.events, 'a+');
      this.fd = fd;
      let size = fstatSync(fd).size;
      const pending = readPending(this.paths.pendingBatch);
      // Not append mode: the marker is rewritten in place (positional writes of a fixed-size record).
      this.pendingFd = openSync(this.paths.pendingBatch, 'w');
      if (pending !== undefined && pending !== 'torn') {
        this.batchGen = pending.gen;
        if (size > pending.start && size < pending.end) {
          ftruncateSync(fd, pending.start);
          size = pending.start;
        }
      }
      this.writePending({ gen: this.batchGen + 1, start: 0, end: 0 });
      if (size > 0) {
        const handle = await fsp.open(this.paths.events, 'r');
        try {
          const end = await endOfLastLine(handle, size);
          if (end < size) {
            ftruncateSync(fd, end);
            size = end;
          }
        } finally {
          await handle.close();
        }
      }
      if (size > 0) fdatasyncSync(fd);
      this.size = size;
      this.backend = await sharedHashBackend(CHAIN_BACKEND);
      await this.recoverChain();
      await this.recoverIndex();
      this.lock = lock;
      this.writable = true;
      return { lastSeq: this.last, eventCount: this.lineCount };
    } catch (error) {
      this.closeDescriptors();
      lock.release();
      throw error;
    }
  }

  /**
   * Finds where the chain stands: the last sealed line's chain, or for a log written before chain hashes, a hasher
   * over every line (the first batch seals them all). A log whose last lines are not covered by its chain was cut or
   * damaged: the writer refuses to seal them into its own batches.
   */
  private async recoverChain(): Promise<void> {
    const backend = this.backend!;
    const last = await lastSealedLine(this.paths.events, this.size);
    this.legacyHasher = undefined;
    if (last !== undefined) {
      if (last.end < this.size) {
        throw new EventStoreError(
          `${this.paths.events}: the bytes after offset ${last.end} (after its last chain hash) are not covered by the chain: the log was cut or damaged there. ` +
            `Check it with EventStore.verify() or 'backpackflow runs verify ${this.runId}'; it cannot be continued.`,
          { path: this.paths.events },
        );
      }
      this.head = last.chain;
      return;
    }
    this.head = undefined;
    if (this.size === 0) return;
    // No line is sealed, so the first seal covers the genesis and the whole file as it is. A streaming hasher (the
    // native one, when it loads): the wasm one keeps what it is fed until the digest.
    const hasher = (await sharedHashBackend('native')).hasher();
    hasher.update(genesis(backend, this.sessionKey, this.runId));
    const handle = await fsp.open(this.paths.events, 'r');
    try {
      const chunk = Buffer.allocUnsafe(1 << 20);
      for (let position = 0; position < this.size; ) {
        const { bytesRead } = await handle.read(chunk, 0, Math.min(chunk.length, this.size - position), position);
        if (bytesRead === 0) break;
        hasher.update(chunk.subarray(0, bytesRead));
        position += bytesRead;
      }
    } finally {
      await handle.close();
    }
    this.legacyHasher = hasher;
  }

  /** Seals a batch's lines (see chain.ts): the text to write, and what to restore if writing it fails. */
  private seal(lines: string[]): { text: string; restore: () => void } {
    if (this.chainLost) {
      throw new EventStoreError(`event store of run ${this.runId}: an earlier write failed; close it and open a new one to go on`, { path: this.paths.events });
    }
    const backend = this.backend!;
    const previous = this.head;
    const legacy = this.legacyHasher;
    const start = legacy ?? (previous === undefined ? genesis(backend, this.sessionKey, this.runId) : Buffer.from(previous, 'hex'));
    const sealed = sealBatch(backend, start, lines, this.lineCount === 0);
    this.head = sealed.head.toString('hex');
    this.legacyHasher = undefined;
    const restore = (): void => {
      this.head = previous;
      this.legacyHasher = legacy;
      if (legacy !== undefined) this.chainLost = true;
    };
    return { text: sealed.text, restore };
  }

  /** Loads the index, drops entries that do not match the log, rebuilds it if needed, then indexes the tail. */
  private async recoverIndex(): Promise<void> {
    let entries = parseIndex(await fsp.readFile(this.paths.index, 'utf8').catch(() => ''));
    const valid = entries.filter((e) => e.offset < this.size);
    let rewrite = valid.length !== entries.length;
    entries = valid;
    const lastEntry = entries[entries.length - 1];
    if (lastEntry && !(await this.entryMatches(lastEntry))) {
      entries = [];
      rewrite = true;
    }
    const from = entries[entries.length - 1] ?? { line: 0, offset: 0, seq: -1 };
    let lastText: string | undefined;
    let count = from.line;
    for await (const raw of readLines(this.paths.events, from.offset, this.size, from.line)) {
      const previous = entries[entries.length - 1];
      if (previous === undefined || raw.index - previous.line >= this.indexInterval) {
        const seq = seqOf(raw.text);
        if (seq !== undefined) {
          entries.push({ line: raw.index, offset: raw.offset, seq });
          rewrite = true;
        }
      }
      lastText = raw.text;
      count = raw.index + 1;
    }
    this.lineCount = count;
    this.last = lastText === undefined ? undefined : seqOf(lastText);
    if (this.last === undefined && count > 0) this.last = await this.lastValidSeq();
    this.entries = entries;
    if (rewrite) await writeFileAtomic(this.paths.index, entries.map((e) => JSON.stringify(e) + '\n').join(''));
    this.indexFd = openSync(this.paths.index, 'a');
  }

  private async lastValidSeq(): Promise<number | undefined> {
    let last: number | undefined;
    for await (const raw of readLines(this.paths.events, 0, this.size, 0)) last = seqOf(raw.text) ?? last;
    return last;
  }

  /** Whether the log has a line starting at `entry.offset` whose seq is `entry.seq`. */
  private async entryMatches(entry: IndexEntry): Promise<boolean> {
    if (entry.offset > 0) {
      const handle = await fsp.open(this.paths.events, 'r');
      try {
        const byte = Buffer.alloc(1);
        await handle.read(byte, 0, 1, entry.offset - 1);
        if (byte[0] !== 0x0a) return false;
      } finally {
        await handle.close();
      }
    }
    for await (const raw of readLines(this.paths.events, entry.offset, this.size, entry.line)) {
      return seqOf(raw.text) === entry.seq;
    }
    return false;
  }

  /** Rewrites the marker in place: one positional write of a fixed-size record, so the file is never empty. */
  private writePending(record: PendingBatch): void {
    const data = this.pendingRecord;
    data.fill(0x20, data.write(JSON.stringify(record)));
    let written = 0;
    while (written < data.length) written += writeSync(this.pendingFd!, data, written, data.length - written, written);
    this.batchGen = record.gen;
  }

  /** Validates an event for this run and returns its stored form (redacted) and line. */
  private prepare(event: StreamEvent, previousSeq: number | undefined, position: string): { line: string; seq: number } {
    const parsed = parseEvent(event);
    if (!parsed.success) {
      throw new EventStoreError(`invalid event${position}: ${describeIssues(parsed.error, '(event)')}`, { path: this.paths.events });
    }
    let valid = parsed.data;
    if (valid.chain !== undefined) {
      // A chain hash is the log's to set (see chain.ts): one that comes with an event is dropped.
      const { chain: _chain, ...rest } = valid;
      valid = rest;
    }
    if (valid.runId !== this.runId) {
      throw new EventStoreError(`event${position} belongs to run ${JSON.stringify(valid.runId)}, this log is run ${JSON.stringify(this.runId)}`, {
        path: this.paths.events,
      });
    }
    if (valid.sessionKey !== undefined && valid.sessionKey !== this.sessionKey) {
      throw new EventStoreError(
        `event${position} has sessionKey ${JSON.stringify(valid.sessionKey)}, this log is session ${JSON.stringify(this.sessionKey)}`,
        { path: this.paths.events },
      );
    }
    if (previousSeq !== undefined && valid.seq <= previousSeq) {
      throw new EventStoreError(
        `event${position} has seq ${valid.seq}, not greater than the last stored seq ${previousSeq}; continue from lastSeq + 1`,
        { path: this.paths.events },
      );
    }
    const { value: payload, redacted } = this.redactor.redact(valid.payload);
    const stored: StreamEvent = redacted ? { ...valid, payload, redaction: { containsSecrets: true } } : valid;
    return { line: JSON.stringify(stored) + '\n', seq: valid.seq };
  }

  /** Appends one event. Resolves once written (and, with durability 'always', fsynced). */
  async append(event: StreamEvent): Promise<void> {
    if (!this.writable) await this.open();
    const { line, seq } = this.prepare(event, this.last, '');
    const lines = [line];
    const { text, restore } = this.seal(lines);
    this.writeLines(lines, [seq], text, false, restore);
    await this.syncIfAlways();
  }

  /**
   * Appends several events atomically: after a crash either all of them are in the log or none. Every event is
   * validated before anything is written; one invalid event rejects the whole batch.
   */
  appendBatch(events: StreamEvent[]): Promise<void> {
    // Not an async function: a step boundary appends one batch, and with durability 'batch' or 'never' the append
    // is synchronous work; this saves the promise machinery of an async call on every step.
    if (!Array.isArray(events)) return Promise.reject(new EventStoreError('appendBatch expects an array of events', { path: this.paths.events }));
    if (events.length === 0) return DONE;
    if (!this.writable) return this.open().then(() => this.appendBatch(events));
    try {
      const lines: string[] = [];
      const seqs: number[] = [];
      let previous = this.last;
      for (let i = 0; i < events.length; i++) {
        const { line, seq } = this.prepare(events[i]!, previous, ` ${i} of the batch`);
        lines.push(line);
        seqs.push(seq);
        previous = seq;
      }
      const { text, restore } = this.seal(lines);
      this.writeLines(lines, seqs, text, lines.length > 1, restore);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.syncIfAlways();
  }

  private writeLines(lines: string[], seqs: number[], text: string, framed: boolean, restore: () => void): void {
    this.assertWritable();
    const start = this.size;
    const bytes = Buffer.byteLength(text);
    if (framed) {
      this.writePending({ gen: this.batchGen + 1, start, end: start + bytes });
      if (this.durability === 'always') fdatasyncSync(this.pendingFd!);
    }
    try {
      writeText(this.fd!, text, bytes);
    } catch (error) {
      ftruncateSync(this.fd!, start);
      restore();
      if (framed) this.writePending({ gen: this.batchGen + 1, start: 0, end: 0 });
      throw new EventStoreError(`could not append to ${this.paths.events}: ${(error as Error).message}`, { path: this.paths.events, cause: error });
    }
    // Committed. The marker still names this batch until the next batch overwrites it or close() clears it.
    let indexText = '';
    const lastEntry = this.entries[this.entries.length - 1];
    // Byte offsets are counted only when this batch reaches the next index entry.
    if (lastEntry === undefined || this.lineCount + lines.length - 1 - lastEntry.line >= this.indexInterval) {
      let offset = start;
      for (let i = 0; i < lines.length; i++) {
        const line = this.lineCount + i;
        const previous = this.entries[this.entries.length - 1];
        if (previous === undefined || line - previous.line >= this.indexInterval) {
          const entry = { line, offset, seq: seqs[i]! };
          this.entries.push(entry);
          indexText += JSON.stringify(entry) + '\n';
        }
        offset += Buffer.byteLength(lines[i]!);
      }
    }
    this.size = start + bytes;
    this.lineCount += lines.length;
    this.last = seqs[seqs.length - 1];
    if (indexText) writeAll(this.indexFd!, Buffer.from(indexText));
  }

  private assertWritable(): void {
    if (this.closed || !this.writable) throw new EventStoreError(`event store of run ${this.runId} is closed`, { path: this.paths.events });
  }

  private syncIfAlways(): Promise<void> {
    return this.durability === 'always' ? this.sync() : DONE;
  }

  private async sync(): Promise<void> {
    const sync = fdatasyncAsync(this.fd!);
    this.inflight.add(sync);
    try {
      await sync;
    } finally {
      this.inflight.delete(sync);
    }
  }

  /** Makes every append so far durable (fsync) unless durability is 'never'. The runtime calls it at each step boundary. */
  flush(): Promise<void> {
    if (!this.writable || this.durability === 'never') return DONE;
    return Promise.all(this.inflight).then(() => fdatasyncAsync(this.fd!));
  }

  /** Flushes (unless durability is 'never'), closes the files and releases the writer lock. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.opening) await this.opening.catch(() => undefined);
    await this.flush();
    this.closed = true;
    this.writable = false;
    this.closeDescriptors();
    this.lock?.release();
    this.lock = undefined;
  }

  private closeDescriptors(): void {
    // Clear the marker so that later damage to the log (a shorter line) is never taken for the last batch.
    if (this.pendingFd !== undefined) this.writePending({ gen: this.batchGen + 1, start: 0, end: 0 });
    for (const fd of [this.fd, this.indexFd, this.pendingFd]) if (fd !== undefined) closeSync(fd);
    this.fd = this.indexFd = this.pendingFd = undefined;
  }

  /**
   * Bytes of the log that hold committed, complete lines: excludes a batch being written (or left unfinished by a
   * crash) and a torn last line. Safe against a concurrent writer (see the class comment).
   */
  private async committedEnd(): Promise<number> {
    for (let attempt = 0; ; attempt++) {
      const before = readPending(this.paths.pendingBatch);
      let size: number;
      try {
        size = statSync(this.paths.events).size;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
        throw error;
      }
      const after = readPending(this.paths.pendingBatch);
      if (attempt < 100 && (before === 'torn' || after === 'torn' || before?.gen !== after?.gen)) continue;
      if (after !== undefined && after !== 'torn' && size > after.start && size < after.end) size = after.start;
      if (size === 0) return 0;
      const handle = await fsp.open(this.paths.events, 'r');
      try {
        return await endOfLastLine(handle, size);
      } finally {
        await handle.close();
      }
    }
  }

  private corruptHandler(options: ReadOptions): (corrupt: CorruptLine) => void {
    const mode = options.onCorrupt ?? 'error';
    if (typeof mode === 'function') return mode;
    if (mode === 'skip') {
      return (c) => process.emitWarning(`skipped corrupt line ${c.line} of ${this.paths.events}: ${c.error}`, 'EventStoreCorruptLine');
    }
    return (c) => {
      throw new EventStoreError(`corrupt event at line ${c.line} of ${this.paths.events}: ${c.error}`, { path: this.paths.events, line: c.line });
    };
  }

  /** Streams every event (from `options.from` on) in order, without loading the log into memory. */
  async *readStream(options: ReadOptions = {}): AsyncGenerator<StreamEvent> {
    for await (const read of this.readVerified(options)) yield read.event;
  }

  /**
   * Streams every event (from `options.from` on) with the chain hash of its batch. Only what the chain vouches for
   * is served: a batch is handed out once its chain hash matches (see chain.ts); a batch that does not match is an
   * error naming its lines (with `onCorrupt: 'skip'`, a warning, and it is not served); lines after the last chain
   * hash are not served, with a warning. A log written before chain hashes is read as it is.
   */
  async *readVerified(options: ReadOptions = {}): AsyncGenerator<VerifiedEvent> {
    const from = options.from ?? 0;
    if (!Number.isInteger(from) || from < 0) throw new EventStoreError(`read: from must be a non-negative integer, got ${from}`);
    const onCorrupt = this.corruptHandler(options);
    // The envelope is written by JSON.stringify with `type` a top-level string: a line of another type never holds
    // this text outside an escaped string (a false match is decoded and filtered by its type below).
    const wanted = options.types?.map((type) => `"type":${JSON.stringify(type)}`);
    for await (const { raw, chain } of this.verifiedLines(from, options)) {
      if (wanted !== undefined && !wanted.some((w) => raw.text.includes(w))) continue;
      const decoded = decodeLine(raw.text, raw.index, raw.offset);
      if ('error' in decoded) onCorrupt(decoded);
      else if (options.types === undefined || options.types.includes(decoded.type)) yield { event: decoded, line: raw.index, chain };
    }
  }

  /** Whether the first line of the log is sealed: the log was written with chain hashes (see chain.ts). */
  private async firstLineSealed(end: number): Promise<boolean> {
    // The first line is short (run.started): one small read, a full scan only for a longer one.
    const handle = await fsp.open(this.paths.events, 'r');
    try {
      const head = Buffer.allocUnsafe(Math.min(4096, end));
      const { bytesRead } = await handle.read(head, 0, head.length, 0);
      const nl = head.subarray(0, bytesRead).indexOf(0x0a);
      if (nl !== -1) return chainOf(head.subarray(0, nl)) !== undefined;
    } finally {
      await handle.close();
    }
    for await (const raw of readLines(this.paths.events, 0, end, 0, () => false)) return chainOf(raw.bytes) !== undefined;
    return false;
  }

  /**
   * The committed lines from line `from` on, verified against the chain (see {@link readVerified}). Reading starts
   * at the sealed line before the nearest index entry at or before `from`, found by reading backwards from the
   * entry; the batches after it are checked against its chain. The indexed line must have the indexed seq; if not
   * (an index rebuilt or replaced behind this reader's back), the index is dropped and the log is read from the start.
   */
  private async *verifiedLines(from: number, options: ReadOptions): AsyncGenerator<{ raw: RawLine; chain: string | undefined }> {
    const end = await this.committedEnd();
    if (end === 0) return;
    const backend = await sharedHashBackend(CHAIN_BACKEND);
    const warn = options.onWarning ?? ((message: string) => process.emitWarning(message, 'EventStoreWarning'));
    const chained = await this.firstLineSealed(end);
    // Where to start: the sealed line before the nearest index entry at or before `from` (found by reading backwards
    // from the entry), so that every batch from there on is checked against a chain; else the start of the log.
    let entry: IndexEntry | undefined;
    let anchor: { line: number; offset: number; chain: Buffer } | undefined;
    if (from > 0) {
      entry = this.nearestEntry(await this.indexEntries(), from, end);
      const sealed = entry !== undefined && chained ? await lastSealedLine(this.paths.events, entry.offset) : undefined;
      if (sealed !== undefined) anchor = { line: entry!.line - sealed.linesAfter, offset: sealed.end, chain: Buffer.from(sealed.chain, 'hex') };
      else if (chained) entry = undefined;
    }
    for (;;) {
      const start = anchor ?? entry ?? { line: 0, offset: 0 };
      const reader: ChainReader | undefined =
        anchor !== undefined ? new ChainReader(backend, anchor.chain) : entry === undefined ? new ChainReader(backend, genesis(backend, this.sessionKey, this.runId)) : undefined;
      let retry = false;
      let batch: RawLine[] = [];
      let batchStart = start.line;
      let lastSealed = anchor === undefined ? -1 : anchor.line - 1;
      let lastLine = -1;
      const checked = entry;
      for await (const raw of readLines(this.paths.events, start.offset, end, start.line, (i) => i >= from || i === checked?.line)) {
        lastLine = raw.index;
        if (raw.index === checked?.line && seqOf(raw.text) !== checked.seq) {
          // The index was rebuilt or replaced behind this reader's back: read from the start.
          this.readerIndex = undefined;
          retry = true;
          break;
        }
        if (!chained) {
          // Written before chain hashes: served as read; chain hashes written later (a resumed run) are still checked.
          if (reader !== undefined) {
            const step = reader.feed(raw.bytes);
            if (step.kind !== 'open') {
              if (step.kind === 'mismatch') this.damagedBatch([], batchStart, raw.index, options, warn);
              lastSealed = raw.index;
              batchStart = raw.index + 1;
            }
          }
          if (raw.index >= from) yield { raw, chain: undefined };
          continue;
        }
        if (reader === undefined) continue; // unreachable: a log with chain hashes is read from a sealed line
        const step = reader.feed(raw.bytes);
        if (raw.index >= from) batch.push(raw); // its bytes are not kept valid, and not needed once hashed
        if (step.kind === 'open') continue;
        lastSealed = raw.index;
        if (step.kind === 'verified') {
          for (const line of batch) yield { raw: line, chain: step.chain };
        } else {
          this.damagedBatch(batch, batchStart, raw.index, options, warn);
        }
        batch = [];
        batchStart = raw.index + 1;
      }
      if (retry) {
        if (entry === undefined) return; // unreachable: from the start, nothing is checked against the index
        entry = anchor = undefined;
        continue;
      }
      if ((chained || lastSealed >= 0) && lastLine > lastSealed) {
        warn(
          `${this.paths.events}: lines ${lastSealed + 2}-${lastLine + 1} come after its last chain hash (line ${lastSealed + 1}): ` +
            `the log was cut or damaged there; they are not served`,
        );
      }
      return;
    }
  }

  /**
   * A batch (lines `first`..`last`, 0-based) whose chain hash does not match. A corrupt line in it is reported as
   * such; otherwise the batch is: an error, or with `onCorrupt` other than `'error'`, a warning (nothing of it is
   * served either way).
   */
  private damagedBatch(batch: RawLine[], first: number, last: number, options: ReadOptions, warn: (message: string) => void): void {
    const onCorrupt = this.corruptHandler(options);
    for (const line of batch) {
      const decoded = decodeLine(line.text, line.index, line.offset);
      if ('error' in decoded) onCorrupt(decoded);
    }
    const message = `${this.paths.events}: lines ${first + 1}-${last + 1} do not match the chain hash on line ${last + 1}: the log was changed there`;
    if ((options.onCorrupt ?? 'error') === 'error') throw new EventStoreError(message, { path: this.paths.events, line: first + 1 });
    warn(`${message}; they are not served`);
  }

  /**
   * How many events the readers serve: every complete line the chain vouches for (see {@link readVerified}; a
   * corrupt line counts as a line, as in {@link readPage}), without parsing them.
   */
  async countEvents(options: ReadOptions = {}): Promise<number> {
    let count = 0;
    for await (const _line of this.verifiedLines(0, options)) count++;
    return count;
  }

  /** Every event, in order. */
  async readAll(options: ReadOptions = {}): Promise<StreamEvent[]> {
    const events: StreamEvent[] = [];
    for await (const event of this.readStream(options)) events.push(event);
    return events;
  }

  /** The events for which `predicate` holds, in order (streamed, so only the matches are kept in memory). */
  async readFiltered(predicate: (event: StreamEvent) => boolean, options: ReadOptions = {}): Promise<StreamEvent[]> {
    const events: StreamEvent[] = [];
    for await (const event of this.readStream(options)) if (predicate(event)) events.push(event);
    return events;
  }

  /**
   * Up to `pageSize` events starting at event number `offset` (0-based line number in the log). Seeks to the nearest
   * indexed byte offset at or before `offset`, so the cost does not grow with `offset`. A corrupt line counts as a
   * line (it is reported per `options`, see {@link ReadOptions}).
   */
  async readPage(pageSize: number, offset: number, options: ReadOptions = {}): Promise<StreamEvent[]> {
    if (!Number.isInteger(pageSize) || pageSize < 0) throw new EventStoreError(`readPage: pageSize must be a non-negative integer, got ${pageSize}`);
    if (!Number.isInteger(offset) || offset < 0) throw new EventStoreError(`readPage: offset must be a non-negative integer, got ${offset}`);
    const events: StreamEvent[] = [];
    if (pageSize === 0) return events;
    const onCorrupt = this.corruptHandler(options);
    for await (const { raw } of this.verifiedLines(offset, options)) {
      if (raw.index >= offset + pageSize) break;
      const decoded = decodeLine(raw.text, raw.index, raw.offset);
      if ('error' in decoded) onCorrupt(decoded);
      else events.push(decoded);
    }
    return events;
  }

  /** The last index entry at or before `line` inside the committed log, or undefined (read from the start). */
  private nearestEntry(entries: IndexEntry[], line: number, end: number): IndexEntry | undefined {
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

  /** The index entries: the writer's own, or the file's, read incrementally and cached by readers. */
  private async indexEntries(): Promise<IndexEntry[]> {
    if (this.writable) return this.entries;
    let size: number;
    try {
      size = statSync(this.paths.index).size;
    } catch {
      this.readerIndex = undefined;
      return [];
    }
    let cache = this.readerIndex;
    if (cache === undefined || size < cache.bytes) cache = { entries: [], bytes: 0 };
    if (size > cache.bytes) {
      const handle = await fsp.open(this.paths.index, 'r');
      try {
        const buffer = Buffer.alloc(size - cache.bytes);
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, cache.bytes);
        const complete = buffer.subarray(0, bytesRead).lastIndexOf(0x0a) + 1;
        const fresh = parseIndex(buffer.toString('utf8', 0, complete));
        const lastLine = cache.entries[cache.entries.length - 1]?.line ?? -1;
        cache = { entries: cache.entries.concat(fresh.filter((e) => e.line > lastLine)), bytes: cache.bytes + complete };
      } finally {
        await handle.close();
      }
    }
    this.readerIndex = cache;
    return cache.entries;
  }

  /**
   * Rebuilds events.idx.jsonl with one entry every `eventsPerEntry` events (and uses that interval for later
   * appends). Takes the writer lock if this store does not hold it yet. The file is replaced atomically.
   */
  async buildIndex(eventsPerEntry: number = this.indexInterval): Promise<void> {
    if (!Number.isInteger(eventsPerEntry) || eventsPerEntry < 1) {
      throw new EventStoreError(`buildIndex: eventsPerEntry must be a positive integer, got ${eventsPerEntry}`, { path: this.paths.index });
    }
    if (!this.writable) await this.open();
    const entries: IndexEntry[] = [];
    for await (const raw of readLines(this.paths.events, 0, this.size, 0, (i) => i % eventsPerEntry === 0)) {
      if (raw.index % eventsPerEntry !== 0) continue;
      const seq = seqOf(raw.text);
      if (seq !== undefined) entries.push({ line: raw.index, offset: raw.offset, seq });
    }
    closeSync(this.indexFd!);
    this.indexFd = undefined;
    await writeFileAtomic(this.paths.index, entries.map((e) => JSON.stringify(e) + '\n').join(''));
    this.indexFd = openSync(this.paths.index, 'a');
    this.entries = entries;
    this.indexInterval = eventsPerEntry;
  }



  /**
   * Checks the whole log: recomputes the chain (see chain.ts) and reports the first line that disagrees with it,
   * corrupt lines with their 1-based numbers, lines after the last chain hash (a cut log), index entries that do not
   * match the log, and the torn tail (bytes a crash left after the last complete line or in an unfinished batch,
   * which the next writer cuts). Reads only; never repairs.
   */
  async verify(): Promise<VerifyResult> {
    return verifyLog({ paths: this.paths, sessionKey: this.sessionKey, runId: this.runId, end: await this.committedEnd() });
  }
}
