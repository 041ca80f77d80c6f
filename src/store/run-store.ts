/**
 * The run storage seam (DESIGN D15): what the runtime, the CLI and the studio need from the storage of runs, with two
 * implementations, the files of a data directory ({@link FileRunStore}, the embedded default, its on-disk format
 * unchanged) and PostgreSQL (`PostgresRunStore`, shared by many workers, a fenced single writer per run).
 *
 * Both keep the same guarantees: ids validated before anything is touched, secrets redacted before anything is
 * persisted, the log chained as in chain.ts (each step's batch sealed with the running BLAKE3 chain hash, verified on
 * every read), keyframes sealed with their checksum and the chain hash of their step, and one writer per run.
 */
import type { StreamEvent } from '../events/types.js';
import type { RedactionOptions } from '../redact/index.js';
import type { ReadOptions, VerifiedEvent, VerifyResult } from './event-store.js';
import type { RunRef } from './layout.js';
import type { Checkpoint, Durability, RunMeta } from './types.js';

export type { RunRef };

/** A keyframe to save with a step: the writer fills `v`, the run, the log's chain hash and the line of the step. */
export type KeyframeInput = Pick<Checkpoint, 'step' | 'createdAt' | 'position' | 'state'>;

/** Options of {@link RunStore.openWriter}. */
export interface OpenWriterOptions {
  /**
   * A new run: a {@link RunExistsError} when the run already has events, checked under the writer's guarantee and
   * before anything of the run is touched (so `runFlow` and `forkRun` need no {@link RunStore.assertNewRun} of their
   * own; Postgres checks it in the statement that takes the lease).
   */
  fresh: boolean;
  /**
   * The run must exist already (a resume, which read it before taking its writer): a run deleted meanwhile is a
   * {@link RunGoneError}, and nothing of it is recreated. Default false (a writer may start a run that has no record
   * yet, as the LangGraph saver does for a new thread).
   */
  existing?: boolean;
  /**
   * When writes reach the disk. Default `'batch'`: files fsync each step's batch; Postgres commits each step and waits
   * for the server's disk. `'never'`: files are not fsynced; Postgres commits each step without waiting for the
   * server's disk (a crash of the server, not of the process, may undo the last steps, never part of one).
   * `'always'` is `'batch'` on Postgres.
   */
  durability?: Durability;
  /** Secrets of your own to redact, on top of the built-in catalogue. */
  redaction?: RedactionOptions;
}

/**
 * The single writer of one run. Opening it takes the run (a `LockError` while another writer holds it); each
 * {@link commit} appends a step's batch and updates the projection. The Postgres writer does both in one statement,
 * fenced: a writer whose run was taken over (its lease expired and another took it) has every later commit refused
 * with a `FencedError`, and nothing of it stored.
 */
export interface RunWriter {
  /** seq of the last stored event, undefined for an empty log. */
  readonly lastSeq: number | undefined;
  /** Events in the log. */
  readonly eventCount: number;
  /** The chain hash after the last batch (see chain.ts), undefined before the first. */
  readonly chainHead: string | undefined;
  /** The size of the log in bytes (as stored lines): the runtime spaces keyframes of a large state by it. */
  readonly byteLength: number;
  /** Appends one step's events (the last is its `checkpoint.saved`) and folds them into the projection. */
  commit(events: StreamEvent[]): Promise<void>;
  /**
   * Takes the keyframe of the step just committed: it is tied now to the log as it stands (its chain hash, and the
   * line of the step's `checkpoint.saved` event, which readers replay from) and prepared now (a CheckpointStoreError
   * when it is not a valid checkpoint); {@link TakenKeyframe.write} stores it. The runtime runs the writes one after
   * another off the step's path.
   */
  takeKeyframe(keyframe: KeyframeInput): TakenKeyframe;
  /**
   * Keeps a document of the run (`'flow'`: its flow config, `'recipe'`: how its flow is built; in files `flow.json`
   * and `run.recipe.json` beside its log) while this writer holds it, the only way a document is stored, so that what
   * a new run records before its first event is its own, never a concurrent start's of the same id: files write it under
   * the writer lock; Postgres fences it like a commit (a `FencedError` once the run was taken over). Secrets are
   * redacted as in everything the writer stores (the built-in catalogue and the run's own `redaction`).
   */
  saveDocument(name: RunDocumentName, value: unknown): Promise<void>;
  /**
   * The BLAKE3 of the text of each document this writer stored (see `saveDocument`), which the runtime records in the
   * run's start record, so that readers of a document check it against the log (store/run-documents.ts).
   */
  readonly documents: Readonly<Partial<Record<RunDocumentName, string>>>;
  /** Stores what is pending (the projection) and gives the run up. Idempotent. */
  close(): Promise<void>;
}

/**
 * What a delete expects of the run, as the caller saw it when it chose to delete it (`pruneRuns`: in its listing):
 * the run is deleted only if its log still ends with the event of seq `lastSeq`. A run resumed, answered or cut since
 * is left alone, so a run that no longer matches the caller's criteria is never deleted on the strength of an older
 * look at it.
 */
export interface DeleteRunCondition {
  readonly lastSeq: number;
}

/** A keyframe taken by {@link RunWriter.takeKeyframe}: prepared (validated, redacted, encoded) and sized at once. */
export interface TakenKeyframe {
  /**
   * Its size as it will be stored (bytes of the file; characters of a Postgres row), known when it is taken: the
   * runtime spaces keyframes by it, whether or not earlier writes have finished.
   */
  readonly bytes: number;
  /** Stores it (files: atomically; Postgres: fenced like a commit). */
  write(): Promise<void>;
}

/** The documents kept with a run (see {@link RunWriter.saveDocument}). */
export type RunDocumentName = 'flow' | 'recipe';

