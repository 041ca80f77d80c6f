import { statSync } from 'node:fs';
import { dirname } from 'node:path';
import { fsyncDirSync, removeFileIfExists } from '../fs/index.js';
import { ProjectionStoreError } from './errors.js';
import { EventStore, type ReadOptions } from './event-store.js';
import { assertRunDir, assertValidId, runPaths } from './paths.js';
import { readSealedIfExists, writeSealed } from './sealed-file.js';
import { redactorFor, type RedactionOptions, type Redactor } from '../redact/index.js';
import { continuedRunMeta, emptyRunMeta, foldRunMeta, foldRunMetaBatch } from './run-meta.js';
import { RunMetaSchema, durabilityOf, type Durability, type RunMeta } from './types.js';
import type { StreamEvent } from '../events/types.js';

/** `meta` with its fields in the schema's order, as a stored projection is read back (so the two compare equal as JSON). */
function canonical(meta: RunMeta): RunMeta {
  return RunMetaSchema.parse(meta);
}

/** Options of {@link ProjectionStore}. */
export interface ProjectionStoreOptions {
  dataDir: string;
  sessionKey: string;
  /** `'always'`/`'batch'` (default) fsync each persisted projection; `'never'` does not (writes stay atomic). */
  durability?: Durability;
  /**
   * Whether persisting fsyncs the directory after the rename (default true unless durability is `'never'`). A run's
   * own writer passes false: the projection is derived from the log, so one whose rename a power loss undid is
   * only missing or behind, and readers bring it up to date from the log; the file itself is still fsynced.
   */
  syncDirectory?: boolean;
  /** Secrets of your own to redact, on top of the built-in catalogue (see the README's Redaction section). */
  redaction?: RedactionOptions;
}

/**
 * Run projections of one session: `runs/<runId>/projections/run.meta.json`, folded from the run's events
 * ({@link foldRunMeta}). {@link generateRunMeta} is the full fold over the log; {@link updateRunMeta} folds one
 * event into the cached projection and equals the full fold over the same events.
 */
export class ProjectionStore {
  readonly dataDir: string;
  readonly sessionKey: string;
  private readonly fsync: boolean;
  private readonly syncDirectory: boolean;
  private readonly cache = new Map<string, RunMeta>();
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly redactor: Redactor;

  /** Validates the session key (InvalidIdError before any file is touched). */
  constructor(options: ProjectionStoreOptions) {
    assertValidId(options.sessionKey, 'sessionKey');
    this.dataDir = options.dataDir;
    this.sessionKey = options.sessionKey;
    this.fsync = durabilityOf(options, 'ProjectionStore') !== 'never';
    this.syncDirectory = this.fsync && options.syncDirectory !== false;
    this.redactor = redactorFor(options.redaction);
  }

  private metaPath(runId: string): string {
    return runPaths(this.dataDir, this.sessionKey, runId).runMeta;
  }

  /**
   * Folds every event of the run's log, persists the projection (over whatever was stored, unless the run was
   * deleted or replaced meanwhile: see {@link persistDerived}) and returns it.
   */
  async generateRunMeta(runId: string, options: ReadOptions = {}): Promise<RunMeta> {
    const log = this.logIdentity(runId);
    const meta = await this.foldLog(runId, options);
    await this.persistDerived(runId, meta, log);
    return meta;
  }

  /** The identity of the run's log file as it is now (device, inode, birth time), or undefined when there is none. */
  private logIdentity(runId: string): string | undefined {
    const stat = statSync(runPaths(this.dataDir, this.sessionKey, runId).events, { bigint: true, throwIfNoEntry: false });
    return stat === undefined ? undefined : `${stat.dev}:${stat.ino}:${stat.birthtimeNs}`;
  }

  /** The full fold of the run's log, not stored. */
  private async foldLog(runId: string, options: ReadOptions = {}): Promise<RunMeta> {
    const events = new EventStore({ dataDir: this.dataDir, sessionKey: this.sessionKey, runId });
    let meta = emptyRunMeta(this.sessionKey, runId);
    for await (const event of events.readStream(options)) meta = foldRunMeta(meta, event);
    if (meta.eventCount === 0) {
      const log = runPaths(this.dataDir, this.sessionKey, runId).events;
      throw new ProjectionStoreError(`run ${this.sessionKey}/${runId} has no events to project: its log ${log} serves none`, { path: this.metaPath(runId) });
    }
    return canonical(meta);
  }

  /**
   * Folds one event into its run's projection (loaded from disk the first time) and, unless `persist` is false,
   * writes it atomically. Events already folded (seq <= lastSeq) change nothing. Returns the new projection.
   */
  updateRunMeta(event: StreamEvent, options: { persist?: boolean } = {}): Promise<RunMeta> {
    return this.updateRunMetaBatch(event.runId, [event], options);
  }

