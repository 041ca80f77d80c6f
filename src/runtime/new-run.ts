import { newRunId } from '../events/index.js';
import { assertValidId, type Durability, type RedactionOptions, type RunDocumentName, type RunStore, type RunWriter } from '../store/index.js';
import { locateStore, type RunLocation } from './location.js';
import { checkOptionNames, optionNames } from './option-names.js';
import { checkRunIds } from './flow-names.js';

/** Options of {@link openNewRun}. */
export interface OpenNewRunOptions extends RunLocation {
  /** Run id (default: a new one). */
  runId?: string;
  /** When the run's writes reach the disk (see RunFlowOptions.durability). */
  durability?: Durability;
}

/**
 * A new run whose single writer is taken before its flow exists (see {@link openNewRun}). While it is held, no other
 * start of the same id gets past opening its writer, so what is recorded with the run before its first event (its
 * flow config, how its flow is built) is this start's, never a concurrent start's. Run it with `runFlow(flow,
 * { newRun })` or `forkRun(flow, { ..., newRun })`, which take it over, or {@link release} it.
 */
export interface NewRun {
  readonly sessionKey: string;
  readonly runId: string;
  /** Where the run is stored. */
  readonly store: RunStore;
  /**
   * Keeps a document with the run (`'flow'`: its flow config; `'recipe'`: how its flow is built), under this start's
   * writer (see `RunWriter.saveDocument`), its secrets redacted as everything the run writes (its `redaction` too).
   */
  saveDocument(name: RunDocumentName, value: unknown): Promise<void>;
  /**
   * Gives the run up without running it (a flow that failed to build). Idempotent, and a no-op once a run took it
   * over. What it recorded stays: until its first event a run id is not a run (listings ignore it, and the next start
   * of the id records over it).
   */
  release(): Promise<void>;
}

/** What runFlow and forkRun take over from a {@link NewRun}. */
export interface TakenRun {
  sessionKey: string;
  runId: string;
  store: RunStore;
  writer: RunWriter;
  /** The run's redaction (openNewRun's): what the runtime's own checks judge secrets by, as its writer does. */
  redaction: RedactionOptions | undefined;
  /**
   * Settles once the documents saved through the NewRun are stored (rejects as the first failed save did): the run's
   * start record, which holds their digests, waits for it.
   */
  saved: Promise<void>;
}

class HeldRun implements NewRun {
  private state: 'held' | 'taken' | 'released' = 'held';

  constructor(
    readonly store: RunStore,
    readonly sessionKey: string,
    readonly runId: string,
    private readonly writer: RunWriter,
    private readonly redaction: RedactionOptions | undefined,
  ) {}

  /** The saves of documents, in the order they were asked for. */
  private saves: Promise<void>[] = [];

  saveDocument(name: RunDocumentName, value: unknown): Promise<void> {
    try {
      this.assertHeld('record a document with it');
    } catch (error) {
      return Promise.reject(error);
    }
    const save = this.writer.saveDocument(name, value);
    this.saves.push(save);
    return save;
  }

  async release(): Promise<void> {
    if (this.state !== 'held') return;
    this.state = 'released';
    await this.writer.close();
  }

  take(): TakenRun {
    this.assertHeld('run it');
    this.state = 'taken';
    const saved = Promise.all(this.saves).then(() => undefined);
    // Awaited by the run before its start record; a run refused before that must not leave it unhandled (the caller
    // got each save's own promise).
    saved.catch(() => undefined);
    return { sessionKey: this.sessionKey, runId: this.runId, store: this.store, writer: this.writer, redaction: this.redaction, saved };
  }

  private assertHeld(what: string): void {
    if (this.state !== 'held') throw new Error(`new run ${this.sessionKey}/${this.runId} was already ${this.state === 'taken' ? 'run' : 'released'}: cannot ${what}`);
  }
}

const OPEN_NEW_RUN_OPTIONS = optionNames<OpenNewRunOptions>({ dataDir: true, sessionKey: true, redaction: true, store: true, runId: true, durability: true });

/**
 * Takes the writer of a new run before its flow is built: a `RunExistsError` when the id already has a recorded run,
 * a `LockError` while another process holds it (another start of the same id). See {@link NewRun}.
 */
export async function openNewRun(options: OpenNewRunOptions = {}): Promise<NewRun> {
  checkOptionNames(options, OPEN_NEW_RUN_OPTIONS, 'openNewRun');
  const { store, sessionKey } = locateStore(options);
  const runId = options.runId ?? newRunId();
  assertValidId(runId, 'runId');
  checkRunIds({ sessionKey, runId }, options.redaction);
  // A fresh writer refuses an id that has events before touching the run (on Postgres, in the lease's statement).
  const writer = await store.openWriter({ sessionKey, runId }, { fresh: true, durability: options.durability ?? 'batch', redaction: options.redaction });
  return new HeldRun(store, sessionKey, runId, writer, options.redaction);
}

/**
 * Takes over `newRun` for runFlow or forkRun (named by `caller`): a TypeError when `options` also name where or how
 * the run is stored (those belong to openNewRun), or when it is not a NewRun of openNewRun.
 */
export function takeNewRun(newRun: NewRun, options: Record<string, unknown>, caller: string): TakenRun {
  if (!(newRun instanceof HeldRun)) throw new TypeError(`${caller}: newRun must come from openNewRun`);
  const given = ['runId', 'newRunId', 'dataDir', 'store', 'sessionKey', 'durability', 'redaction'].filter((key) => options[key] !== undefined && !(caller === 'forkRun' && key === 'runId'));
  if (given.length > 0) throw new TypeError(`${caller}: ${given.join(', ')} belong${given.length === 1 ? 's' : ''} to openNewRun when newRun is given`);
  return newRun.take();
}
