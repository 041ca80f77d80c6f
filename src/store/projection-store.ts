import { ProjectionStoreError } from './errors.js';
import { EventStore, type ReadOptions } from './event-store.js';
import { assertValidId, runPaths } from './paths.js';
import { readSealedIfExists, writeSealed } from './sealed-file.js';
import { redactorFor, type RedactionOptions, type Redactor } from '../redact/index.js';
import { emptyRunMeta, foldRunMeta, foldRunMetaBatch } from './run-meta.js';
import { RunMetaSchema, durabilityOf, type Durability, type RunMeta } from './types.js';
import type { StreamEvent } from '../events/types.js';

/** Options of {@link ProjectionStore}. */
export interface ProjectionStoreOptions {
  dataDir: string;
  sessionKey: string;
  /** `'always'`/`'batch'` (default) fsync each persisted projection; `'never'` does not (writes stay atomic). */
  durability?: Durability;
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
  private readonly cache = new Map<string, RunMeta>();
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly redactor: Redactor;

  /** Validates the session key (InvalidIdError before any file is touched). */
  constructor(options: ProjectionStoreOptions) {
    assertValidId(options.sessionKey, 'sessionKey');
    this.dataDir = options.dataDir;
    this.sessionKey = options.sessionKey;
    this.fsync = durabilityOf(options, 'ProjectionStore') !== 'never';
    this.redactor = redactorFor(options.redaction);
  }

  private metaPath(runId: string): string {
    return runPaths(this.dataDir, this.sessionKey, runId).runMeta;
  }

  /** Folds every event of the run's log, persists the projection and returns it. */
  async generateRunMeta(runId: string, options: ReadOptions = {}): Promise<RunMeta> {
    const path = this.metaPath(runId);
    const events = new EventStore({ dataDir: this.dataDir, sessionKey: this.sessionKey, runId });
    let meta = emptyRunMeta(this.sessionKey, runId);
    for await (const event of events.readStream(options)) meta = foldRunMeta(meta, event);
    if (meta.eventCount === 0) throw new ProjectionStoreError(`run ${this.sessionKey}/${runId} has no events to project`, { path });
    await this.persist(meta);
    return meta;
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
    for (const event of events) {
      if (event.runId !== runId) {
        return Promise.reject(new ProjectionStoreError(`event of run ${event.runId} cannot update the projection of run ${runId}`, { path: this.metaPath(runId) }));
      }
      if (event.sessionKey !== undefined && event.sessionKey !== this.sessionKey) {
        return Promise.reject(
          new ProjectionStoreError(`event of session ${event.sessionKey} cannot update a projection of session ${this.sessionKey}`, { path: this.metaPath(runId) }),
        );
      }
    }
    const cached = this.cache.get(runId);
    if (cached !== undefined && options.persist === false && !this.queues.has(runId)) {
      // Loaded, nothing to write, nothing queued before it: fold now (the durable runtime's per-step update).
      const folded = foldRunMetaBatch(cached, events);
      this.cache.set(runId, folded);
      return Promise.resolve(folded);
    }
    // Updates of one run run one after another, so that calls not awaited by the caller still fold every event.
    const previous = this.queues.get(runId) ?? Promise.resolve();
    const next = previous.then(async () => {
      const current = this.cache.get(runId) ?? (await this.loadRunMeta(runId)) ?? emptyRunMeta(this.sessionKey, runId);
      const folded = foldRunMetaBatch(current, events);
      this.cache.set(runId, folded);
      if (options.persist !== false && folded !== current) await this.persist(folded);
      return folded;
    });
    const tail: Promise<void> = next.then(
      () => this.settle(runId, tail),
      () => this.settle(runId, tail),
    );
    this.queues.set(runId, tail);
    return next;
  }

  /** Forgets the queue of `runId` once its last update (`tail`) has settled. */
  private settle(runId: string, tail: Promise<void>): void {
    if (this.queues.get(runId) === tail) this.queues.delete(runId);
  }

  /** Writes the cached projection of `runId` (after updates with `persist: false`). */
  async flush(runId: string): Promise<void> {
    const meta = this.cache.get(runId);
    if (meta) await this.persist(meta);
  }

  /**
   * Writes a projection, sealed with its checksum (see hash/sealed.ts); secrets (e.g. a token quoted in a run's
   * error message) are redacted first.
   */
  private async persist(meta: RunMeta): Promise<void> {
    this.cache.set(meta.runId, meta);
    await writeSealed(this.metaPath(meta.runId), this.redactor.redact(meta).value, this.fsync);
  }

  /**
   * The persisted projection of `runId`, or null when there is none. A corrupt or edited file (it fails its
   * checksum) is an error naming its path; one written before seals existed (plain JSON) still loads.
   */
  async loadRunMeta(runId: string): Promise<RunMeta | null> {
    const path = this.metaPath(runId);
    const meta = await readSealedIfExists(path, RunMetaSchema, (reason) => new ProjectionStoreError(`corrupt run projection ${path}: ${reason}`, { path }));
    return meta ?? null;
  }

}
