import { promises as fsp } from 'node:fs';
import { fsyncDirSync } from '../fs/index.js';
import { CheckpointStoreError, describeIssues } from './errors.js';
import { assertRunDir, historicalCheckpointPath, runPaths, type RunPaths } from './paths.js';
import { sealedSize } from '../hash/sealed.js';
import { readSealedIfExists, writeSealedJson } from './sealed-file.js';
import { redactorFor, type RedactionOptions, type Redactor } from '../redact/index.js';
import { durabilityOf, parseCheckpoint, type Checkpoint, type Durability } from './types.js';

/** What {@link CheckpointStore.saveLatest} takes: a checkpoint whose `sessionKey` and `runId` the store fills when absent. */
export type CheckpointInput = Omit<Checkpoint, 'sessionKey' | 'runId'> & { sessionKey?: string; runId?: string };

/** Options of {@link CheckpointStore}. */
export interface CheckpointStoreOptions {
  dataDir: string;
  sessionKey: string;
  runId: string;
  /** `'always'` and `'batch'` (default) fsync every save (a save is a step boundary); `'never'` does not (saves stay
   * atomic against a process crash, not against power loss). */
  durability?: Durability;
  /**
   * Whether a save fsyncs the directory after its rename (default true unless durability is `'never'`). The durable
   * runtime's keyframes pass false: a keyframe is derived from the run's log, so one whose rename a power loss undid
   * is only missing (readers use the previous one plus the log's deltas); the file itself is still fsynced before
   * the rename, so it is never torn.
   */
  syncDirectory?: boolean;
  /** Secrets of your own to redact, on top of the built-in catalogue (see the README's Redaction section). */
  redaction?: RedactionOptions;
}

/**
 * The stored form of a checkpoint of run `sessionKey/runId` (shared by the run stores): the run filled in where the
 * checkpoint leaves it out, validated (a {@link CheckpointStoreError} naming `where` and the field), checked to belong
 * to the run, and `state` and `meta` redacted (`redaction.containsSecrets` set when something was).
 */
export function prepareCheckpoint(input: CheckpointInput, target: { sessionKey: string; runId: string; redactor: Redactor; where: string }): Checkpoint {
  const path = target.where;
  const checkpoint = input !== null && typeof input === 'object' ? { ...input, sessionKey: input.sessionKey ?? target.sessionKey, runId: input.runId ?? target.runId } : input;
  const parsed = parseCheckpoint(checkpoint);
  if (!parsed.success) throw new CheckpointStoreError(`invalid checkpoint for ${path}: ${describeIssues(parsed.error, '(checkpoint)')}`, { path });
  const valid = parsed.data;
  if (valid.runId !== target.runId || valid.sessionKey !== target.sessionKey) {
    throw new CheckpointStoreError(`checkpoint of run ${valid.sessionKey}/${valid.runId} cannot be saved in run ${target.sessionKey}/${target.runId} (${path})`, { path });
  }
  const state = target.redactor.redact(valid.state);
  const meta = target.redactor.redact(valid.meta);
  if (!state.redacted && !meta.redacted) return valid;
  const out: Checkpoint = { ...valid, state: state.value, redaction: { containsSecrets: true } };
  if (meta.value !== undefined) out.meta = meta.value;
  return out;
}

/**
 * Checkpoints of one run: `checkpoint.latest.json` and `checkpoint/<stepId>.json`. Every save validates the
 * checkpoint, checks it belongs to this run, redacts secrets in `state` and `meta`, seals it with its BLAKE3
 * checksum (`{"checksum", "data"}`, see hash/sealed.ts) and writes atomically (temp file, fsync, rename), so a crash
 * leaves the previous or the new checkpoint, never a torn one. Every load verifies the checksum and validates; a
 * corrupt or edited file is a {@link CheckpointStoreError} naming its path. Files written before seals existed
 * (plain JSON) still load.
 */
export class CheckpointStore {
  readonly sessionKey: string;
  readonly runId: string;
  readonly paths: RunPaths;
  private readonly fsync: boolean;
  private readonly syncDirectory: boolean;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly redactor: Redactor;
  /** Set once the run's folders were found to be real folders (see assertRunDir): checked once per store. */
  private foldersChecked = false;

  /** Validates the ids (InvalidIdError before any file is touched); opens nothing. */
  constructor(options: CheckpointStoreOptions) {
    this.paths = runPaths(options.dataDir, options.sessionKey, options.runId);
    this.sessionKey = options.sessionKey;
    this.runId = options.runId;
    this.fsync = durabilityOf(options, 'CheckpointStore') !== 'never';
    this.syncDirectory = this.fsync && options.syncDirectory !== false;
    this.redactor = redactorFor(options.redaction);
  }

  /**
   * Throws a RunFolderError when a folder of the run (its own, `checkpoint`, ...) is a link to elsewhere or not a
   * folder, so that no checkpoint is read or written through it; checked the first time this store touches a file
   * (the durable runtime's writer checked it already when it opened the run: nothing per step).
   */
  private checkFolders(): void {
    if (this.foldersChecked) return;
    assertRunDir(this.paths);
    this.foldersChecked = true;
  }

