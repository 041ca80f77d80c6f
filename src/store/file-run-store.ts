/**
 * Runs stored in the files of a data directory (DESIGN D15): the embedded {@link RunStore}, over the event log,
 * checkpoint and projection stores, with their on-disk format unchanged. One writer per run is the log's lock file.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { StreamEvent } from '../events/types.js';
import { redactConfig, redactorFor, type RedactionOptions, type Redactor } from '../redact/index.js';
import { CheckpointStore } from './checkpoint-store.js';
import { EventStore, type ReadOptions, type VerifiedEvent, type VerifyResult } from './event-store.js';
import { assertNewRun, listRunIds, runHasEvents, runWriterAlive } from './layout.js';
import { assertRunDir, assertValidId, historicalCheckpointPath, runDirProblem, runPaths } from './paths.js';
import { deleteRunDir } from './retention.js';
import { ProjectionStore } from './projection-store.js';
import type { DeleteRunCondition, KeyframeInput, OpenWriterOptions, RunDocumentName, RunRef, RunStore, RunWriter, TakenKeyframe } from './run-store.js';
import { DONE, describeHolder, inspectLock, removeDeadTemps } from '../fs/index.js';
import { readRunTextIfExists } from './read-files.js';
import { ProjectionStoreError, StoreError } from './errors.js';
import { checkedDocument, writeDocumentFile } from './run-documents.js';
import { dataEndOf } from './lines.js';
import { committedHead } from './batch-marker.js';

import type { Checkpoint, Durability, RunMeta } from './types.js';

function noop(): void {}

const DOCUMENT_FILES: Record<RunDocumentName, string> = { flow: 'flow.json', recipe: 'run.recipe.json' };

/** Where document `name` of run `ref` is kept in `dataDir`. */
function documentPath(dataDir: string, ref: RunRef, name: RunDocumentName): string {
  return join(runPaths(dataDir, ref.sessionKey, ref.runId).dir, DOCUMENT_FILES[name]);
}

/** See the module comment. */
export class FileRunStore implements RunStore {
  readonly kind = 'files' as const;

  /** `dataDir` must be absolute (see `resolveDataDir`). */
  constructor(readonly dataDir: string) {}

  get location(): string {
    return this.dataDir;
  }

  /**
   * Validates run `ref`'s ids and checks its folders (see assertRunDir): a run folder (or session folder) that is a
   * link to elsewhere, or not a folder, is a RunFolderError naming it to every reader, as it is to writers and to
   * delete, never read through.
   */
  private checked(ref: RunRef): RunRef {
    assertRunDir(runPaths(this.dataDir, ref.sessionKey, ref.runId));
    return ref;
  }

  private events(ref: RunRef): EventStore {
    this.checked(ref);
    return new EventStore({ dataDir: this.dataDir, sessionKey: ref.sessionKey, runId: ref.runId });
  }

  describeLog(ref: RunRef): string {
    return runPaths(this.dataDir, ref.sessionKey, ref.runId).events;
  }

  describeKeyframe(ref: RunRef, step: number): string {
    return historicalCheckpointPath(runPaths(this.dataDir, ref.sessionKey, ref.runId), String(step));
  }

  describeProjection(ref: RunRef): string {
    return runPaths(this.dataDir, ref.sessionKey, ref.runId).runMeta;
  }

  async openWriter(ref: RunRef, options: OpenWriterOptions): Promise<RunWriter> {
    // A fresh run whose id has events is refused before its log is opened (opening may repair a torn tail); checked
    // again under the writer lock (see FileRunWriter.open).
    if (options.fresh) await this.assertNewRun(ref);
    const writer = new FileRunWriter(this.dataDir, ref, options.durability ?? 'batch', options.redaction);
    await writer.open(options.fresh, options.existing ?? false);
    return writer;
  }