  /**
   * Folds several events of one run, in order, as one update (the durable runtime folds a step's events at once).
   * Same rules as {@link updateRunMeta}.
   */
  updateRunMetaBatch(runId: string, events: readonly StreamEvent[], options: { persist?: boolean } = {}): Promise<RunMeta> {
    if (options.persist === false) {
      try {
        const folded = this.foldCached(runId, events);
        if (folded !== undefined) return Promise.resolve(folded);
      } catch (error) {
        return Promise.reject(error);
      }
    } else {
      const foreign = this.foreignEvent(runId, events);
      if (foreign !== undefined) return Promise.reject(foreign);
    }
    // Updates of one run run one after another, so that calls not awaited by the caller still fold every event.
    const previous = this.queues.get(runId) ?? Promise.resolve();
    const next = previous.then(async () => {
      const current = this.cache.get(runId) ?? (await this.loadRunMeta(runId)) ?? emptyRunMeta(this.sessionKey, runId);
      const folded = foldRunMetaBatch(current, events);
      this.cache.set(runId, folded);
      if (options.persist !== false && folded !== current) await this.persist(runId, folded);
      return folded;
    });
    const tail: Promise<void> = next.then(
      () => this.settle(runId, tail),
      () => this.settle(runId, tail),
    );
    this.queues.set(runId, tail);
    return next;
  }

  /**
   * {@link updateRunMetaBatch} with `persist: false`, done now when it can be: the projection of `runId` is loaded
   * and no update is queued before this one (the durable runtime's per-step update). Returns the folded projection,
   * or undefined when it cannot be done now (then call updateRunMetaBatch). Throws a ProjectionStoreError for an
   * event of another run or session.
   */
  foldCached(runId: string, events: readonly StreamEvent[]): RunMeta | undefined {
    const foreign = this.foreignEvent(runId, events);
    if (foreign !== undefined) throw foreign;
    const cached = this.cache.get(runId);
    if (cached === undefined || this.queues.has(runId)) return undefined;
    const folded = foldRunMetaBatch(cached, events);
    this.cache.set(runId, folded);
    return folded;
  }

  /** The error for the first event in `events` that is not of run `runId` of this session, if any. */
  private foreignEvent(runId: string, events: readonly StreamEvent[]): ProjectionStoreError | undefined {
    for (const event of events) {
      if (event.runId !== runId) return new ProjectionStoreError(`event of run ${event.runId} cannot update the projection of run ${runId}`, { path: this.metaPath(runId) });
      if (event.sessionKey !== undefined && event.sessionKey !== this.sessionKey) {
        return new ProjectionStoreError(`event of session ${event.sessionKey} cannot update a projection of session ${this.sessionKey}`, { path: this.metaPath(runId) });
      }
    }
    return undefined;
  }

  /** Forgets the queue of `runId` once its last update (`tail`) has settled. */
  private settle(runId: string, tail: Promise<void>): void {
    if (this.queues.get(runId) === tail) this.queues.delete(runId);
  }

  /** Writes the cached projection of `runId` (after updates with `persist: false`). */
  async flush(runId: string): Promise<void> {
    const meta = this.cache.get(runId);
    if (meta) await this.persist(runId, meta);
  }

  /**
   * Writes the projection of `runId`, sealed with its checksum (see hash/sealed.ts), to that run's file (never to a
   * path taken from `meta`); secrets (e.g. a token quoted in a run's error message) are redacted first. Folding
   * events in (a writer) creates the folders missing; `createDirs: 'own'` (a reader) creates the `projections`
   * folder at most, never the run's, and rejects with ENOENT when that is gone.
   */
  private async persist(runId: string, meta: RunMeta, createDirs: 'all' | 'own' = 'all'): Promise<void> {
    this.cache.set(runId, meta);
    // Not through a run folder (or `projections`) that is a link to elsewhere, or not a folder (see assertRunDir).
    assertRunDir(runPaths(this.dataDir, this.sessionKey, runId));
    await writeSealed(this.metaPath(runId), this.redactor.redact(meta).value, { fsync: this.fsync, syncDirectory: this.syncDirectory, createDirs });
  }

