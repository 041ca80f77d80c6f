/**
 * The readers of the event log (see event-store.ts): they need no lock, never load the whole log, serve only what
 * the chain vouches for (see chain.ts), and start through the index.
 */
import type { StreamEvent } from '../events/types.js';
import { sharedHashBackend, type HashBackend } from '../hash/blake3.js';
import { committedLog } from './batch-marker.js';
import { CHAIN_BACKEND, ChainReader, chainFormatOf, genesis, sealedLinesBefore, type ChainFormat, type ChainStep } from './chain.js';
import { EventStoreError } from './errors.js';
import { readLineBatches, readLines, type RawLine } from './lines.js';
import { decodeLine, seqOf, writtenType } from './log-format.js';
import { firstLineOf, lineVouched, nearestEntry } from './log-index.js';
import type { CorruptLine, IndexEntry, ReadOptions, VerifiedEvent } from './log-types.js';
import type { RunPaths } from './paths.js';

/** A committed line the chain vouches for (`chain`: its batch's chain hash; undefined in a log written before them). */
interface VerifiedLine {
  raw: RawLine;
  chain: string | undefined;
}

/** What a {@link LogReader} reads: a run's log, and where its index entries come from. */
export interface LogReaderOptions {
  paths: RunPaths;
  sessionKey: string;
  runId: string;
  /** The index entries as they are now (the writer's own, or the file's). */
  indexEntries: () => Promise<IndexEntry[]>;
  /** Called when the index does not match the log (rebuilt or replaced behind the reader's back). */
  indexStale: () => void;
}

/**
 * The types `options` asks for, and a test of a line's bytes that rejects one of another type: a line whose type can
 * be read from its head as the writer writes it (see writtenType) is not even turned into text unless that type is
 * wanted; any other line is decoded, and filtered by its type after.
 */
function typeFilter(options: ReadOptions): { wanted: Set<string> | undefined; unwanted: ((bytes: Buffer) => boolean) | undefined } {
  if (options.types === undefined) return { wanted: undefined, unwanted: undefined };
  const wanted = new Set(options.types);
  return {
    wanted,
    unwanted: (bytes) => {
      const type = writtenType(bytes);
      return type !== undefined && !wanted.has(type);
    },
  };
}

/** The event of a verified line if its type is wanted; a line that is not a valid event goes to `onCorrupt`. */
function served({ raw, chain }: VerifiedLine, wanted: Set<string> | undefined, onCorrupt: (corrupt: CorruptLine) => void): VerifiedEvent | undefined {
  const decoded = decodeLine(raw.text, raw.index, raw.offset);
  if ('error' in decoded) onCorrupt(decoded);
  else if (wanted === undefined || wanted.has(decoded.type)) return { event: decoded, line: raw.index, chain };
  return undefined;
}

/** Reads one run's log (the facade, `EventStore`, documents the behaviour). */
export class LogReader {
  private readonly paths: RunPaths;

