import { isDeepStrictEqual } from 'node:util';
import {
  BaseCheckpointSaver,
  TASKS,
  WRITES_IDX_MAP,
  compareWritesSortKeys,
  maxChannelVersion,
  getCheckpointId,
  writesSortKey,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type PendingWrite,
  type SerializerProtocol,
} from '@langchain/langgraph-checkpoint';
import type { RunnableConfig } from '@langchain/core/runnables';
import { Backpack, type BackpackState } from '../backpack/index.js';
import { StreamEventType, newEventId, newSpanId, type EventInput, type StreamEvent } from '../events/index.js';
import type { RunLocation } from '../runtime/location.js';
import type { CheckpointPayload } from '../runtime/run-point.js';
import { StateTracker, applyStateDelta } from '../runtime/state-tracker.js';
import { StoreError, redactorFor, type Durability, type Redactor, type RunStore } from '../store/index.js';
import {
  decodeValue,
  encodeValue,
  hashedRunId,
  isMirroredChannel,
  namespaceSegment,
  nodeOfTaskPath,
  plainValue,
  threadDigest,
  threadRunId,
  type EncodedBytes,
  type EncodedValue,
  type Serde,
  type StoredValue,
} from './encoding.js';
import { RunStoreRecordStore, type CheckpointRecordStore } from './record-store.js';

/** Options of {@link BackpackflowSaver}. */
export interface BackpackflowSaverOptions extends Omit<RunLocation, 'store'> {
  /** When appends reach the disk in files (default 'batch': one fsync per checkpoint or write). */
  durability?: Durability;
  /**
   * Where threads are stored, as runFlow's `store` option: a {@link RunStore} such as
   * `new PostgresRunStore({ url })` (threads become runs of `sessionKey` in that database, listed by
   * `backpackflow runs list --database-url <url>`; the caller keeps the store open and closes it after
   * {@link BackpackflowSaver.close}), or any {@link CheckpointRecordStore}. Default: the files of `dataDir`.
   */
  store?: RunStore | CheckpointRecordStore;
  /** LangGraph's serializer (default: its JsonPlusSerializer). */
  serde?: SerializerProtocol;
  /**
   * A keyframe of the mirrored state every this many steps (default 100, as durable runs), when the store keeps
   * keyframes: `runs state` at a late step starts from the keyframe before it.
   */
  keyframeInterval?: number;
}

/** The namespace of the flow a LangGraph thread is recorded as, and the prefix of its node namespaces. */
export const LANGGRAPH_NAMESPACE = 'langgraph';
const CHECKPOINT_KIND = 'langgraph.checkpoint';
const WRITES_KIND = 'langgraph.writes';

/** A checkpoint as the log holds it. */
interface StoredCheckpoint {
  kind: typeof CHECKPOINT_KIND;
  ns: string;
  id: string;
  parentId?: string;
  /**
   * The checkpoint without its channel values: those are stored once per channel version, in `values`, for the
   * channels this checkpoint updated (`newVersions`), and read back through its channel versions.
   */
  checkpoint: StoredVersions & { v: number; ts: string };
  /**
   * The values of the channels this checkpoint updated, with the version each was stored under. A list, not a record
   * by channel: a channel named like a secret (`token`) must not make the redaction pass blank its encoding.
   */
  values: Array<{ channel: string; version: number | string; value: StoredValue }>;
  metadata: StoredValue;
}

/**
 * A checkpoint's channel versions and the versions each node has seen, as lists: channel and node names are never
 * keys of the stored record, so that a channel named like a secret (`apiKey`) does not make the redaction pass blank
 * its version (as it blanks what a secret-named key holds). Earlier versions stored them as records
 * (`channel_versions`, `versions_seen`), still read.
 */
type StoredVersions =
  | { versions: VersionList; seen: Array<{ node: string; versions: VersionList }> }
  | { channel_versions: Record<string, number | string>; versions_seen: Record<string, Record<string, number | string>> };

type VersionList = Array<{ channel: string; version: number | string }>;

/** A checkpoint as a thread indexes it: its versions as LangGraph's records again, and when it was saved. */
type IndexedCheckpoint = Omit<StoredCheckpoint, 'checkpoint'> & {
  checkpoint: { v: number; ts: string; channel_versions: ChannelVersions; versions_seen: Record<string, ChannelVersions> };
  savedAt: number;
};

/** One pending write as the log holds it. */
interface StoredWrite {
  taskId: string;
  idx: number;
  channel: string;
  value: StoredValue;
  taskPath: string;
}

interface StoredWrites {
  kind: typeof WRITES_KIND;
  ns: string;
  checkpointId: string;
  writes: StoredWrite[];
}