  async hasEvents(ref: RunRef): Promise<boolean> {
    assertValidId(ref.sessionKey, 'sessionKey');
    assertValidId(ref.runId, 'runId');
    this.checked(ref);
    return runHasEvents(this.dataDir, ref.sessionKey, ref.runId);
  }

  async logVersion(ref: RunRef): Promise<string | undefined> {
    assertValidId(ref.sessionKey, 'sessionKey');
    assertValidId(ref.runId, 'runId');
    const path = runPaths(this.dataDir, this.checked(ref).sessionKey, ref.runId).events;
    const stat = statSync(path, { bigint: true, throwIfNoEntry: false });
    if (stat === undefined) return undefined;
    // While a writer reserves space after the last line (see log-writer.ts), an append leaves the file's size as it
    // was, and two in one tick of the file system's clock leave its times too: the end of the data tells them apart.
    const end = (await dataEndOf(path)) ?? -1;
    return `${stat.dev}:${stat.ino}:${stat.size}:${end}:${stat.mtimeNs}:${stat.ctimeNs}`;
  }

  async logHead(ref: RunRef): Promise<string | null | undefined> {
    assertValidId(ref.sessionKey, 'sessionKey');
    assertValidId(ref.runId, 'runId');
    return committedHead(runPaths(this.dataDir, this.checked(ref).sessionKey, ref.runId));
  }

  async assertNewRun(ref: RunRef): Promise<void> {
    assertValidId(ref.sessionKey, 'sessionKey');
    assertValidId(ref.runId, 'runId');
    this.checked(ref);
    assertNewRun(this.dataDir, ref.sessionKey, ref.runId);
  }

  async *readVerified(ref: RunRef, options?: ReadOptions): AsyncGenerator<VerifiedEvent> {
    yield* this.events(ref).readVerified(options);
  }

  async readPage(ref: RunRef, pageSize: number, offset: number, options?: ReadOptions): Promise<StreamEvent[]> {
    return await this.events(ref).readPage(pageSize, offset, options);
  }

  async countEvents(ref: RunRef, options?: ReadOptions): Promise<number> {
    return await this.events(ref).countEvents(options);
  }

  async verifyLog(ref: RunRef): Promise<VerifyResult> {
    return await this.events(ref).verify();
  }

  async keyframeSteps(ref: RunRef): Promise<number[]> {
    const ids = await new CheckpointStore({ dataDir: this.dataDir, sessionKey: ref.sessionKey, runId: ref.runId }).listHistorical();
    return ids.filter((id) => /^\d+$/.test(id)).map(Number);
  }

  async loadKeyframe(ref: RunRef, step: number): Promise<Checkpoint | null> {
    return new CheckpointStore({ dataDir: this.dataDir, sessionKey: ref.sessionKey, runId: ref.runId }).loadHistorical(step);
  }

  async loadRunMeta(ref: RunRef): Promise<RunMeta | null> {
    this.checked(ref);
    return new ProjectionStore({ dataDir: this.dataDir, sessionKey: ref.sessionKey }).loadRunMeta(ref.runId);
  }

  async currentRunMeta(ref: RunRef, onWarning?: (message: string) => void, options?: { persist?: boolean }): Promise<RunMeta> {
    this.checked(ref);
    return new ProjectionStore({ dataDir: this.dataDir, sessionKey: ref.sessionKey }).currentRunMeta(ref.runId, onWarning, options);
  }

  /** See {@link RunStore.deleteRun}: renamed away first, then removed (src/store/retention.ts). */
  deleteRun(ref: RunRef, expected?: DeleteRunCondition): Promise<boolean> {
    return deleteRunDir(this.dataDir, ref.sessionKey, ref.runId, expected);
  }