/** The storage of runs: see the module comment. Every method validates the ids it is given. */
export interface RunStore {
  /** `'files'` or `'postgres'`. */
  readonly kind: 'files' | 'postgres';
  /** Where runs are stored, for messages: the data directory, or the database URL without its password. */
  readonly location: string;
  /** How messages name the run's event log: its file, or the run in the database. */
  describeLog(ref: RunRef): string;
  /** How messages name the keyframe of a step. */
  describeKeyframe(ref: RunRef, step: number): string;
  /** How messages name the run's projection. */
  describeProjection(ref: RunRef): string;
  /** How messages name a document of the run (see {@link RunWriter.saveDocument}). */
  describeDocument(ref: RunRef, name: RunDocumentName): string;
  /** Takes the run's writer: see {@link RunWriter}. */
  openWriter(ref: RunRef, options: OpenWriterOptions): Promise<RunWriter>;
  /** Whether the run has recorded events. */
  hasEvents(ref: RunRef): Promise<boolean>;
  /**
   * An identifier of the run's log as it is now, which changes whenever its bytes may have (an append, a cut, an edit
   * in place, a replaced file), or undefined where the store cannot tell that cheaply (PostgreSQL) or the log does not
   * exist. Readers that keep what they made of a log (the studio) use it to know when to read it again, and so see
   * a damaged log at once rather than when it next grows. Files: the inode, size and change times of events.jsonl
   * (a change time cannot be set back without setting the system clock back).
   */
  logVersion(ref: RunRef): Promise<string | undefined>;
  /**
   * The log's chain hash as it is stored now (64 hex characters: the chain after its last sealed line, which is the
   * last line of its last committed batch; a writer's {@link RunWriter.chainHead} once its batches are committed), or
   * null when the run has no events: a cheap identity of the log, read without verifying it (one small read of the
   * file's end; one row's end in PostgreSQL). Every line, and the run's ids, are hashed into it, so it changes with
   * every commit, and a run deleted and started again (its events carry new ids and times) does not have the head it
   * had, whatever its number of events. Readers that keep what they made of a run (the LangGraph saver) compare it
   * to the head they read, and read again when it differs; the read verifies. Undefined when the log's last line is
   * not sealed (a log written before chain hashes, or a damaged tail): the store cannot tell, read it again.
   */
  logHead(ref: RunRef): Promise<string | null | undefined>;
  /** A `RunExistsError` when the run has recorded events. */
  assertNewRun(ref: RunRef): Promise<void>;
  /** The events (from `options.from` on) the log's chain vouches for, with the chain hash of their batch and their line. */
  readVerified(ref: RunRef, options?: ReadOptions): AsyncGenerator<VerifiedEvent>;
  /** Up to `pageSize` events from event number `offset` (0-based line of the log), verified as {@link readVerified}. */
  readPage(ref: RunRef, pageSize: number, offset: number, options?: ReadOptions): Promise<StreamEvent[]>;
  /** How many events the readers serve. */
  countEvents(ref: RunRef, options?: ReadOptions): Promise<number>;
  /**
   * Checks the whole log (reads only): recomputes the chain and reports the first line that disagrees, corrupt lines,
   * lines after the last chain hash, and (files) the torn tail. See `EventStore.verify`.
   */
  verifyLog(ref: RunRef): Promise<VerifyResult>;
  /** The steps that have a keyframe, ascending. */
  keyframeSteps(ref: RunRef): Promise<number[]>;
  /** The keyframe of `step` (verified against its checksum: a `CheckpointStoreError` naming it when damaged), or null. */
  loadKeyframe(ref: RunRef, step: number): Promise<Checkpoint | null>;
  /** The stored projection, or null (a `ProjectionStoreError` naming it when damaged). */
  loadRunMeta(ref: RunRef): Promise<RunMeta | null>;
  /**
   * The projection as the log stands now (the stored one brought up to date, or rebuilt); `onWarning` hears of a log
   * that lost its tail. With `persist: false` nothing is stored (a reader beside live writers).
   */
  currentRunMeta(ref: RunRef, onWarning?: (message: string) => void, options?: { persist?: boolean }): Promise<RunMeta>;
  /**
   * The runs (of one session, or of all) that have events or a stored projection (a run whose log was lost is listed,
   * so that it can be reported), by session then run id; a writer opened and closed without writing is not a run.
   */
  listRuns(sessionKey?: string): Promise<RunRef[]>;
  /**
   * A document of the run, or undefined; a StoreError naming it when it is not JSON, or when it is not the text the
   * run's start record has the digest of (changed or replaced since: see store/run-documents.ts).
   */
  loadDocument(ref: RunRef, name: RunDocumentName): Promise<unknown>;
  /** Whether a live writer holds the run (a file lock of a live process; an unexpired lease). */
  writerAlive(ref: RunRef): Promise<boolean>;
  /**
   * Who writes run `ref` now and why it is judged live (a lock's holder and its judgement, a lease's owner and when
   * it runs out), for `runs show`; undefined when no live writer holds it.
   */
  describeWriter(ref: RunRef): Promise<string | undefined>;
  /**
   * Deletes the run (events, keyframes, projection, documents) whole or not at all, even if the process is killed
   * half way; resolves to whether there was a run. A run a live writer holds is refused (files: `RunInUseError`
   * naming the process; Postgres: `LockError` naming the lease's owner). With `expected`, a run that no longer
   * matches it, checked under the run's writer guarantee, is refused with a `RunChangedError` and left whole.
   */
  deleteRun(ref: RunRef, expected?: DeleteRunCondition): Promise<boolean>;
  /** Releases what the store holds (connections). */
  close(): Promise<void>;
}