/** A thread as this saver knows it: the index of its log, and the Backpack mirror of its root namespace. */
interface Thread {
  threadId: string;
  runId: string;
  checkpoints: Map<string, Map<string, IndexedCheckpoint>>;
  writes: Map<string, Map<string, StoredWrite & { savedAt: number }>>;
  /** Channel values by namespace, channel and version (see {@link StoredCheckpoint.values}). */
  blobs: Map<string, StoredValue>;
  /** seq of the last event read or written. */
  lastSeq: number;
  /**
   * The store's identity of the log this index was read from (its `head`: the chain hash; null for no events; for a
   * store without `head`, the seq and id of the last event), compared with the store's on each read of a thread this
   * saver does not write, and when it takes the writer; undefined when the store could not tell (read it again).
   */
  version: string | null | undefined;
  /** The last backpackflow step (one per root checkpoint); -1 before the first. */
  step: number;
  backpack: Backpack;
  tracker: StateTracker;
  /** Backpack events of the pending pack, collected by the mirror's sink. */
  packed: EventInput[];
  registered: Set<string>;
  /** Span of this process's segment of the run, once it wrote `run.started`; undefined before. */
  runSpan?: string;
  segmentStartedAt?: number;
  /** The writer lock is held by this saver. */
  writing: boolean;
}

/**
 * A LangGraph.js checkpointer (`BaseCheckpointSaver`) over backpackflow's run store: each thread is one run whose
 * event log holds every checkpoint (channel values, versions, metadata, parent), every pending write and every
 * namespace, appended as atomic batches, chained, redacted and listed like any run. Beside them, the root
 * namespace's state channels are mirrored into a Backpack, step by step: `backpackflow runs state/diff/blame` show
 * which graph node wrote each channel at which step (`backpack.packed` events by node `langgraph.<node>`, one
 * `checkpoint.saved` per checkpoint).
 *
 * Values go through the saver's serializer and are redacted before they are stored: a secret in a channel comes
 * back as `[REDACTED]`, in this process and after it, never as the secret. Names are not values: a thread id holding
 * a secret is stored under its hash ({@link threadRunId}); a checkpoint id, namespace, channel or node name, version
 * or task id holding one is refused, since the saver gives those back from storage as they are.
 */
export class BackpackflowSaver extends BaseCheckpointSaver {
  readonly store: CheckpointRecordStore;
  readonly #redactor: Redactor;
  readonly #keyframeInterval: number;
  readonly #threads = new Map<string, Promise<Thread>>();
  /** One write at a time per run: batches of a run are appended in the order LangGraph made them. */
  readonly #queues = new Map<string, Promise<unknown>>();

  constructor(options: BackpackflowSaverOptions = {}) {
    super(options.serde);
    const { store } = options;
    this.store = store === undefined || isRunStore(store) ? new RunStoreRecordStore({ dataDir: options.dataDir, sessionKey: options.sessionKey, redaction: options.redaction, durability: options.durability, store }) : store;
    this.#redactor = redactorFor(options.redaction);
    this.#keyframeInterval = options.keyframeInterval ?? 100;
    if (!Number.isInteger(this.#keyframeInterval) || this.#keyframeInterval < 1) {
      throw new RangeError(`BackpackflowSaver: keyframeInterval must be an integer >= 1, got ${String(options.keyframeInterval)}`);
    }
  }

  get #serde(): Serde {
    return this.serde as unknown as Serde;
  }

  /** The backpackflow run id a thread is recorded under (see {@link threadRunId}; secrets by this saver's redaction). */
  runIdOf(threadId: string): string {
    return threadRunId(threadId, this.#redactor);
  }

  /**
   * The checkpoint `config` names (its `checkpoint_id`, else the thread's latest in `checkpoint_ns`) with its pending
   * writes and parent, or undefined when the thread or checkpoint has none.
   */
  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const threadId = config.configurable?.thread_id as unknown;
    if (threadId === undefined) return undefined;
    const thread = await this.#current(checkString('thread_id', threadId));
    const ns = checkString('checkpoint_ns', config.configurable?.checkpoint_ns ?? '');
    const checkpoints = thread.checkpoints.get(ns);
    if (checkpoints === undefined) return undefined;
    const id = checkedCheckpointId(config) ?? latestId(checkpoints);
    const stored = id === undefined ? undefined : checkpoints.get(id);
    return stored === undefined ? undefined : this.#tuple(thread, stored);
  }