  async listRuns(sessionKey?: string): Promise<RunRef[]> {
    if (sessionKey !== undefined) assertValidId(sessionKey, 'sessionKey');
    const refs = await listRunIds(this.dataDir, sessionKey);
    // A run whose folders are not all real folders (a link to elsewhere, a file) is listed, so that its readers report
    // it as damaged (naming the entry), never read through it, nor hidden.
    return refs.filter((ref) => {
      const paths = runPaths(this.dataDir, ref.sessionKey, ref.runId);
      return runDirProblem(paths) !== undefined || runHasEvents(this.dataDir, ref.sessionKey, ref.runId) || existsSync(paths.runMeta);
    });
  }

  /** Where a document of a run is kept (`flow.json`, `run.recipe.json`). */
  documentPath(ref: RunRef, name: RunDocumentName): string {
    return documentPath(this.dataDir, ref, name);
  }

  describeDocument(ref: RunRef, name: RunDocumentName): string {
    return this.documentPath(ref, name);
  }

  async loadDocument(ref: RunRef, name: RunDocumentName): Promise<unknown> {
    const path = this.documentPath(this.checked(ref), name);
    let text: string | undefined;
    try {
      text = await readRunTextIfExists(path);
    } catch (error) {
      // A directory in its place, no permission: named, not a bare system error.
      throw new StoreError(`${path} cannot be read: ${(error as Error).message}`, { path, cause: error });
    }
    return checkedDocument(this, ref, name, text, path);
  }

  async writerAlive(ref: RunRef): Promise<boolean> {
    assertValidId(ref.sessionKey, 'sessionKey');
    assertValidId(ref.runId, 'runId');
    this.checked(ref);
    return runWriterAlive(this.dataDir, ref.sessionKey, ref.runId);
  }

  async describeWriter(ref: RunRef): Promise<string | undefined> {
    assertValidId(ref.sessionKey, 'sessionKey');
    assertValidId(ref.runId, 'runId');
    this.checked(ref);
    const lock = inspectLock(runPaths(this.dataDir, ref.sessionKey, ref.runId).lock);
    return lock.state === 'held' ? `${describeHolder(lock.holder)} (${lock.why})` : undefined;
  }

  async close(): Promise<void> {}
}

/**
 * The writer of a run in files: the log's writer lock; per step, the batch (one fsync with durability 'batch') and the
 * projection folded in memory and stored on close (a run that dies before has none, or a resumed run's older one:
 * readers bring it up to date from the log, see ProjectionStore.currentRunMeta); keyframe files are written
 * after their step's batch, so that no keyframe is ahead of the log.
 */
class FileRunWriter implements RunWriter {
  private readonly events: EventStore;
  private readonly checkpoints: CheckpointStore;
  private readonly projection: ProjectionStore;
  private closed = false;
  /** The run's redaction, for its documents (the stores below hold their own). */
  private readonly redactor: Redactor;

  constructor(
    dataDir: string,
    private readonly ref: RunRef,
    durability: Durability,
    redaction: RedactionOptions | undefined,
  ) {
    const { sessionKey, runId } = ref;
    this.redactor = redactorFor(redaction);
    this.events = new EventStore({ dataDir, sessionKey, runId, durability, redaction });
    // Keyframes and the projection are derived from the log (which is fsynced per step): their files are fsynced,
    // their renames are not waited for (see CheckpointStoreOptions.syncDirectory).
    this.checkpoints = new CheckpointStore({ dataDir, sessionKey, runId, durability, redaction, syncDirectory: false });
    this.projection = new ProjectionStore({ dataDir, sessionKey, durability, redaction, syncDirectory: false });
  }

  get lastSeq(): number | undefined {
    return this.events.lastSeq;
  }

  get eventCount(): number {
    return this.events.eventCount;
  }

  get chainHead(): string | undefined {
    return this.events.chainHead;
  }

