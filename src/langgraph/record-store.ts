import { rm } from 'node:fs/promises';
import type { BackpackState } from '../backpack/index.js';
import type { StreamEvent } from '../events/index.js';
import { locate, type RunLocation } from '../runtime/location.js';
import {
  CheckpointStore,
  EventStore,
  FileRunStore,
  PostgresRunStore,
  ProjectionStore,
  StoreError,
  assertValidId,
  deleteRunDir,
  listRunIds,
  runHasEvents,
  runPaths,
  type Checkpoint,
  type Durability,
  type RedactionOptions,
  type RunStore,
  type RunWriter,
} from '../store/index.js';

/**
 * Where a {@link BackpackflowSaver} keeps its threads: one backpackflow run per LangGraph thread, as an append-only
 * event log of batches. This is the saver's only contact with storage: {@link FileRecordStore} (the files of a data
 * directory) is the embedded default; {@link RunStoreRecordStore} serves it from any {@link RunStore}, such as the
 * `PostgresRunStore` of many workers (DESIGN D15).
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

/** Options of {@link RunStoreRecordStore}. */
export interface RunStoreRecordStoreOptions {
  /** The run store, such as `new PostgresRunStore({ url })`. The caller keeps it open and closes it (as runFlow's `store`). */
  store: RunStore;
  /** Session the threads' runs belong to (default `'default'`). */
  sessionKey?: string;
  /** Secrets of your own redacted from everything stored, on top of the built-in catalogue. */
  redaction?: RedactionOptions;
  /** When appends reach the disk (files only; Postgres commits each batch). Default 'batch'. */
  durability?: Durability;
}

/**
 * Threads in a {@link RunStore}: each run written through the store's own {@link RunWriter} (one writer per run, its
 * batches redacted, chained and, in Postgres, committed with the projection in one fenced statement), read back
 * through the store's verified reader, so that `backpackflow runs list/show/state/diff/blame/verify --database-url`
 * read a thread stored in Postgres like any run. Closing it releases the writers, not the store.
 */
export class RunStoreRecordStore implements CheckpointRecordStore {
  readonly sessionKey: string;
  readonly runStore: RunStore;
  readonly #options: RunStoreRecordStoreOptions;
  readonly #writers = new Map<string, Promise<RunWriter>>();

  constructor(options: RunStoreRecordStoreOptions) {
    this.sessionKey = options.sessionKey ?? 'default';
    assertValidId(this.sessionKey, 'sessionKey');
    this.runStore = options.store;
    this.#options = options;
  }

  #ref(runId: string): { sessionKey: string; runId: string } {
    return { sessionKey: this.sessionKey, runId };
  }

  async listRunIds(): Promise<string[]> {
    const ids: string[] = [];
    for (const ref of await this.runStore.listRuns(this.sessionKey)) if (await this.runStore.hasEvents(ref)) ids.push(ref.runId);
    return ids;
  }

  async read(runId: string): Promise<StreamEvent[]> {
    const events: StreamEvent[] = [];
    for await (const { event } of this.runStore.readVerified(this.#ref(runId))) events.push(event);
    return events;
  }

  #writer(runId: string): Promise<RunWriter> {
    let writer = this.#writers.get(runId);
    if (writer === undefined) {
      writer = this.runStore.openWriter(this.#ref(runId), { fresh: false, durability: this.#options.durability, redaction: this.#options.redaction });
      this.#writers.set(runId, writer);
      // A refused open (another writer holds the run) is not kept: a later call tries again.
      writer.catch(() => this.#writers.get(runId) === writer && this.#writers.delete(runId));
    }
    return writer;
  }

  async openForWrite(runId: string): Promise<{ lastSeq: number | undefined }> {
    return { lastSeq: (await this.#writer(runId)).lastSeq };
  }

  async append(runId: string, events: StreamEvent[]): Promise<void> {
    await (await this.#writer(runId)).commit(events);
  }

  async saveKeyframe(runId: string, step: number, state: BackpackState): Promise<void> {
    const writer = this.#writers.get(runId);
    if (writer === undefined) throw new StoreError(`RunStoreRecordStore.saveKeyframe: run ${this.sessionKey}/${runId} is not open for writing`);
    const keyframe = { step, createdAt: Date.now(), position: [], state: { kind: 'keyframe', backpack: state } as unknown as Checkpoint['state'] };
    await (await writer).takeKeyframe(keyframe)();
  }

  async delete(runId: string): Promise<void> {
    const ref = this.#ref(runId);
    // Holding the run's writer first: no other writer is inside it while it goes.
    const writer = await this.#writer(runId);
    const store = this.runStore;
    try {
      if (store instanceof PostgresRunStore) {
        await store.deleteRun(ref);
      } else if (store instanceof FileRunStore) {
        // The files store deletes under the run's lock, which this writer holds: give it up, then delete.
        await writer.close();
        await deleteRunDir(store.dataDir, ref.sessionKey, runId);
      } else {
        throw new StoreError(`RunStoreRecordStore.delete: a ${store.kind} run store of another kind cannot delete run ${ref.sessionKey}/${runId}`);
      }
    } finally {
      this.#writers.delete(runId);
      await writer.close();
    }
  }

  async close(): Promise<void> {
    const writers = [...this.#writers.values()];
    this.#writers.clear();
    for (const writer of writers) await (await writer.catch(() => undefined))?.close();
  }
}
