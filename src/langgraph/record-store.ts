import { rm } from 'node:fs/promises';
import type { BackpackState } from '../backpack/index.js';
import type { StreamEvent } from '../events/index.js';
import { locate, type RunLocation } from '../runtime/location.js';
import { CheckpointStore, EventStore, ProjectionStore, listRunIds, runHasEvents, runPaths, type Checkpoint, type Durability } from '../store/index.js';

/**
 * Where a {@link BackpackflowSaver} keeps its threads: one backpackflow run per LangGraph thread, as an append-only
 * event log of batches. This is the saver's only contact with storage, so any run store can serve it: the files
 * store below is the embedded default; a Postgres run store (DESIGN D15) satisfies it with the same five methods.
 *
 * Contract: {@link append} is atomic and durable per batch (all of a batch's events are stored or none), events
 * are redacted and chained by the store, and batches of one run have one writer at a time (the first append of a
 * run takes its writer lock; a second writer is refused with an error naming the holder).
 */
export interface CheckpointRecordStore {
  /** The session the runs belong to (shown in errors). */
  readonly sessionKey: string;
  /** Ids of the session's runs that have events (LangGraph threads and ordinary runs alike). */
  listRunIds(): Promise<string[]>;
  /** The run's stored events, oldest first, as far as the store vouches for them; `[]` for a run without any. */
  read(runId: string): Promise<StreamEvent[]>;
  /**
   * Opens the run for writing (takes its writer lock) and tells the seq of its last stored event, so that the
   * caller can see whether another writer appended since it read. Idempotent per run.
   */
  openForWrite(runId: string): Promise<{ lastSeq: number | undefined }>;
  /** Appends one batch atomically and durably (per the store's durability). */
  append(runId: string, events: StreamEvent[]): Promise<void>;
  /**
   * Optional: stores the whole Backpack state after step `step` (whose `checkpoint.saved` is the last event
   * appended), so that `runs state` at a late step starts from it instead of replaying every step.
   */
  saveKeyframe?(runId: string, step: number, state: BackpackState): Promise<void>;
  /** Removes everything stored for the run (LangGraph's `deleteThread`). */
  delete(runId: string): Promise<void>;
  /** Makes everything durable and releases the writer locks. */
  close(): Promise<void>;
}

/** Options of {@link FileRecordStore}. */
export interface FileRecordStoreOptions extends RunLocation {
  /** When appends reach the disk (default 'batch': one fsync per append). */
  durability?: Durability;
}

/**
 * The files store: each run's `events.jsonl` (chained, redacted, indexed, one writer per run by lock file) and its
 * projection `run.meta.json`, so that `backpackflow runs list/show/state/diff/blame/verify` read a LangGraph thread
 * like any run.
 */
export class FileRecordStore implements CheckpointRecordStore {
  readonly dataDir: string;
  readonly sessionKey: string;
  readonly #durability: Durability;
  readonly #options: FileRecordStoreOptions;
  readonly #writers = new Map<string, EventStore>();
  readonly #projection: ProjectionStore;
  /** Runs whose projection file was written by this store (then it is folded in memory until close). */
  readonly #projected = new Set<string>();

  constructor(options: FileRecordStoreOptions = {}) {
    const { dataDir, sessionKey } = locate(options);
    this.dataDir = dataDir;
    this.sessionKey = sessionKey;
    this.#durability = options.durability ?? 'batch';
    this.#options = options;
    this.#projection = new ProjectionStore({ dataDir, sessionKey, durability: this.#durability, redaction: options.redaction });
  }

  async listRunIds(): Promise<string[]> {
    return (await listRunIds(this.dataDir, this.sessionKey)).map((ref) => ref.runId).filter((runId) => runHasEvents(this.dataDir, this.sessionKey, runId));
  }

  async read(runId: string): Promise<StreamEvent[]> {
    const writer = this.#writers.get(runId);
    if (writer === undefined && !runHasEvents(this.dataDir, this.sessionKey, runId)) return [];
    return (writer ?? new EventStore({ dataDir: this.dataDir, sessionKey: this.sessionKey, runId })).readAll();
  }

  async openForWrite(runId: string): Promise<{ lastSeq: number | undefined }> {
    let writer = this.#writers.get(runId);
    if (writer === undefined) {
      writer = new EventStore({ dataDir: this.dataDir, sessionKey: this.sessionKey, runId, durability: this.#durability, redaction: this.#options.redaction });
      this.#writers.set(runId, writer);
    }
    try {
      return { lastSeq: (await writer.open()).lastSeq };
    } catch (error) {
      this.#writers.delete(runId);
      throw error;
    }
  }

  async append(runId: string, events: StreamEvent[]): Promise<void> {
    await this.openForWrite(runId);
    const writer = this.#writers.get(runId)!;
    await writer.appendBatch(events);
    await writer.flush();
    await this.#projection.updateRunMetaBatch(runId, events, { persist: !this.#projected.has(runId) });
    this.#projected.add(runId);
  }

  async saveKeyframe(runId: string, step: number, state: BackpackState): Promise<void> {
    const writer = this.#writers.get(runId);
    if (writer === undefined) throw new Error(`FileRecordStore.saveKeyframe: run ${this.sessionKey}/${runId} is not open for writing`);
    const checkpoint: Checkpoint = {
      v: 1,
      runId,
      sessionKey: this.sessionKey,
      step,
      createdAt: Date.now(),
      position: [],
      state: { kind: 'keyframe', backpack: state } as unknown as Checkpoint['state'],
      // Ties the keyframe to the log, as the durable runtime's keyframes are (readers check both).
      line: writer.eventCount - 1,
    };
    if (writer.chainHead !== undefined) checkpoint.chain = writer.chainHead;
    const checkpoints = new CheckpointStore({ dataDir: this.dataDir, sessionKey: this.sessionKey, runId, durability: this.#durability, redaction: this.#options.redaction });
    await checkpoints.saveHistorical(checkpoint, step);
  }

  async delete(runId: string): Promise<void> {
    await this.openForWrite(runId);
    const writer = this.#writers.get(runId)!;
    // Under the writer lock: the whole run directory goes, the lock file last (with the directory).
    await rm(runPaths(this.dataDir, this.sessionKey, runId).dir, { recursive: true, force: true });
    this.#writers.delete(runId);
    this.#projected.delete(runId);
    await writer.close().catch(() => undefined);
  }

  async close(): Promise<void> {
    const writers = [...this.#writers.entries()];
    this.#writers.clear();
    for (const [runId, writer] of writers) {
      if (this.#projected.has(runId)) await this.#projection.flush(runId);
      await writer.close();
    }
    this.#projected.clear();
  }
}