  /**
   * {@link persist} for a reader, which holds no lock: the projection is a cache of the log, stored only while the
   * log it was folded from (`folded`, its {@link logIdentity} before the fold) is still the run's. A run deleted
   * meanwhile (its folder renamed away) or replaced by a new run of the same id gets nothing written; in particular
   * its folder is never created again, which would bring a deleted run back as a damaged one.
   */
  private async persistDerived(runId: string, meta: RunMeta, folded: string | undefined): Promise<void> {
    if (folded === undefined || this.logIdentity(runId) !== folded) return;
    try {
      await this.persist(runId, meta, 'own');
    } catch (error) {
      // The run's folder went away (deleted) between the check and the write: there is nothing to cache for.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        this.cache.delete(runId);
        return;
      }
      // Anything else (a folder planted in the projection's place, no permission, a full disk): the projection is a
      // cache of the log, and the answer stands without it. Said, so that the cause can be dealt with.
      process.emitWarning(`could not store the projection of run ${this.sessionKey}/${runId} rebuilt from its log: ${(error as Error).message}`, 'ProjectionStoreWrite');
    }
  }

  /**
   * The projection of `runId` as its log stands now. The stored one is used when it is intact and agrees with the
   * log (the event at line `eventCount - 1` has its `lastSeq`), and brought up to date with the events after it (a
   * run killed before it stored its projection); otherwise (missing, corrupt, of another run, or not matching the
   * log) it is rebuilt by a full fold, a corrupt one with a warning naming it. Stores the result when it changed.
   *
   * A stored projection that recorded more events than the log now serves (more of them, or a later seq) means the
   * log lost what it had: the projection rebuilt from the log is returned and `onWarning` told, naming both files,
   * and the stored one is left as it is, so that every reader goes on reporting the loss until the user deals with
   * it (deleting the projection, see {@link delete}, takes the log as it stands for the run). Throws when the log
   * itself cannot be read (an error naming its file and line), or has no events. With `persist: false` nothing is
   * written (a reader beside a live writer, such as the studio, must not store a projection that could land after
   * the writer's own). Nothing is stored for a run deleted or replaced while it was being read (see
   * {@link persistDerived}).
   */
  async currentRunMeta(
    runId: string,
    onWarning: (message: string) => void = (m) => process.emitWarning(m, 'ProjectionBehindLog'),
    options: { persist?: boolean } = {},
  ): Promise<RunMeta> {
    const store = options.persist !== false;
    const log = store ? this.logIdentity(runId) : undefined;
    let stored: RunMeta | null = null;
    try {
      stored = await this.loadRunMeta(runId);
    } catch (error) {
      if (!(error instanceof ProjectionStoreError)) throw error;
      process.emitWarning(`${error.message}; rebuilding it from the run's log`, 'ProjectionStoreRebuild');
    }
    if (stored !== null && stored.eventCount > 0) {
      const events = new EventStore({ dataDir: this.dataDir, sessionKey: this.sessionKey, runId });
      let meta = await continuedRunMeta(stored, events.readVerified({ from: stored.eventCount - 1 }));
      if (meta !== undefined) {
        if (meta === stored) this.cache.set(runId, meta);
        else if (store) await this.persistDerived(runId, (meta = canonical(meta)), log);
        else meta = canonical(meta);
        return meta;
      }
    }
    const rebuilt = await this.foldLog(runId);
    if (stored !== null && (stored.eventCount > rebuilt.eventCount || stored.lastSeq > rebuilt.lastSeq)) {
      const seqs = stored.eventCount > rebuilt.eventCount ? '' : ` up to seq ${stored.lastSeq} (the log's last is ${rebuilt.lastSeq})`;
      onWarning(
        `${runPaths(this.dataDir, this.sessionKey, runId).events} serves ${rebuilt.eventCount} events, but the run's projection ${this.metaPath(runId)} ` +
          `recorded ${stored.eventCount}${seqs}: the log lost its tail (cut or damaged; check it with 'runs verify ${runId}'); the run is shown as its log ` +
          `stands, and the projection is kept as the evidence (delete it to take the log as it stands for the run)`,
      );
      return rebuilt;
    }
    if (store) await this.persistDerived(runId, rebuilt, log);
    return rebuilt;
  }

  /**
   * Removes the stored projection of `runId` (after the updates already queued for it) and forgets the cached one;
   * resolves to whether a file was there. The projection is a cache of the log: the next `currentRunMeta` rebuilds
   * it. This is also how a projection that recorded more events than the log serves (a lost tail, which
   * `currentRunMeta` keeps reporting) is cleared: the log as it stands is then the run. To delete a whole run, use
   * `deleteRun`.
   */
  async delete(runId: string): Promise<boolean> {
    const path = this.metaPath(runId);
    await (this.queues.get(runId) ?? Promise.resolve()).catch(() => undefined);
    this.cache.delete(runId);
    assertRunDir(runPaths(this.dataDir, this.sessionKey, runId));
    // Synchronous: one unlink (none for a new run, which has no projection) costs less than a round trip to the
    // thread pool, 100-400 µs on these machines when its threads sleep, paid by every run that starts.
    try {
      if (!removeFileIfExists(path)) return false;
    } catch (error) {
      throw new ProjectionStoreError(`could not delete ${path}: ${(error as Error).message}`, { path, cause: error });
    }
    if (this.fsync) fsyncDirSync(dirname(path));
    return true;
  }

  /**
   * The persisted projection of `runId`, or null when there is none. A corrupt or edited file (it fails its
   * checksum), or one that is the projection of another run or session (a file copied or moved in), is an error
   * naming its path; one written before seals existed (plain JSON) still loads.
   */
  async loadRunMeta(runId: string): Promise<RunMeta | null> {
    const path = this.metaPath(runId);
    const meta = await readSealedIfExists(path, RunMetaSchema, (reason) => new ProjectionStoreError(`corrupt run projection ${path}: ${reason}`, { path }));
    if (meta === undefined) return null;
    if (meta.runId !== runId || meta.sessionKey !== this.sessionKey) {
      throw new ProjectionStoreError(`corrupt run projection ${path}: it is the projection of run ${meta.sessionKey}/${meta.runId}, not of ${this.sessionKey}/${runId}`, { path });
    }
    return meta;
  }

}