  constructor(private readonly options: LogReaderOptions) {
    this.paths = options.paths;
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

  async *readStream(options: ReadOptions = {}): AsyncGenerator<StreamEvent> {
    for await (const read of this.readVerified(options)) yield read.event;
  }

  async *readVerified(options: ReadOptions = {}): AsyncGenerator<VerifiedEvent> {
    const from = options.from ?? 0;
    if (!Number.isInteger(from) || from < 0) throw new EventStoreError(`read: from must be a non-negative integer, got ${from}`);
    const onCorrupt = this.corruptHandler(options);
    const { wanted, unwanted } = typeFilter(options);
    for await (const lines of this.verifiedLines(from, options, unwanted)) {
      for (const line of lines) {
        const verified = served(line, wanted, onCorrupt);
        if (verified !== undefined) yield verified;
      }
    }
  }

  /**
   * {@link readVerified}'s events a batch at a time (those of one chunk of the log read), for readers that collect a
   * whole log: one asynchronous step per chunk, not per event.
   */
  async *readVerifiedBatches(options: ReadOptions = {}): AsyncGenerator<VerifiedEvent[]> {
    const from = options.from ?? 0;
    if (!Number.isInteger(from) || from < 0) throw new EventStoreError(`read: from must be a non-negative integer, got ${from}`);
    const onCorrupt = this.corruptHandler(options);
    const { wanted, unwanted } = typeFilter(options);
    for await (const lines of this.verifiedLines(from, options, unwanted)) {
      const out: VerifiedEvent[] = [];
      for (const line of lines) {
        const verified = served(line, wanted, onCorrupt);
        if (verified !== undefined) out.push(verified);
      }
      if (out.length > 0) yield out;
    }
  }





  /**
   * The committed lines from line `from` on, verified against the chain (see `EventStore.readVerified`). Reading
   * starts at the sealed line before the nearest index entry at or before `from`, found by reading backwards from
   * the entry; the batches after it are checked against its chain. The indexed line must have the indexed seq; if
   * not (an index rebuilt or replaced behind this reader's back), the index is dropped and the log is read from the
   * start. So is an entry whose line number the log does not vouch for (see lineVouched). Lines `unwanted` rejects
   * (by their bytes) are verified with their batch but not yielded.
   */
  private async *verifiedLines(
    from: number,
    options: ReadOptions,
    unwanted?: (bytes: Buffer) => boolean,
  ): AsyncGenerator<VerifiedLine[]> {
    const { end, cut, marker } = await committedLog(this.paths);
    const warn = options.onWarning ?? ((message: string) => process.emitWarning(message, 'EventStoreWarning'));
    if (cut !== undefined) warn(`${cut}; what it held after ${end} bytes is lost`);
    if (marker !== undefined) warn(marker);
    if (end === 0) return;
    const backend = await sharedHashBackend(CHAIN_BACKEND);
    const first = await firstLineOf(this.paths.events, end);
    const chained = first.sealed;
    if (!chained) {
      // A writer seals the first line of every log: without it, nothing proves the lines unchanged.
      warn(
        `${this.paths.events} carries no chain hash on its first line: it was written before chain hashes existed, or its chain fields were removed, ` +
          `so nothing proves what it serves unchanged (runs verify calls it unverifiable)`,
      );
    }
    // Where to start. In a log whose chain hashes its lines' numbers (format v2, see chain.ts): after the second
    // sealed line before the nearest index entry at or before `from` (found by reading backwards from the entry), so
    // that the batch up to the sealed line just before the entry, hashed first, proves the entry's line number (a
    // wrong one is a mismatch: read from the start), and every batch from there on is checked against the chain. A
    // log with chain hashes that prove no line numbers (format v1, or a first line that matches neither) is read from
    // its start, every batch hashed: only a chain from the genesis proves where its lines are. A log with no chain
    // hash at all (which proves nothing, see the warning above) seeks to an entry whose line number the lines before
    // it, counted, confirm.
    let entry: IndexEntry | undefined;
    let anchor: { line: number; offset: number; chain: Buffer } | undefined;
    let format: ChainFormat | undefined;
    let unproven = false;
    if (from > 0) {
      entry = nearestEntry(await this.options.indexEntries(), from, end);
      if (chained) format = chainFormatOf(backend, genesis(backend, this.options.sessionKey, this.options.runId), first.bytes!);
      if (entry !== undefined && format === 'v2') unproven = true;
      else if (chained) entry = undefined;
      else if (entry !== undefined && !(await lineVouched(this.paths.events, entry, first.seq))) {
        // A wrong line number (a damaged or edited index) would shift every line served: read from the start.
        this.options.indexStale();
        entry = undefined;
      }
      // The sealed line before the entry, and (to prove the entry's line number) the one before that.
      const [sealed, before] = unproven ? sealedLinesBefore(this.paths.events, entry!.offset, 2) : [];
      if (sealed !== undefined) {
        // Reading starts after the earlier sealed line (which must be line 0 or later), or at the start of the log
        // when the sealed line is its first; the batch up to the later one is hashed before anything is served.
        const start = before === undefined ? 0 : entry!.line - before.linesAfter;
        if (before !== undefined && start < 1) {
          // More lines before the entry than its line number: a wrong entry (read from the start).
          this.options.indexStale();
          entry = undefined;
          unproven = false;
        } else {
          anchor =
            before === undefined
              ? { line: 0, offset: 0, chain: genesis(backend, this.options.sessionKey, this.options.runId) }
              : { line: start, offset: before.end, chain: Buffer.from(before.chain, 'hex') };
        }
      } else if (unproven) {
        // No sealed line before the entry: not a true entry of a log sealed from its first line.
        entry = undefined;
        unproven = false;
      }
    }
    for (;;) {
      const start = anchor ?? entry ?? { line: 0, offset: 0 };
      const reader: ChainReader | undefined =
        anchor !== undefined
          ? new ChainReader(backend, anchor.chain, format)
          : entry === undefined
            ? new ChainReader(backend, genesis(backend, this.options.sessionKey, this.options.runId))
            : undefined;
      let retry = false;
      let batch: RawLine[] = [];
      let batchStart = start.line;
      let lastSealed = anchor === undefined ? -1 : anchor.line - 1;
      /** Where the line `lastSealed` ends, and whether a batch holding lines to serve was hashed. */
      let lastSealedEnd = anchor?.offset ?? 0;
      let hashed = false;
      let lastLine = -1;
      const checked = entry;
      for await (const chunk of readLineBatches(this.paths.events, start.offset, end, start.line, (i, bytes) => i === checked?.line || (i >= from && !unwanted?.(bytes)))) {
        // What this chunk of the file completes: served together, one asynchronous step per chunk.
        const served: VerifiedLine[] = [];
        for (const raw of chunk) {
          lastLine = raw.index;
          if (raw.index === checked?.line && seqOf(raw.text) !== checked.seq) {
            // The index was rebuilt or replaced behind this reader's back: read from the start.
            this.options.indexStale();
            retry = true;
            break;
          }
          if (!chained) {
            // No chain from the start (see the warning above): served as read; chain hashes on later lines are still checked.
            if (reader !== undefined) {
              const step = reader.feed(raw.bytes, raw.index);
              if (step.kind !== 'open') {
                if (step.kind === 'mismatch') {
                  if (served.length > 0) yield served.splice(0);
                  await this.damagedBatch([], batchStart, raw.index, options, warn);
                }
                lastSealed = raw.index;
                batchStart = raw.index + 1;
              }
            }
            if (raw.index >= from && !raw.skipped) served.push({ raw, chain: undefined });
            continue;
          }
          if (reader === undefined) continue; // unreachable: a log with chain hashes is read from a sealed line
          if (raw.index < from && (unproven || format !== 'v2')) {
            // Hashed, not served: the batch that proves the line numbers (see above); or, in a log whose chain does
            // not prove line numbers (v1), every batch before the first line served, so that a batch removed, added
            // or moved there (which would shift every line served) is a mismatch.
            const step = reader.feed(raw.bytes, raw.index);
            if (step.kind === 'open') continue;
            if (step.kind === 'mismatch' && unproven) {
              this.options.indexStale();
              retry = true;
              break;
            }
            if (step.kind === 'mismatch') await this.damagedBatch([], batchStart, raw.index, options, warn);
            unproven = false;
            lastSealed = raw.index;
            lastSealedEnd = raw.offset + raw.bytes.length + 1;
            batchStart = raw.index + 1;
            continue;
          }
          if (raw.index < from) {
            // Before the first line served: only the batch holding it is hashed, from the sealed line before it.
            if (reader.skip(raw.bytes)) {
              lastSealed = raw.index;
              lastSealedEnd = raw.offset + raw.bytes.length + 1;
              batchStart = raw.index + 1;
            }
            continue;
          }
          const step = reader.feed(raw.bytes, raw.index);
          batch.push(raw); // its bytes are not kept valid past this chunk, and not needed once hashed
          if (step.kind === 'open') continue;
          if (unproven && step.kind === 'mismatch') {
            // The line numbers counted from the index entry may be wrong (nothing was served yet): read from the
            // start, which tells a wrong index from a damaged batch.
            this.options.indexStale();
            retry = true;
            break;
          }
          unproven = false;
          hashed = true;
          lastSealed = raw.index;
          if (step.kind === 'verified') {
            for (const line of batch) if (!line.skipped) served.push({ raw: line, chain: step.chain });
          } else {
            // What this chunk verified before the damaged batch is served first, in order.
            if (served.length > 0) yield served.splice(0);
            await this.damagedBatch(batch, batchStart, raw.index, options, warn, raw.offset + raw.bytes.length + 1);
          }
          batch = [];
          batchStart = raw.index + 1;
        }
        if (retry) break;
        if (served.length > 0) yield served;
      }
      if (!retry && checked !== undefined && lastLine < checked.line) {
        // The log ended before the indexed line: the entry's offset led past it (a damaged or edited index whose line
        // and seq agree). Nothing was served (every line served comes after it): read from the start.
        this.options.indexStale();
        retry = true;
      }
      if (!retry && unproven) {
        // The log ended before the batch that proves the entry's line number (it changed meanwhile): nothing was
        // served, read from the start.
        retry = true;
      }
      if (!retry && chained && format === 'v2' && !hashed && lastSealed >= 0) {
        // Every batch lay before the first line to serve, so none that was served proves the lines counted: the
        // log's last one is hashed, so that its chain hash proves how many lines the log holds (lines removed,
        // added or moved in the batches passed over would otherwise end the read early, or late, in silence).
        await this.checkLastBatch(backend, lastSealed, lastSealedEnd, options, warn);
      }
      if (retry) {
        if (entry === undefined) return; // unreachable: from the start, nothing is checked against the index
        entry = anchor = undefined;
        unproven = false;
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
   * Hashes the batch that ends with the sealed line `line` (counted as the read counted it; it ends at byte `end`)
   * from the sealed line before it, in a log whose chain proves line numbers: a mismatch (the lines before it were
   * changed, or the batch itself) is reported as {@link damagedBatch} does.
   */
  private async checkLastBatch(backend: HashBackend, line: number, end: number, options: ReadOptions, warn: (message: string) => void): Promise<void> {
    const [, before] = sealedLinesBefore(this.paths.events, end, 2);
    const first = before === undefined ? 0 : line - before.linesAfter + 1;
    let last: ChainStep | undefined;
    if (first >= 0) {
      const reader = new ChainReader(backend, before === undefined ? genesis(backend, this.options.sessionKey, this.options.runId) : Buffer.from(before.chain, 'hex'), 'v2');
      for await (const raw of readLines(this.paths.events, before?.end ?? 0, end, first)) last = reader.feed(raw.bytes, raw.index);
    }
    if (last?.kind !== 'verified') await this.damagedBatch([], Math.max(0, first), line, options, warn);
  }

  /**
   * A batch (lines `first`..`last`, 0-based) whose chain hash does not match. A corrupt line in it is reported as
   * such; otherwise the batch is: an error, or with `onCorrupt` other than `'error'`, a warning (nothing of it is
   * served either way).
   */
  private async damagedBatch(
    batch: RawLine[],
    first: number,
    last: number,
    options: ReadOptions,
    warn: (message: string) => void,
    end?: number,
  ): Promise<void> {
    const onCorrupt = this.corruptHandler(options);
    let lines: AsyncIterable<RawLine> | RawLine[] = batch;
    // Lines not turned into text (of types not wanted) are read again, to report those that are corrupt too.
    if (end !== undefined && batch.length > 0 && batch.some((line) => line.skipped)) lines = readLines(this.paths.events, batch[0]!.offset, end, batch[0]!.index);
    for await (const line of lines) {
      const decoded = decodeLine(line.text, line.index, line.offset);
      if ('error' in decoded) onCorrupt(decoded);
    }
    const message = `${this.paths.events}: lines ${first + 1}-${last + 1} do not match the chain hash on line ${last + 1}: the log was changed there`;
    if ((options.onCorrupt ?? 'error') === 'error') throw new EventStoreError(message, { path: this.paths.events, line: first + 1 });
    warn(`${message}; they are not served`);
  }

  async countEvents(options: ReadOptions = {}): Promise<number> {
    let count = 0;
    for await (const lines of this.verifiedLines(0, options)) count += lines.length;
    return count;
  }

  async readAll(options: ReadOptions = {}): Promise<StreamEvent[]> {
    const events: StreamEvent[] = [];
    for await (const batch of this.readVerifiedBatches(options)) for (const read of batch) events.push(read.event);
    return events;
  }

  async readFiltered(predicate: (event: StreamEvent) => boolean, options: ReadOptions = {}): Promise<StreamEvent[]> {
    const events: StreamEvent[] = [];
    for await (const batch of this.readVerifiedBatches(options)) for (const read of batch) if (predicate(read.event)) events.push(read.event);
    return events;
  }

  async readPage(pageSize: number, offset: number, options: ReadOptions = {}): Promise<StreamEvent[]> {
    if (!Number.isInteger(pageSize) || pageSize < 0) throw new EventStoreError(`readPage: pageSize must be a non-negative integer, got ${pageSize}`);
    if (!Number.isInteger(offset) || offset < 0) throw new EventStoreError(`readPage: offset must be a non-negative integer, got ${offset}`);
    const events: StreamEvent[] = [];
    if (pageSize === 0) return events;
    const onCorrupt = this.corruptHandler(options);
    for await (const lines of this.verifiedLines(offset, options)) {
      for (const { raw } of lines) {
        if (raw.index >= offset + pageSize) return events;
        const decoded = decodeLine(raw.text, raw.index, raw.offset);
        if ('error' in decoded) onCorrupt(decoded);
        else events.push(decoded);
      }
    }
    return events;
  }
}