  /**
   * The checkpoints of `config`'s thread (of every thread when it names none), newest first per namespace, filtered
   * by `checkpoint_ns`, `checkpoint_id`, `options.before`, `options.filter` (metadata fields, compared deeply) and cut
   * at `options.limit`. A filter on a field the redaction blanks is a TypeError (it could never match).
   */
  override async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const { before, filter } = options;
    if (filter !== undefined && this.#redactor.redact(filter).redacted) {
      // Metadata is stored redacted: a filter on a value the redaction blanks would match nothing, in silence.
      const keys = Object.keys(filter).filter((key) => this.#redactor.redact({ [key]: filter[key] }).redacted);
      throw new TypeError(`BackpackflowSaver.list: the filter on ${keys.map((k) => `'${this.#redactor.redactText(k)}'`).join(', ')} names a secret, which metadata is stored without (redacted): it cannot match`);
    }
    let limit = options.limit;
    const threadId = config.configurable?.thread_id as unknown;
    const nsFilter = config.configurable?.checkpoint_ns as unknown;
    const idFilter = checkedCheckpointId(config);
    const beforeId = before === undefined ? undefined : checkedCheckpointId(before);
    const threads = threadId !== undefined ? [await this.#current(checkString('thread_id', threadId))] : await this.#allThreads();
    for (const thread of threads) {
      for (const [ns, checkpoints] of thread.checkpoints) {
        if (nsFilter !== undefined && ns !== nsFilter) continue;
        for (const id of [...checkpoints.keys()].sort().reverse()) {
          if (idFilter !== undefined && id !== idFilter) continue;
          if (beforeId !== undefined && id >= beforeId) continue;
          const stored = checkpoints.get(id)!;
          if (filter !== undefined) {
            const metadata = (await decodeValue(this.#serde, stored.metadata, `checkpoint ${id} metadata`)) as Record<string, unknown>;
            if (!Object.entries(filter).every(([key, value]) => isDeepStrictEqual(metadata?.[key], value))) continue;
          }
          if (limit !== undefined) {
            if (limit <= 0) return;
            limit--;
          }
          yield await this.#tuple(thread, stored);
        }
      }
    }
  }

  /**
   * Stores `checkpoint` and `metadata` (redacted) for `config`'s thread and namespace, its parent the checkpoint
   * `config` names; resolves to the config naming the stored checkpoint.
   */
  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    const threadId = config.configurable?.thread_id as unknown;
    if (threadId === undefined) throw new Error('BackpackflowSaver.put: the config has no configurable.thread_id: pass { configurable: { thread_id } } to the graph');
    const tid = checkString('thread_id', threadId);
    const ns = checkString('checkpoint_ns', config.configurable?.checkpoint_ns ?? '');
    const parentId = (config.configurable?.checkpoint_id as string | undefined) || undefined;
    checkString('checkpoint.id', checkpoint.id);
    this.#checkName('put', 'configurable.checkpoint_ns', ns);
    this.#checkName('put', 'configurable.checkpoint_id', parentId);
    this.#checkName('put', 'checkpoint.id', checkpoint.id);
    // Checked, not kept: the values below are stored under these channels and versions.
    this.#versionList('put', 'newVersions', newVersions ?? {});
    const versions = this.#versionList('put', 'checkpoint.channel_versions', checkpoint.channel_versions);
    const seen = Object.entries(checkpoint.versions_seen ?? {}).map(([node, byChannel]) => {
      this.#checkName('put', 'checkpoint.versions_seen key', node);
      return { node, versions: this.#versionList('put', `checkpoint.versions_seen['${node}']`, byChannel) };
    });
    // Everything happens in the thread's queue, in call order: a checkpoint is mirrored after the writes made before it.
    await this.#write(tid, async (thread) => {
      const values: StoredCheckpoint['values'] = [];
      for (const [channel, version] of Object.entries(newVersions ?? {})) {
        const value = Object.hasOwn(checkpoint.channel_values ?? {}, channel) ? (checkpoint.channel_values as Record<string, unknown>)[channel] : undefined;
        if (value !== undefined) values.push({ channel, version, value: this.#redactChannel(channel, await encodeValue(this.#serde, value)) });
      }
      const record: StoredCheckpoint = this.#redact({
        kind: CHECKPOINT_KIND,
        ns,
        id: checkpoint.id,
        ...(parentId !== undefined ? { parentId } : {}),
        checkpoint: { v: checkpoint.v, ts: checkpoint.ts, versions, seen },
        values,
        metadata: await encodeValue(this.#serde, metadata),
      });
      const now = Date.now();
      const events: StreamEvent[] = [];
      this.#begin(thread, events, now);
      events.push(this.#event(thread, { type: StreamEventType.CUSTOM, payload: record as unknown as Record<string, unknown> }, now));
      if (ns === '') this.#mirror(thread, record, metadata, Object.keys(newVersions ?? {}), events, now);
      await this.store.append(thread.runId, events);
      indexCheckpoint(thread, record, now);
      if (ns === '' && thread.step > 0 && thread.step % this.#keyframeInterval === 0 && this.store.saveKeyframe) {
        await this.store.saveKeyframe(thread.runId, thread.step, thread.backpack.exportState());
      }
    });
    return { configurable: { thread_id: tid, checkpoint_ns: ns, checkpoint_id: checkpoint.id } };
  }

  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    const threadId = config.configurable?.thread_id as unknown;
    if (threadId === undefined) throw new Error('BackpackflowSaver.putWrites: the config has no configurable.thread_id');
    const checkpointId = config.configurable?.checkpoint_id as unknown;
    if (checkpointId === undefined) throw new Error('BackpackflowSaver.putWrites: the config has no configurable.checkpoint_id');
    const tid = checkString('thread_id', threadId);
    const ns = checkString('checkpoint_ns', config.configurable?.checkpoint_ns ?? '');
    const cid = checkString('checkpoint_id', checkpointId);
    checkString('task_id', taskId);
    this.#checkName('putWrites', 'configurable.checkpoint_ns', ns);
    this.#checkName('putWrites', 'configurable.checkpoint_id', cid);
    this.#checkName('putWrites', 'taskId', taskId);
    this.#checkName('putWrites', 'taskPath', taskPath);
    for (const [channel] of writes) this.#checkName('putWrites', 'channel', channel);
    await this.#write(tid, async (thread) => {
      const encoded = await Promise.all(writes.map(async ([channel, value]) => ({ channel, value: this.#redactChannel(channel, await encodeValue(this.#serde, value)) })));
      const key = writesKey(ns, cid);
      const existing = thread.writes.get(key);
      const fresh: StoredWrite[] = [];
      encoded.forEach(({ channel, value }, i) => {
        const idx = WRITES_IDX_MAP[channel] ?? i;
        // A task's regular writes are stored once (a retry does not replace them); special writes (errors,
        // interrupts: negative indexes) replace the previous one.
        if (idx >= 0 && existing?.has(`${taskId},${idx}`)) return;
        fresh.push({ taskId, idx, channel, value, taskPath: taskPath ?? '' });
      });
      if (fresh.length === 0) return;
      const record: StoredWrites = this.#redact({ kind: WRITES_KIND, ns, checkpointId: cid, writes: fresh });
      const now = Date.now();
      const events: StreamEvent[] = [];
      this.#begin(thread, events, now);
      events.push(this.#event(thread, { type: StreamEventType.CUSTOM, payload: record as unknown as Record<string, unknown> }, now));
      await this.store.append(thread.runId, events);
      indexWrites(thread, record, now);
    });
  }

  override async deleteThread(threadId: string): Promise<void> {
    const tid = checkString('thread_id', threadId);
    const runId = this.runIdOf(tid);
    await this.#enqueue(runId, async () => {
      const stored = await this.store.read(runId);
      // Only a run that records this thread is deleted: an ordinary run under the same id is refused.
      if (stored.length > 0) this.#recordedThread(stored, runId, tid);
      if (stored.length > 0 || (await this.#threads.get(runId)?.catch(() => undefined))?.writing) await this.store.delete(runId);
      this.#threads.delete(runId);
    });
  }

  /**
   * Ends this process's segment of every thread it wrote (`run.completed`, so `runs list` shows them completed
   * until the thread is used again), makes everything durable and releases the writer locks. The saver can be used
   * again afterwards: a later write continues the thread as a resumed run.
   */
  async close(): Promise<void> {
    await Promise.all([...this.#queues.values()].map((p) => p.catch(() => undefined)));
    for (const pending of this.#threads.values()) {
      const thread = await pending.catch(() => undefined);
      if (thread?.runSpan === undefined) continue;
      const now = Date.now();
      const end = this.#event(thread, {
        type: StreamEventType.RUN_END,
        spanId: thread.runSpan,
        namespace: LANGGRAPH_NAMESPACE,
        payload: { durationMs: now - (thread.segmentStartedAt ?? now), steps: Math.max(0, thread.step), action: 'langgraph' },
      }, now);
      await this.store.append(thread.runId, [end]);
      thread.runSpan = undefined;
      thread.writing = false;
    }
    await this.store.close();
    this.#threads.clear();
  }

  // ---- threads ------------------------------------------------------------------------------------------------

  #thread(threadId: string): Promise<Thread> {
    return this.#held(threadId).pending;
  }

  /** The thread as this saver holds it (`loaded`: read now, by this call), read from the store when it holds none. */
  #held(threadId: string): { pending: Promise<Thread>; loaded: boolean } {
    const runId = this.runIdOf(threadId);
    let pending = this.#threads.get(runId);
    if (pending !== undefined) return { pending, loaded: false };
    pending = this.#load(threadId, runId);
    this.#threads.set(runId, pending);
    pending.catch(() => this.#threads.get(runId) === pending && this.#threads.delete(runId));
    return { pending, loaded: true };
  }

  /**
   * The thread as the store holds it now, for `getTuple` and `list`: the thread this saver holds, unless another
   * saver (another process or worker sharing the store) changed its log since it was read (appended to it, or deleted
   * it, and perhaps started it again with as many events), which a look at the store's head tells (see
   * {@link CheckpointRecordStore.head}); then it is read again, in the run's queue (after this saver's own writes).
   * A thread whose writer this saver holds is its own: nobody else writes it, nothing is looked at.
   */
  async #current(threadId: string): Promise<Thread> {
    const { pending, loaded } = this.#held(threadId);
    const thread = await pending;
    if (loaded || thread.writing || (await this.#unchanged(thread))) return thread;
    return this.#enqueue(thread.runId, async () => {
      const held = this.#held(threadId);
      const now = await held.pending;
      // Read again meanwhile (by another call, or this saver's write that took the writer): current.
      if (held.loaded || now.writing || (now !== thread && (await this.#unchanged(now)))) return now;
      if (this.#threads.get(thread.runId) === held.pending) this.#threads.delete(thread.runId);
      return this.#thread(threadId);
    });
  }

  /** Whether the store's log of the thread is still the one it was read from (see {@link Thread.version}). */
  async #unchanged(thread: Thread): Promise<boolean> {
    if (thread.version === undefined) return false;
    const version = this.store.head !== undefined ? await this.store.head(thread.runId) : versionOf(await this.store.read(thread.runId));
    return version !== undefined && version === thread.version;
  }

  /** The run's log, and its identity (see {@link Thread.version}), taken before it is read: a write in between makes the next look read it again. */
  async #readLog(runId: string): Promise<{ events: StreamEvent[]; version: string | null | undefined }> {
    if (this.store.head === undefined) {
      const events = await this.store.read(runId);
      return { events, version: versionOf(events) };
    }
    const version = await this.store.head(runId);
    return { events: await this.store.read(runId), version };
  }

  /**
   * Every LangGraph thread of the session (runs that are not threads are skipped). A thread whose id held a secret,
   * and that this saver has not used, is known only by its redacted copy: it is listed under that copy (not kept, so
   * that a later use by its real id reads it afresh).
   */
  async #allThreads(): Promise<Thread[]> {
    const out: Thread[] = [];
    for (const runId of await this.store.listRunIds()) {
      try {
        const thread = await this.#listedThread(runId);
        if (thread !== undefined) out.push(thread);
      } catch (error) {
        // One damaged run (a thread or an ordinary run of the session) must not hide the others: skipped and named,
        // as `runs list` marks it damaged. A list of that thread alone (by thread_id) still fails with the error.
        if (!(error instanceof StoreError)) throw error;
        process.emitWarning(`BackpackflowSaver.list: skipped damaged run ${this.store.sessionKey}/${runId}: ${error.message}`, 'BackpackflowSaverWarning');
      }
    }
    return out;
  }

  /** The thread run `runId` records, or undefined when it is not one (see {@link #allThreads}). */
  async #listedThread(runId: string): Promise<Thread | undefined> {
    // A thread this saver holds, as long as nobody else changed it (else read again below: another saver may have
    // put an ordinary run, or another thread, under its run id since).
    const loaded = await this.#threads.get(runId)?.catch(() => undefined);
    if (loaded !== undefined && (loaded.writing || (await this.#unchanged(loaded)))) return loaded;
    const { events, version } = await this.#readLog(runId);
    const recorded = threadOf(events);
    if (recorded === undefined) return undefined;
    if (recorded.sha256 === undefined || threadDigest(recorded.threadId) === recorded.sha256) {
      return this.runIdOf(recorded.threadId) === runId ? this.#current(recorded.threadId) : undefined;
    }
    return hashedRunId(recorded.sha256) === runId ? this.#replay(recorded.threadId, runId, events, version) : undefined;
  }

  /** Builds a thread's index and Backpack mirror from its log. */
  async #load(threadId: string, runId: string): Promise<Thread> {
    const { events, version } = await this.#readLog(runId);
    if (events.length > 0) this.#recordedThread(events, runId, threadId);
    return this.#replay(threadId, runId, events, version);
  }

  #replay(threadId: string, runId: string, events: StreamEvent[], version: string | null | undefined): Thread {
    const state: BackpackState = { version: 1, items: {}, quarantined: {} };
    const thread: Thread = {
      threadId,
      runId,
      checkpoints: new Map(),
      writes: new Map(),
      blobs: new Map(),
      lastSeq: events.at(-1)?.seq ?? 0,
      version,
      step: -1,
      backpack: undefined as unknown as Backpack,
      tracker: undefined as unknown as StateTracker,
      packed: [],
      registered: new Set(),
      writing: false,
    };
    for (const event of events) {
      const p = event.payload as Record<string, unknown>;
      if (event.type === StreamEventType.CUSTOM && p['kind'] === CHECKPOINT_KIND) {
        indexCheckpoint(thread, p as unknown as StoredCheckpoint, event.timestamp);
      } else if (event.type === StreamEventType.CUSTOM && p['kind'] === WRITES_KIND) {
        indexWrites(thread, p as unknown as StoredWrites, event.timestamp);
      } else if (event.type === StreamEventType.CHECKPOINT_SAVED) {
        const saved = p as unknown as CheckpointPayload;
        if (saved.delta) applyStateDelta(state, saved.delta);
        thread.step = Math.max(thread.step, saved.step);
      }
    }
    const sink = { emit: (event: EventInput) => void thread.packed.push(event) };
    thread.backpack = new Backpack(undefined, { eventStreamer: sink });
    if (thread.step >= 0) thread.backpack.importState(state);
    thread.tracker = new StateTracker(thread.backpack, thread.step < 0);
    return thread;
  }

  /** Runs `work` on the thread with the writer lock held, one write of a run at a time. */
  async #write(threadId: string, work: (thread: Thread) => Promise<void>): Promise<void> {
    const runId = this.runIdOf(threadId);
    await this.#enqueue(runId, async () => {
      let thread = await this.#thread(threadId);
      if (!thread.writing) {
        const opened = await this.store.openForWrite(runId);
        // Another writer changed the log since this saver read it (appended to it, or deleted the run and perhaps
        // started it again, with as many events or not): read it again under the lock.
        if (!(await this.#sameLog(thread, opened))) {
          const { events, version } = await this.#readLog(runId);
          if (events.length > 0) this.#recordedThread(events, runId, threadId);
          thread = this.#replay(threadId, runId, events, version);
          this.#threads.set(runId, Promise.resolve(thread));
        }
        thread.writing = true;
      }
      try {
        await work(thread);
      } catch (error) {
        // What this saver holds in memory may now be ahead of the log: read the thread again on next use.
        this.#threads.delete(runId);
        throw error;
      }
    });
  }

  /**
   * Whether the log the writer's lock found (`opened`, see {@link CheckpointRecordStore.openForWrite}) is the one the
   * thread was read from: by the same identity as {@link #unchanged} (the chain hash, so a run deleted and started
   * again with as many events is told apart), taken under the lock; a store that gives none there is looked at again.
   */
  async #sameLog(thread: Thread, opened: { lastSeq: number | undefined; head?: string | null | undefined }): Promise<boolean> {
    if ((opened.lastSeq ?? 0) !== thread.lastSeq || thread.version === undefined) return false;
    if (opened.head !== undefined) return opened.head === thread.version;
    return this.#unchanged(thread);
  }

  #enqueue<T>(runId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#queues.get(runId) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(work);
    this.#queues.set(runId, next);
    return next;
  }

