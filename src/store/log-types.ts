/**
 * The types of the event log's public API (see event-store.ts, the facade): options, read options, what readers
 * and `verify` report, index entries.
 */
import type { StreamEvent } from '../events/types.js';
import type { RedactionOptions } from '../redact/index.js';
import type { Durability } from './types.js';

/** Options of `EventStore`. */
export interface EventStoreOptions {
  dataDir: string;
  sessionKey: string;
  runId: string;
  /** When appends reach the disk: `'always'` fsyncs each append before it resolves, `'batch'` (default) on
   * `EventStore.flush` and `EventStore.close`, `'never'` leaves it to the OS. */
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

/** Result of `EventStore.verify`. */
export interface VerifyResult {
  /**
   * No corrupt line, no damage to the chain, and a chain that covers the log (a torn tail alone does not make a log
   * invalid: it is cut on the next open). An empty log is ok. A log with lines but no chain hash at all (`chain`
   * `'unverifiable'`) is not: it was written before chain hashes existed, or its chain fields were removed, which
   * takes no hash to do, so nothing proves it unchanged.
   */
  ok: boolean;
  /**
   * `'verified'`: every line is covered by a chain hash that matches. `'damaged'`: a batch does not match its chain
   * hash, lines follow the last chain hash (a cut log), or the index points past the end of the log; `firstBadLine`
   * and `problem` say where. `'unverifiable'`: no line carries a chain hash (written before chain hashes existed, or stripped of them).
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

/** What `EventStore.open` found in the log. */
export interface OpenedLog {
  /** seq of the last stored event, undefined for an empty log. */
  lastSeq: number | undefined;
  /** Number of events (lines) in the log. */
  eventCount: number;
}