  async open(fresh: boolean, existing: boolean): Promise<void> {
    const opened = await this.events.open({ existing });
    try {
      // Checked again under the writer lock: another process may have started this id since a caller's check.
      if (fresh && opened.lastSeq !== undefined) assertNewRun(this.projection.dataDir, this.ref.sessionKey, this.ref.runId);
      const paths = runPaths(this.projection.dataDir, this.ref.sessionKey, this.ref.runId);
      // Taking the lock swept the run's folder of what killed processes left (src/fs/temp-files.ts); its subfolders too.
      for (const dir of [paths.projectionsDir, paths.checkpointDir]) removeDeadTemps(dir);
      // A new run folds its projection from nothing: one left by an earlier run of this id (whose log is gone) is not its own.
      if (fresh && (await this.projection.delete(this.ref.runId))) {
        process.emitWarning(`run ${this.ref.sessionKey}/${this.ref.runId} starts afresh: removed ${paths.runMeta}, a projection an earlier run of this id left without its log`, 'ProjectionStoreLeftover');
      }
      // A continued run's projection continues from the whole log (a crash may have left the stored one behind it).
      // One that recorded more than the log serves is evidence of a lost tail: not continued past (see currentRunMeta).
      if (!fresh && opened.lastSeq !== undefined) {
        let lost: string | undefined;
        await this.projection.currentRunMeta(this.ref.runId, (warning) => (lost = warning));
        if (lost !== undefined) throw new ProjectionStoreError(`${lost}. The run is not continued`, { path: runPaths(this.projection.dataDir, this.ref.sessionKey, this.ref.runId).runMeta });
      }
    } catch (error) {
      await this.events.close();
      throw error;
    }
  }

  get byteLength(): number {
    return this.events.byteLength;
  }

  commit(events: StreamEvent[]): Promise<void> {
    // Not an async function: with durability 'never', or 'batch' with a direct fdatasync, the batch is written and
    // flushed when the calls return (they return DONE), and a step then makes no promise and waits no turn here.
    if (this.closed) return Promise.reject(new Error(`the writer of run ${this.ref.sessionKey}/${this.ref.runId} is closed`));
    if (events.length === 0) return DONE;
    const project = (): Promise<void> =>
      this.projection.foldCached(this.ref.runId, events) !== undefined ? DONE : this.projection.updateRunMetaBatch(this.ref.runId, events, { persist: false }).then(noop);
    const flush = (): Promise<void> => {
      const flushed = this.events.flush();
      return flushed === DONE ? project() : flushed.then(project);
    };
    try {
      const appended = this.events.appendBatch(events);
      return appended === DONE ? flush() : appended.then(flush);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  takeKeyframe(keyframe: KeyframeInput): TakenKeyframe {
    const checkpoint: Checkpoint = { v: 1, sessionKey: this.ref.sessionKey, runId: this.ref.runId, ...keyframe };
    // Ties the keyframe to the log: readers compare it with the chain of this step's batch.
    if (this.events.chainHead !== undefined) checkpoint.chain = this.events.chainHead;
    // The step's checkpoint.saved event is the last line of its batch: replays of later steps start there.
    checkpoint.line = this.events.eventCount - 1;
    const taken = this.checkpoints.prepareHistorical(checkpoint, keyframe.step);
    // Written later, off the step's path: by then this writer may have lost the run to another process.
    return {
      bytes: taken.bytes,
      write: async () => {
        this.events.assertHoldsLock();
        await taken.write();
      },
    };
  }

  readonly documents: Partial<Record<RunDocumentName, string>> = {};

  async saveDocument(name: RunDocumentName, value: unknown): Promise<void> {
    if (this.closed) throw new Error(`the writer of run ${this.ref.sessionKey}/${this.ref.runId} is closed`);
    this.events.assertHoldsLock();
    this.documents[name] = await writeDocumentFile(documentPath(this.projection.dataDir, this.ref, name), redactConfig(this.redactor, value));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      // A writer that lost the run to another process leaves its projection to the new holder (asked now: no write
      // of this writer may have found the loss yet).
      if (this.events.holdsLock()) await this.projection.flush(this.ref.runId).catch(() => undefined);
    } finally {
      await this.events.close();
    }
  }
}