  /** Starts this process's segment of the run (`run.started`) before its first event. */
  #begin(thread: Thread, events: StreamEvent[], now: number): void {
    if (thread.runSpan !== undefined) return;
    thread.runSpan = newSpanId();
    thread.segmentStartedAt = now;
    const resumed = thread.lastSeq > 0;
    events.push(
      this.#event(thread, {
        type: StreamEventType.RUN_START,
        spanId: thread.runSpan,
        namespace: LANGGRAPH_NAMESPACE,
        payload: { flowNamespace: LANGGRAPH_NAMESPACE, entryNodeId: null, ...(resumed ? { resumed: true } : {}), langgraph: { threadId: thread.threadId, threadSha256: threadDigest(thread.threadId) } },
      }, now),
    );
  }

  /**
   * Mirrors a root checkpoint into the Backpack: each state channel LangGraph updated is packed by the node whose
   * task wrote it (from the parent checkpoint's pending writes and their task paths), or, without such a write,
   * by the checkpoint's source (`input`, `update`, `fork`). Then the task spans, the packs and the step's
   * `checkpoint.saved` (with the state delta) go in the same batch as the checkpoint.
   */
  #mirror(thread: Thread, record: StoredCheckpoint, metadata: CheckpointMetadata, updated: string[], events: StreamEvent[], now: number): void {
    const parentWrites = record.parentId === undefined ? undefined : thread.writes.get(writesKey('', record.parentId));
    const tasks = new Map<string, { node: string; completedAt: number }>();
    const writersOf = new Map<string, string[]>();
    for (const write of parentWrites?.values() ?? []) {
      const node = nodeOfTaskPath(write.taskPath);
      if (node === undefined) continue;
      const task = tasks.get(write.taskId);
      if (task === undefined) tasks.set(write.taskId, { node, completedAt: write.savedAt });
      else task.completedAt = Math.max(task.completedAt, write.savedAt);
      const writers = writersOf.get(write.channel) ?? [];
      if (!writers.includes(node)) writers.push(node);
      writersOf.set(write.channel, writers);
    }
    const stepStartedAt = record.parentId === undefined ? now : (thread.checkpoints.get('')?.get(record.parentId)?.savedAt ?? now);
    const first = thread.step < 0;
    if (!first) {
      for (const [taskId, task] of tasks) {
        const identity = { nodeId: task.node, nodeName: task.node, namespace: `${LANGGRAPH_NAMESPACE}.${namespaceSegment(task.node)}`, spanId: taskId, parentSpanId: thread.runSpan };
        // A task's span: from the step's start (its parent checkpoint) to when its writes were saved.
        events.push(this.#event(thread, { type: StreamEventType.NODE_START, ...identity, payload: {} }, Math.min(stepStartedAt, task.completedAt)));
        events.push(this.#event(thread, { type: StreamEventType.NODE_END, ...identity, payload: { action: 'default', durationMs: Math.max(0, task.completedAt - stepStartedAt) } }, task.completedAt));
      }
    }
    const source = typeof metadata?.source === 'string' ? metadata.source : 'loop';
    thread.packed.length = 0;
    for (const channel of updated) {
      if (!isMirroredChannel(channel)) continue;
      const writers = writersOf.get(channel) ?? [`__${source}__`];
      const nodeId = this.#register(thread, writers[0]!);
      const tags = writers.length > 1 ? [`writers:${writers.join(',')}`] : undefined;
      const value = record.values.find((v) => v.channel === channel)?.value;
      if (value === undefined) {
        if (thread.backpack.has(channel)) thread.backpack.delete(channel, { nodeId });
        continue;
      }
      const taskId = [...tasks].find(([, t]) => t.node === writers[0])?.[0];
      const before = thread.packed.length;
      thread.backpack.pack(channel, plainValue(value), { nodeId, ...(tags ? { tags } : {}) });
      // Pack events carry the task's span, so that `runs show` lists them under the node that wrote them.
      for (const packed of thread.packed.slice(before)) packed.spanId = taskId;
    }
    const delta = thread.tracker.next();
    if (!first) for (const packed of thread.packed) events.push(this.#event(thread, packed, now));
    thread.packed.length = 0;
    thread.step++;
    const payload: CheckpointPayload & { langgraph: Record<string, unknown> } = {
      step: thread.step,
      position: [],
      keyframe: false,
      ...(first ? { start: true as const } : {}),
      ...(delta ? { delta } : {}),
      langgraph: { checkpointId: record.id, step: metadata?.step, source },
    };
    events.push(this.#event(thread, { type: StreamEventType.CHECKPOINT_SAVED, payload: payload as unknown as Record<string, unknown> }, now));
  }

  /** Registers graph node `name` with the mirror (once) and returns its node id. */
  #register(thread: Thread, name: string): string {
    if (!thread.registered.has(name)) {
      thread.backpack.registerNode({ nodeId: name, nodeName: name, namespace: `${LANGGRAPH_NAMESPACE}.${namespaceSegment(name)}` });
      thread.registered.add(name);
    }
    return name;
  }

  #event(thread: Thread, input: EventInput, timestamp: number): StreamEvent {
    thread.lastSeq++;
    const event: StreamEvent = { v: 1, id: newEventId(), seq: thread.lastSeq, timestamp, runId: thread.runId, sessionKey: this.store.sessionKey, type: input.type, payload: input.payload ?? {} };
    for (const key of ['namespace', 'nodeId', 'nodeName', 'spanId', 'parentSpanId'] as const) {
      if (input[key] !== undefined) event[key] = input[key];
    }
    return event;
  }

  /**
   * Refuses a name that the saver stores as it is and gives back from storage (a checkpoint id or namespace, a
   * channel or node name, a version, a task id or path) when the redaction pass would change it: stored redacted, it
   * would come back as another name after a restart (lookups by it miss, two such names collide); stored as it is,
   * the secret would reach the disk. The error names the field and shows the name redacted.
   */
  #checkName(method: string, field: string, name: string | number | undefined): void {
    if (typeof name !== 'string' || !this.#redactor.holdsSecret(name)) return;
    throw new Error(
      `BackpackflowSaver.${method}: ${field} '${this.#redactor.redactText(name)}' holds text the redactor takes for a secret; checkpoint ids, namespaces, channel and node names, versions and task ids are stored as they are, so they must not hold one`,
    );
  }

  /** A record of channel versions as the log keeps it (see {@link StoredVersions}), each name checked ({@link #checkName}). */
  #versionList(method: string, field: string, byChannel: ChannelVersions): VersionList {
    return Object.entries(byChannel).map(([channel, version]) => {
      this.#checkName(method, `${field} key`, channel);
      this.#checkName(method, `${field}['${channel}']`, version);
      return { channel, version };
    });
  }

  /** Checks that a run's log records `threadId` (by its digest); an error naming the run and what it holds otherwise. */
  #recordedThread(events: StreamEvent[], runId: string, threadId: string): void {
    const recorded = threadOf(events);
    if (recorded !== undefined && (recorded.sha256 === undefined ? recorded.threadId === threadId : recorded.sha256 === threadDigest(threadId))) return;
    const where = `run ${this.store.sessionKey}/${runId}`;
    const shown = this.#redactor.redactText(threadId);
    throw new Error(
      recorded === undefined
        ? `BackpackflowSaver: ${where} is not a LangGraph thread (its log records no thread id); thread '${shown}' cannot use it`
        : `BackpackflowSaver: ${where} holds LangGraph thread '${recorded.threadId}'${recorded.threadId === shown ? ' (another id, redacted alike)' : ''}, not '${shown}'`,
    );
  }

  /**
   * Redacts a channel's value as if it were stored under the channel's name: a channel named like a secret
   * (`password`, `apiKey`) has its strings blanked, as a Backpack key of that name would. A value of another type
   * than JSON (the serializer's `bytes`) is redacted as the redactor redacts encoded bytes: bytes holding text keep
   * their redacted text (blanked under such a channel), binary data is stored as it is.
   */
  #redactChannel(channel: string, encoded: EncodedValue): EncodedValue {
    const under = (value: unknown) => (this.#redactor.redact({ [channel]: value }).value as Record<string, unknown>)[channel];
    if ('v' in encoded) {
      const v = under(encoded.v);
      return v === encoded.v ? encoded : { t: 'json', v };
    }
    const bytes = under(encoded.bytes) as EncodedBytes;
    return bytes === encoded.bytes ? encoded : { t: encoded.t, bytes };
  }

  /** Redacts what is about to be stored, so that what this saver serves now is what it serves after a restart. */
  #redact<T>(value: T): T {
    return this.#redactor.redact(value).value;
  }

  async #tuple(thread: Thread, stored: IndexedCheckpoint): Promise<CheckpointTuple> {
    const channelValues: Record<string, unknown> = {};
    for (const [channel, version] of Object.entries(stored.checkpoint.channel_versions)) {
      const value = thread.blobs.get(blobKey(stored.ns, channel, version));
      // (defined, not assigned: a channel may have any name, `__proto__` too)
      if (value !== undefined) setOwn(channelValues, channel, await decodeValue(this.#serde, value, `checkpoint ${stored.id} channel '${channel}'`));
    }
    const checkpoint: Checkpoint = {
      v: stored.checkpoint.v,
      id: stored.id,
      ts: stored.checkpoint.ts,
      channel_values: channelValues,
      channel_versions: { ...stored.checkpoint.channel_versions },
      versions_seen: structuredClone(stored.checkpoint.versions_seen),
    };
    if (checkpoint.v < 4 && stored.parentId !== undefined) await this.#migratePendingSends(thread, stored, checkpoint);
    const pendingWrites: CheckpointPendingWrite[] = [];
    const writes = [...(thread.writes.get(writesKey(stored.ns, stored.id))?.values() ?? [])];
    writes.sort((a, b) => compareWritesSortKeys(writesSortKey(a.taskPath, a.taskId, a.idx), writesSortKey(b.taskPath, b.taskId, b.idx)));
    for (const write of writes) {
      pendingWrites.push([write.taskId, write.channel, await decodeValue(this.#serde, write.value, `write of task ${write.taskId} to '${write.channel}'`)]);
    }
    const tuple: CheckpointTuple = {
      config: { configurable: { thread_id: thread.threadId, checkpoint_ns: stored.ns, checkpoint_id: stored.id } },
      checkpoint,
      metadata: (await decodeValue(this.#serde, stored.metadata, `checkpoint ${stored.id} metadata`)) as CheckpointMetadata,
      pendingWrites,
    };
    if (stored.parentId !== undefined) tuple.parentConfig = { configurable: { thread_id: thread.threadId, checkpoint_ns: stored.ns, checkpoint_id: stored.parentId } };
    return tuple;
  }

  /**
   * Checkpoints older than format 4 kept pending `Send`s as writes to the tasks channel of their parent; LangGraph
   * reads them as that channel's value (as its MemorySaver does).
   */
  async #migratePendingSends(thread: Thread, stored: IndexedCheckpoint, checkpoint: Checkpoint): Promise<void> {
    const sends: unknown[] = [];
    for (const write of thread.writes.get(writesKey(stored.ns, stored.parentId!))?.values() ?? []) {
      if (write.channel === TASKS) sends.push(await decodeValue(this.#serde, write.value, `pending send of task ${write.taskId}`));
    }
    checkpoint.channel_values[TASKS] = sends;
    const versions = Object.values(checkpoint.channel_versions);
    checkpoint.channel_versions[TASKS] = versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
  }
}

function blobKey(ns: string, channel: string, version: number | string): string {
  return JSON.stringify([ns, channel, version]);
}

function indexCheckpoint(thread: Thread, record: StoredCheckpoint, savedAt: number): void {
  let byId = thread.checkpoints.get(record.ns);
  if (byId === undefined) thread.checkpoints.set(record.ns, (byId = new Map()));
  const { v, ts } = record.checkpoint;
  byId.set(record.id, { ...record, checkpoint: { v, ts, ...versionsOf(record.checkpoint) }, savedAt });
  for (const { channel, version, value } of record.values ?? []) thread.blobs.set(blobKey(record.ns, channel, version), value);
}

/** A stored checkpoint's versions as LangGraph's records (either stored form, see {@link StoredVersions}). */
function versionsOf(stored: StoredVersions): Pick<IndexedCheckpoint['checkpoint'], 'channel_versions' | 'versions_seen'> {
  if (!('versions' in stored)) return { channel_versions: { ...stored.channel_versions }, versions_seen: structuredClone(stored.versions_seen ?? {}) };
  const versionsSeen: Record<string, ChannelVersions> = {};
  for (const { node, versions } of stored.seen) setOwn(versionsSeen, node, recordOf(versions));
  return { channel_versions: recordOf(stored.versions), versions_seen: versionsSeen };
}

function recordOf(list: VersionList): ChannelVersions {
  const out: ChannelVersions = {};
  for (const { channel, version } of list) setOwn(out, channel, version);
  return out;
}

/** Sets an own property, `__proto__` included (a channel may have any name). */
function setOwn(record: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
}

function writesKey(ns: string, checkpointId: string): string {
  return JSON.stringify([ns, checkpointId]);
}

function indexWrites(thread: Thread, record: StoredWrites, savedAt: number): void {
  const key = writesKey(record.ns, record.checkpointId);
  let byTask = thread.writes.get(key);
  if (byTask === undefined) thread.writes.set(key, (byTask = new Map()));
  for (const write of record.writes) byTask.set(`${write.taskId},${write.idx}`, { ...write, savedAt });
}

/** A log's identity from its events (for a store without `head`): the seq and (unique) id of its last event; null when it has none. */
function versionOf(events: StreamEvent[]): string | null {
  const last = events.at(-1);
  return last === undefined ? null : `${last.seq}:${last.id}`;
}

function latestId(checkpoints: Map<string, unknown>): string | undefined {
  let latest: string | undefined;
  for (const id of checkpoints.keys()) if (latest === undefined || id > latest) latest = id;
  return latest;
}

/** The checkpoint id `config` names (LangGraph's getCheckpointId), or undefined; one that is not a string is a TypeError. */
function checkedCheckpointId(config: RunnableConfig): string | undefined {
  const id = getCheckpointId(config) as unknown;
  return id === undefined || id === '' ? undefined : checkString('checkpoint_id', id);
}

function checkString(field: string, value: unknown): string {
  if (typeof value !== 'string') throw new TypeError(`BackpackflowSaver: configurable.${field} must be a string, got ${value === null ? 'null' : typeof value}`);
  return value;
}

/**
 * The thread a run's log records (its first `run.started`): the thread id as stored (redacted, so not the id when
 * that holds a secret) and its digest ({@link threadDigest}; absent in logs of earlier versions, whose thread ids
 * decided alone). Undefined when the run is not a LangGraph thread.
 */
function threadOf(events: StreamEvent[]): { threadId: string; sha256?: string } | undefined {
  const start = events.find((e) => e.type === StreamEventType.RUN_START);
  const recorded = (start?.payload as { langgraph?: { threadId?: unknown; threadSha256?: unknown } } | undefined)?.langgraph;
  if (typeof recorded?.threadId !== 'string') return undefined;
  return typeof recorded.threadSha256 === 'string' ? { threadId: recorded.threadId, sha256: recorded.threadSha256 } : { threadId: recorded.threadId };
}

/** Whether the `store` option is a run store (else the saver's own {@link CheckpointRecordStore}). */
function isRunStore(store: RunStore | CheckpointRecordStore): store is RunStore {
  return typeof (store as Partial<RunStore>).openWriter === 'function';
}
