import type { BackpackState } from '../backpack/index.js';
import type { StreamEvent } from '../events/index.js';
import { locateStore, type RunLocation } from '../runtime/location.js';
import { checkProjectionClaims, projectionClaims } from '../runtime/run-point.js';
import { FileRunStore, StoreError, type Checkpoint, type Durability, type RunStore, type RunWriter } from '../store/index.js';

/**
 * Where a {@link BackpackflowSaver} keeps its threads: one backpackflow run per LangGraph thread, as an append-only
 * event log of batches. This is the saver's only contact with storage: {@link RunStoreRecordStore} serves it from
 * any {@link RunStore}: the files of a data directory (the embedded default), or the `PostgresRunStore` of many workers
 * (DESIGN D15).
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
   * Optional: an identity of the run's log as stored now, cheap to get, that changes with every append and whenever
   * the run is deleted (and started again, whatever its number of events); null when the run has no events,
   * undefined when the store cannot tell. The saver compares it, on each `getTuple` and `list` of a thread it does
   * not write, with the one it read the thread at, and reads the thread again when they differ, so that it serves
   * what other savers (other processes, other workers) stored or deleted since. {@link RunStoreRecordStore} gives the
   * log's chain hash (`RunStore.logHead`). A store without it has its log read on each such call instead.
   */
  head?(runId: string): Promise<string | null | undefined>;
  /**
   * Opens the run for writing (takes its writer lock) and tells where its log stands: the seq of its last stored
   * event and, from a store that has {@link head}, its head (as `head` gives it) as the lock found it, so that the
   * caller can see whether another writer appended, or deleted the run and started it again, since it read.
   * Idempotent per run.
   */
  openForWrite(runId: string): Promise<{ lastSeq: number | undefined; head?: string | null | undefined }>;
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

/** Options of {@link RunStoreRecordStore}. */
export interface RunStoreRecordStoreOptions extends RunLocation {
  /** When appends reach the disk (files only; Postgres commits each batch). Default 'batch': one fsync per append. */
  durability?: Durability;
}

/**
 * Threads in a {@link RunStore} (`store`, as runFlow's option, else the files of `dataDir`): each run written through
 * the store's own {@link RunWriter} (one writer per run: a lock file, or a fenced Postgres lease; its batches redacted,
 * chained and stored with the run's projection), read back through the store's verified reader, so that
 * `backpackflow runs list/show/state/diff/blame/verify` (with `--data-dir`, or `--database-url`) read a thread like
 * any run. Closing it releases the writers, not a store the caller passed.
 */
export class RunStoreRecordStore implements CheckpointRecordStore {
  readonly sessionKey: string;
  readonly runStore: RunStore;
  readonly #options: RunStoreRecordStoreOptions;
  readonly #writers = new Map<string, Promise<RunWriter>>();

  constructor(options: RunStoreRecordStoreOptions = {}) {
    const { store, sessionKey } = locateStore(options);
    this.runStore = store;
    this.sessionKey = sessionKey;
    this.#options = options;
  }

  #ref(runId: string): { sessionKey: string; runId: string } {
    return { sessionKey: this.sessionKey, runId };
  }

  async listRunIds(): Promise<string[]> {
    // One check per run, all in flight at once (a round trip each on Postgres), in the listing's order.
    const refs = await this.runStore.listRuns(this.sessionKey);
    const has = await Promise.all(refs.map((ref) => this.runStore.hasEvents(ref)));
    return refs.filter((_, i) => has[i]).map((ref) => ref.runId);
  }

  /**
   * The run's events as far as the log's chain vouches for them, compared with the run's projection as the runtime's
   * readers compare them (`loadRunPoint`): a projection that records events past the last one served means the log
   * lost its tail (its last batches deleted, an older copy put back), and serving what is left would make an older
   * checkpoint the thread's latest, so that is a StoreError naming the log and the projection, on files and Postgres
   * alike. A damaged projection is only a warning (`ProjectionStoreWarning`): the log is then served uncompared.
   */
  async read(runId: string): Promise<StreamEvent[]> {
    const ref = this.#ref(runId);
    const warnings: string[] = [];
    // The projection before the log: a live writer stores its projection only after the events it counts, so the
    // log read next holds them all unless it lost them (read after the log, a batch committed in between would look
    // like a lost tail).
    const run = { store: this.runStore, ref };
    const projectionWarnings: string[] = [];
    const claims = await projectionClaims(run, projectionWarnings);
    for (const warning of projectionWarnings) process.emitWarning(warning, 'ProjectionStoreWarning');
    const events: StreamEvent[] = [];
    for await (const { event } of this.runStore.readVerified(ref, { onWarning: (w) => warnings.push(w) })) events.push(event);
    checkProjectionClaims(run, claims, events.at(-1)?.seq ?? -1, warnings);
    for (const warning of warnings) process.emitWarning(warning, 'EventStoreWarning');
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

  /** The log's chain hash (see `RunStore.logHead`). */
  async head(runId: string): Promise<string | null | undefined> {
    return this.runStore.logHead(this.#ref(runId));
  }

  async openForWrite(runId: string): Promise<{ lastSeq: number | undefined; head: string | null | undefined }> {
    const writer = await this.#writer(runId);
    // The writer's chain head is the log's as its lock found it (or as its own commits left it).
    return { lastSeq: writer.lastSeq, head: writer.eventCount === 0 ? null : writer.chainHead };
  }

  async append(runId: string, events: StreamEvent[]): Promise<void> {
    await (await this.#writer(runId)).commit(events);
  }

  async saveKeyframe(runId: string, step: number, state: BackpackState): Promise<void> {
    const writer = this.#writers.get(runId);
    if (writer === undefined) throw new StoreError(`RunStoreRecordStore.saveKeyframe: run ${this.sessionKey}/${runId} is not open for writing`);
    const keyframe = { step, createdAt: Date.now(), position: [], state: { kind: 'keyframe', backpack: state } as unknown as Checkpoint['state'] };
    await (await writer).takeKeyframe(keyframe).write();
  }

  async delete(runId: string): Promise<void> {
    const ref = this.#ref(runId);
    // Holding the run's writer first: no other writer is inside it while it goes.
    const writer = await this.#writer(runId);
    const store = this.runStore;
    try {
      // The files store deletes under the run's lock, which this writer holds: give it up first. (Postgres lets the
      // lease's own owner delete; its writer's later commits are fenced.)
      if (store instanceof FileRunStore) await writer.close();
      await store.deleteRun(ref);
    } finally {
      this.#writers.delete(runId);
      await writer.close();
    }
  }

  /** Closes every open writer, each even when another's close fails; then throws the first failure. */
  async close(): Promise<void> {
    const writers = [...this.#writers.values()];
    this.#writers.clear();
    const closed = await Promise.allSettled(writers.map(async (writer) => (await writer.catch(() => undefined))?.close()));
    const failed = closed.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }
}