  private prepare(input: CheckpointInput, path: string): Checkpoint {
    return prepareCheckpoint(input, { sessionKey: this.sessionKey, runId: this.runId, redactor: this.redactor, where: path });
  }

  /** Saves run one after another, so that the last save called is the one left on disk. */
  private save(checkpoint: CheckpointInput, path: string): Promise<number> {
    return this.prepared(checkpoint, path).write();
  }

  /**
   * The checkpoint as it is now (validated, redacted, encoded: a later change by the caller is not written), the size
   * of its sealed file, and the write of it, queued behind the saves before it when it is called.
   */
  private prepared(checkpoint: CheckpointInput, path: string): { bytes: number; write: () => Promise<number> } {
    const body = JSON.stringify(this.prepare(checkpoint, path));
    return {
      bytes: sealedSize(Buffer.byteLength(body)),
      write: () => {
        // One save after another (the queue orders them), each creating its file on the thread pool: a keyframe is
        // written while its run goes on.
        const next = this.queue.then(() => {
          this.checkFolders();
          return writeSealedJson(path, body, { fsync: this.fsync, syncDirectory: this.syncDirectory, background: true });
        });
        this.queue = next.catch(() => undefined);
        return next;
      },
    };
  }

  private async load(path: string): Promise<Checkpoint | null> {
    this.checkFolders();
    const checkpoint = await readSealedIfExists(path, { safeParse: parseCheckpoint }, (reason) => new CheckpointStoreError(`corrupt checkpoint ${path}: ${reason}`, { path }));
    return checkpoint ?? null;
  }


  /**
   * Replaces the latest checkpoint. The store fills `sessionKey` and `runId` with its own when the checkpoint has
   * none; a checkpoint naming another session or run is refused with a {@link CheckpointStoreError}.
   */
  async saveLatest(checkpoint: CheckpointInput): Promise<void> {
    await this.save(checkpoint, this.paths.checkpointLatest);
  }

  /**
   * Removes the latest checkpoint (after the saves already called, so none of them brings it back); resolves to
   * whether there was one. Historical checkpoints stay. fsyncs the directory unless durability is `'never'`.
   */
  async deleteLatest(): Promise<boolean> {
    const path = this.paths.checkpointLatest;
    const removal = this.queue.then(async () => {
      this.checkFolders();
      try {
        await fsp.unlink(path);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
        throw new CheckpointStoreError(`could not delete ${path}: ${(error as Error).message}`, { path, cause: error });
      }
      if (this.fsync) fsyncDirSync(this.paths.dir);
      return true;
    });
    this.queue = removal.catch(() => undefined);
    return removal;
  }

  /** The latest checkpoint, or null when none was saved. */
  async loadLatest(): Promise<Checkpoint | null> {
    return this.load(this.paths.checkpointLatest);
  }

  /**
   * Saves a historical checkpoint under `checkpoint/<stepId>.json` (stepId: a number or a valid id); `sessionKey`
   * and `runId` are filled and checked as in {@link saveLatest}. Resolves to the size of the file in bytes.
   */
  saveHistorical(checkpoint: CheckpointInput, stepId: string | number): Promise<number> {
    try {
      return this.save(checkpoint, historicalCheckpointPath(this.paths, String(stepId)));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * {@link saveHistorical} in two parts: the checkpoint is checked, redacted and encoded now (a CheckpointStoreError
   * when it is not valid), with the size its file will have; `write` saves it.
   */
  prepareHistorical(checkpoint: CheckpointInput, stepId: string | number): { bytes: number; write: () => Promise<void> } {
    const prepared = this.prepared(checkpoint, historicalCheckpointPath(this.paths, String(stepId)));
    return { bytes: prepared.bytes, write: async () => void (await prepared.write()) };
  }

  /** The historical checkpoint saved under `stepId`, or null when there is none. */
  async loadHistorical(stepId: string | number): Promise<Checkpoint | null> {
    return this.load(historicalCheckpointPath(this.paths, String(stepId)));
  }

  /** The step ids of the historical checkpoints, numeric ones in numeric order, then the others by name. */
  async listHistorical(): Promise<string[]> {
    this.checkFolders();
    let names: string[];
    try {
      names = await fsp.readdir(this.paths.checkpointDir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const ids = names.filter((n) => n.endsWith('.json') && !n.startsWith('.')).map((n) => n.slice(0, -'.json'.length));
    return ids.sort((a, b) => {
      const na = /^\d+$/.test(a) ? Number(a) : NaN;
      const nb = /^\d+$/.test(b) ? Number(b) : NaN;
      if (!Number.isNaN(na) && !Number.isNaN(nb)) return na - nb || (a < b ? -1 : a > b ? 1 : 0);
      if (!Number.isNaN(na)) return -1;
      if (!Number.isNaN(nb)) return 1;
      return a < b ? -1 : a > b ? 1 : 0;
    });
  }
}
