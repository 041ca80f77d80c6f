/**
 * What the studio's API answers, read from a {@link RunStore} (the files of a data directory, or PostgreSQL) through
 * its public methods and the runtime's (`listRuns`, `listedRun`, `loadRunPoint`), the memory through `Memory`
 * (`searchScored`), and the CLI's inspect helpers (state with provenance, diff, blame, trace), so the browser shows
 * exactly what `backpackflow runs ...` prints, whichever store holds the runs. Only what is stored is shown, and it
 * was redacted before it was stored.
 */
import { compileNamespacePattern } from '../backpack/index.js';
import { StreamEventType, StreamEventTypeSchema, type StreamEvent } from '../events/index.js';
import { listedRun, listRuns, loadRunPoint, type RunPoint } from '../runtime/index.js';
import { StoreError, type CorruptLine, type Memory, type RunMeta, type RunStore, type RunRef as StoreRef } from '../store/index.js';
import { blame, blameReads, BLAME_EVENT_TYPES, diffStates, stateReport, type BlameReport, type DiffReport, type StateReport } from '../cli/backpackflow/inspect.js';
import { firstStep, lastStep } from '../cli/backpackflow/store-access.js';
import { buildTrace, TRACE_EVENT_TYPES, withRunMeta, type RunTrace, type TraceItem } from '../cli/backpackflow/trace.js';
import { runDuration } from '../store/run-meta.js';
import { HttpError } from './http.js';

/** A run of one session. */
export interface RunRef {
  session: string;
  runId: string;
}

/** The store's name of a run. */
export function storeRef(ref: RunRef): StoreRef {
  return { sessionKey: ref.session, runId: ref.runId };
}

/** Where a fork started: the run and step it was forked from. */
export interface ForkOrigin {
  runId: string;
  step: number;
}

/** A row of the runs table: the run's projection and its fork origin. */
export interface RunSummary extends Omit<RunMeta, 'forkedFrom'> {
  forkedFrom: ForkOrigin | null;
  /** Whether `durationMs` is a lower bound: a segment recorded no end (killed, or still running); see `runDuration`. */
  durationLowerBound: boolean;
}

/** The recorded steps of a run: `first` (0, or a fork's start step) through `last`. */
export interface StepRange {
  first: number;
  last: number;
  /**
   * What the reads of the range could not use, each naming its file (a damaged batch hides the steps in and after
   * it, so the range may end before the run's last step): empty when they read a sound log.
   */
  warnings: string[];
}

/** Everything the run view needs besides its events: projection, fork origin, steps, recorded flow config. */
export interface RunDetail {
  meta: RunMeta;
  /** Whether `meta.durationMs` is a lower bound (see {@link RunSummary.durationLowerBound}). */
  durationLowerBound: boolean;
  forkedFrom: ForkOrigin | null;
  steps: StepRange;
  /** The flow config recorded with the run (by `backpackflow run`), or null. */
  flow: unknown;
  /** Why the recorded flow config could not be read, when it exists but is unreadable. */
  flowError?: string;
}

/** Filters and page of the events table. */
export interface EventQuery {
  type?: string;
  namespace?: string;
  /** From 1. */
  page: number;
  pageSize: number;
}

/** A page of a run's events, with the line number (0-based, in the log) of each. */
export interface EventsPageResult {
  runId: string;
  page: number;
  pageSize: number;
  events: Array<{ line: number; event: StreamEvent }>;
  /** Whether a later page has events. */
  hasMore: boolean;
  /**
   * Events matching the filters over all pages: without filters, the events in the log; with filters, exact when
   * the query reached the end of the log, otherwise null.
   */
  total: number | null;
  /** Lines of the log that are not valid events, met while reading this page (never skipped silently). */
  corrupt: CorruptLine[];
  /** What the log did not serve, naming its file and lines (lines after its last chain hash: cut or damaged). */
  warnings: string[];
}

/**
 * A stretch of a run's trace: its top-level lines `offset`..`offset + items.length - 1` of `itemCount` (each with
 * everything nested under it), and the run's trace header (status, duration, segments, question, error).
 */
export interface TracePage extends RunTrace {
  offset: number;
  /** Top-level lines in the whole trace. */
  itemCount: number;
  /** The longest node execution in the trace, in ms (the scale of the page's duration bars). */
  longestMs: number;
  /**
   * Whether this is the trace of the whole log. False for a {@link RunReader.traceHead}: the trace of the log's first
   * lines only (every one verified against the chain), whose header and counts the rest of the log may still change.
   */
  complete: boolean;
  /**
   * What the read of the log skipped or could not verify (a corrupt line, lines after its last chain hash), so far
   * for a page that is not `complete`; empty when the log read whole.
   */
  warnings: string[];
}

/** How many trace events are read between checks of whether a waiting {@link RunReader.traceHead} can be answered. */
const HEAD_CHECK = 1024;
/** How many such checks a read makes at most (later, the heads wait for the whole trace). */
const HEAD_CHECKS = 8;

/** Whether `trace` has more than `limit` top-level lines and no node among the first `limit` is still running. */
function settledHead(trace: RunTrace, limit: number): boolean {
  return trace.items.length > limit && trace.items.slice(0, limit).every((item) => item.kind !== 'node' || item.node.status !== 'running');
}

/** Top-level lines `offset`.. of `trace`, at most `limit`. */
function page(trace: RunTrace, offset: number, limit: number, complete: boolean, warnings: readonly string[]): TracePage {
  return { ...trace, items: trace.items.slice(offset, offset + limit), offset, itemCount: trace.items.length, longestMs: longestNode(trace.items), complete, warnings: [...warnings] };
}

/** The warning for a corrupt line a view skipped. */
function skipped(ref: RunRef, c: CorruptLine): string {
  return `skipped corrupt line ${c.line} of the event log of run ${ref.runId}: ${c.error}`;
}

/** The longest duration of the nodes among `items` and under them, in ms (0 when none has one). */
function longestNode(items: TraceItem[]): number {
  let max = 0;
  for (const item of items) {
    if (item.kind !== 'node') continue;
    max = Math.max(max, item.node.durationMs ?? 0, longestNode(item.node.items));
  }
  return max;
}

/** A memory search hit. */
export interface MemoryHit {
  id: string;
  score: number;
  content: string;
  keywords: string[];
  metadata: Record<string, unknown>;
}

/** How far from its end a log is read for its last checkpoint (a step's batch ends with one). */
const TAIL_LINES = 512;

/** How many runs' traces (and step ranges) are kept (a 10,000-step run's trace is a few MB). */
const SCANS_KEPT = 4;

/** Largest page of events one request may ask for. */
export const MAX_PAGE_SIZE = 500;

/** What was made from a whole log, and the end of the log it was made from (its event count and last seq). */
interface Kept<T> {
  eventCount: number;
  lastSeq: number;
  /** The log's version (see RunStore.logVersion) taken before it was read, where the store has one. */
  version: string | undefined;
  result: Promise<T>;
  /** The result once it is made. */
  made?: T;
  /** Requests for the head of the trace waiting for the read to get far enough (see {@link RunReader.traceHead}). */
  heads?: Set<{ limit: number; resolve: (page: TracePage) => void; reject: (error: unknown) => void }>;
  /** The events read so far, while it is being made. */
  read?: StreamEvent[];
  /** What the read skipped or could not verify (see {@link TracePage.warnings}). */
  warnings: string[];
}

/** Reads runs, steps and memory from one run store and its memory. */
export class RunReader {
  /** The traces of the runs opened last (oldest first), with the end of the log they were made from. */
  private readonly traces = new Map<string, Kept<RunTrace>>();
  /** Likewise, the step ranges read from whole logs. */
  private readonly ranges = new Map<string, Kept<Omit<StepRange, 'warnings'>>>();

  /** Reads `store` and `memory`; {@link close} closes both. */
  constructor(
    readonly store: RunStore,
    private readonly memory: Memory,
  ) {}

  /** Where the runs are: the data directory, or the database URL without its password. */
  get location(): string {
    return this.store.location;
  }

  /** The session keys that hold runs. */
  async sessions(): Promise<string[]> {
    return [...new Set((await this.store.listRuns()).map((r) => r.sessionKey))];
  }

  /**
   * The runs of a session (or of all sessions), oldest first, with their fork origins: as `listRuns` lists them (a
   * run whose log lost its tail is shown as its log stands, with `damaged` saying so), without writing anything.
   */
  async runs(session: string | undefined): Promise<RunSummary[]> {
    const metas = await listRuns({ store: this.store, sessionKey: session, persist: false });
    return Promise.all(
      metas.map(async (meta) => ({
        ...meta,
        forkedFrom: await this.forkOrigin({ session: meta.sessionKey, runId: meta.runId }),
        durationLowerBound: runDuration(meta)?.lowerBound ?? false,
      })),
    );
  }

  /**
   * The run's projection as of the end of its log, as `listRuns` computes it, without writing anything: the studio
   * never stores a projection (one written from a live run's log could land after the writer's own, final one). A
   * 404 naming the run when it has no events.
   */
  async meta(ref: RunRef): Promise<RunMeta> {
    const meta = await listedRun({ store: this.store, sessionKey: ref.session, runId: ref.runId, persist: false });
    if (meta === undefined) throw this.unknown(ref);
    return meta;
  }

  /** A 404 naming the run, the session and the store. */
  private unknown(ref: RunRef): HttpError {
    return new HttpError(404, `no run '${ref.runId}' in session '${ref.session}' of ${this.store.location}`, 'runId');
  }

  /** The run's name in the store, after checking that it has events (a 404 naming it otherwise). */
  async existing(ref: RunRef): Promise<StoreRef> {
    const at = storeRef(ref);
    if (!(await this.store.hasEvents(at))) throw this.unknown(ref);
    return at;
  }

  /** Projection, fork origin, step range and recorded flow config of a run. */
  async run(ref: RunRef): Promise<RunDetail> {
    const meta = await this.meta(ref);
    const detail: RunDetail = { meta, durationLowerBound: runDuration(meta)?.lowerBound ?? false, forkedFrom: await this.forkOrigin(ref), steps: await this.steps(ref, meta), flow: null };
    try {
      detail.flow = (await this.store.loadDocument(storeRef(ref), 'flow')) ?? null;
    } catch (error) {
      detail.flowError = `cannot read the flow config recorded with run '${ref.runId}': ${(error as Error).message}`;
    }
    return detail;
  }

  /**
   * The trace tree of a run (as `runs show`), with what the read of a damaged log skipped or could not verify. Its
   * status, duration and segments are the run's as listed now (see {@link listed}).
   */
  async trace(ref: RunRef): Promise<RunTrace & { warnings: string[] }> {
    const kept = await this.scanEntry(ref);
    const trace = await this.listed(ref, await kept.result);
    // What the read skipped or could not verify: a whole trace read from a damaged log says so, as its pages do.
    return { ...trace, warnings: [...kept.warnings] };
  }

  /**
   * `trace` (kept for its log) with the header `runs list` gives the run now: a kept trace outlives its writer (a
   * killed run's log does not change, its status does), so the status is not kept with it.
   */
  private async listed(ref: RunRef, trace: RunTrace): Promise<RunTrace> {
    return withRunMeta(trace, await this.meta(ref));
  }

  /**
   * `limit` top-level lines of the trace from `offset` on: the first screen of a long run's trace is a few KB to send
   * and draw, not the whole tree (the page asks for more as it is scrolled).
   */
  async tracePage(ref: RunRef, offset: number, limit: number): Promise<TracePage> {
    const kept = await this.scanEntry(ref);
    return page(await this.listed(ref, await kept.result), offset, limit, true, kept.warnings);
  }

  /**
   * The first `limit` top-level lines of the trace as the head of the log tells them, without waiting for the whole
   * log to be read: taken from the read of the whole trace (started here, or already under way) as soon as what it
   * has read (verified against the chain as always) gives more than `limit` top-level lines and none of the first
   * `limit` is a node still running. The page draws it at once and replaces it with {@link tracePage} when that
   * arrives. When the whole trace is made first, it is that trace's first page.
   */
  async traceHead(ref: RunRef, limit: number): Promise<TracePage> {
    await this.existing(ref);
    // A read under way is joined as it is (its head is the log's head, whether or not the log grew since it started);
    // a finished one is used only while the log still ends where it did.
    const under = this.traces.get(`${ref.session}/${ref.runId}`);
    const kept = under !== undefined && under.made === undefined ? under : await this.scanEntry(ref);
    if (kept.made !== undefined) return page(await this.listed(ref, kept.made), 0, limit, true, kept.warnings);
    // A read under way may have gone far enough already (it checks for waiting heads only now and then, early on).
    if (kept.read !== undefined && kept.read.length > 0) {
      const trace = buildTrace(ref.runId, kept.read);
      if (settledHead(trace, limit)) return page(await this.listed(ref, trace), 0, limit, false, kept.warnings);
    }
    return new Promise<TracePage>((resolve, reject) => {
      const waiter = { limit, resolve, reject };
      (kept.heads ??= new Set()).add(waiter);
      kept.result.then(
        (trace) => {
          if (kept.heads?.delete(waiter)) this.listed(ref, trace).then((listed) => resolve(page(listed, 0, limit, true, kept.warnings)), reject);
        },
        (error: unknown) => kept.heads?.delete(waiter) && reject(error),
      );
    });
  }

  /**
   * Starts reading the trace of a run in the background (after the current I/O callbacks), for a {@link trace} that
   * is likely to follow; it is kept as {@link trace} keeps it. A failure is left for that request to report.
   */
  prepareTrace(ref: RunRef): void {
    setImmediate(() => void this.scan(ref).catch(() => undefined));
  }

  /**
   * A page of events. Without filters the page is read through the log's index (its cost does not grow with the
   * page number); with filters the log is read from the start only as far as the page needs.
   */
  async eventsPage(ref: RunRef, query: EventQuery): Promise<EventsPageResult> {
    if (query.type !== undefined && !StreamEventTypeSchema.safeParse(query.type).success) {
      throw new HttpError(400, `invalid type ${JSON.stringify(query.type)}: one of ${StreamEventTypeSchema.options.join(', ')}`, 'type');
    }
    if (query.namespace !== undefined && (query.namespace === '' || query.namespace.split('.').some((s) => s === ''))) {
      throw new HttpError(400, `invalid namespace pattern ${JSON.stringify(query.namespace)}: segments separated by '.', none empty`, 'namespace');
    }
    const at = await this.existing(ref);
    const offset = (query.page - 1) * query.pageSize;
    const corrupt: CorruptLine[] = [];
    const warnings: string[] = [];
    const onWarning = (message: string): void => void warnings.push(message);
    const result: EventsPageResult = { runId: ref.runId, page: query.page, pageSize: query.pageSize, events: [], hasMore: false, total: null, corrupt, warnings };
    if (query.type === undefined && query.namespace === undefined) {
      // The page is the log's lines offset..offset + pageSize - 1 (through the index), each with its own number,
      // which the chain proves: a line not served (corrupt, or in a batch that fails its chain hash) leaves a gap
      // named in `corrupt` or `warnings`, and shifts nothing. A line served after the page says there is a next one.
      for await (const { event, line } of this.store.readVerified(at, { from: offset, onCorrupt: (c) => corrupt.push(c), onWarning })) {
        if (line >= offset + query.pageSize) {
          result.hasMore = true;
          break;
        }
        result.events.push({ line, event });
      }
      result.total = (await this.meta(ref)).eventCount;
      return result;
    }
    const matches = query.namespace === undefined ? undefined : compileNamespacePattern(query.namespace);
    let count = 0;
    let reachedEnd = true;
    const types = query.type === undefined ? undefined : [query.type];
    for await (const { event, line } of this.store.readVerified(at, { onCorrupt: (c) => corrupt.push(c), onWarning, types })) {
      if (matches !== undefined && (event.namespace === undefined || !matches(event.namespace))) continue;
      if (count >= offset && count < offset + query.pageSize) result.events.push({ line, event });
      count++;
      if (count > offset + query.pageSize) {
        reachedEnd = false;
        break;
      }
    }
    result.hasMore = !reachedEnd;
    result.total = reachedEnd ? count : null;
    return result;
  }

  /**
   * The recorded steps of a run, from the ends of its log: the start checkpoint among its first lines, the last
   * checkpoint among its last ones (read through the index; steps only grow along a log). A log without a start
   * checkpoint near its head (recorded before they existed) or without a checkpoint near its end is read whole.
   * `meta`: the run's projection when the caller just read it (see {@link meta}).
   */
  async steps(ref: RunRef, meta?: RunMeta): Promise<StepRange> {
    const at = meta === undefined ? await this.existing(ref) : storeRef(ref);
    const warnings: string[] = [];
    const onCorrupt = (c: CorruptLine): void => void warnings.push(skipped(ref, c));
    const onWarning = (message: string): void => void (warnings.includes(message) || warnings.push(message));
    const isCheckpoint = (e: StreamEvent): boolean => e.type === StreamEventType.CHECKPOINT_SAVED;
    const head = (await this.store.readPage(at, 8, 0, { onCorrupt, onWarning })).filter(isCheckpoint);
    if (!head.some((e) => (e.payload as { start?: unknown }).start === true)) return this.range(ref);
    const first = firstStep(head);
    const tail: StreamEvent[] = [];
    const from = Math.max(0, (meta ?? (await this.meta(ref))).eventCount - TAIL_LINES);
    for await (const { event } of this.store.readVerified(at, { from, onCorrupt, onWarning, types: [StreamEventType.CHECKPOINT_SAVED] })) tail.push(event);
    if (tail.length === 0) return this.range(ref);
    return { first, last: Math.max(first, lastStep(tail)), warnings };
  }

  /**
   * The step range of a log {@link steps} cannot read from its ends: one read of its checkpoints (the rest of the
   * log is still verified against its chain). Kept as {@link scan} keeps the trace.
   */
  private async range(ref: RunRef): Promise<StepRange> {
    const kept = await this.kept(this.ranges, ref, [StreamEventType.CHECKPOINT_SAVED], (checkpoints) => {
      const first = firstStep(checkpoints);
      return { first, last: Math.max(first, lastStep(checkpoints)) };
    });
    const range = await kept.result;
    // With the warnings of the read it was made from (all known once it is made).
    return { ...range, warnings: [...kept.warnings] };
  }

  /**
   * One read of the whole log for the trace. Only the event types it needs are decoded (the rest of the log is
   * still verified against its chain).
   */
  private async scan(ref: RunRef): Promise<RunTrace> {
    return (await this.scanEntry(ref)).result;
  }

  /** The kept read of the trace of `ref` (see {@link kept}); as it reads, it answers the heads waiting for it. */
  private scanEntry(ref: RunRef): Promise<Kept<RunTrace>> {
    return this.kept(this.traces, ref, TRACE_EVENT_TYPES, (events) => buildTrace(ref.runId, events), (kept, events) => {
      if (kept.heads === undefined || kept.heads.size === 0) return;
      const trace = buildTrace(ref.runId, events);
      for (const head of kept.heads) {
        if (!settledHead(trace, head.limit)) continue;
        kept.heads.delete(head);
        void this.listed(ref, trace).then((listed) => head.resolve(page(listed, 0, head.limit, false, kept.warnings)), head.reject);
      }
    });
  }

  /**
   * What `make` makes of the events of `types` of a run's whole log, kept for the few runs read last while their logs
   * end where they ended when it was made (a log only grows, so the same last event at the same line is the same log;
   * a live run's is made again as it grows); requests that arrive while it is being made wait for the same read.
   */
  private async kept<T>(
    cache: Map<string, Kept<T>>,
    ref: RunRef,
    types: readonly string[],
    make: (events: StreamEvent[]) => T,
    progress?: (kept: Kept<T>, events: StreamEvent[]) => void,
  ): Promise<Kept<T>> {
    const key = `${ref.session}/${ref.runId}`;
    const at = storeRef(ref);
    const held = cache.get(key);
    if (held !== undefined && (await this.unchanged(at, held))) return held;
    // Taken before anything is read: a change while it is read makes the next request read it again.
    const version = await this.store.logVersion(at);
    const meta = await this.meta(ref);
    const again = cache.get(key);
    // Made by another request meanwhile (not the entry just found stale) for the log as the projection counts it.
    if (again !== undefined && again !== held && again.eventCount === meta.eventCount && again.lastSeq === meta.lastSeq) return again;
    const kept = { eventCount: meta.eventCount, lastSeq: meta.lastSeq, version, warnings: [] as string[] } as Kept<T>;
    const onCorrupt = (c: CorruptLine): void => void kept.warnings.push(skipped(ref, c));
    const result = (async () => {
      const events: StreamEvent[] = [];
      kept.read = events;
      try {
        for await (const { event } of this.store.readVerified(at, { onCorrupt, onWarning: (w) => void kept.warnings.push(w), types })) {
          events.push(event);
          // Now and then (not past the first few checks: each one looks at everything read so far).
          if (progress !== undefined && events.length % HEAD_CHECK === 0 && events.length <= HEAD_CHECK * HEAD_CHECKS) progress(kept, events);
        }
      } finally {
        kept.read = undefined;
      }
      return make(events);
    })();
    kept.result = result;
    cache.delete(key);
    cache.set(key, kept);
    result.then(
      (made) => void (kept.made = made),
      () => cache.get(key)?.result === result && cache.delete(key),
    );
    for (const old of cache.keys()) if (cache.size > SCANS_KEPT) cache.delete(old);
    return kept;
  }

  /**
   * Whether the log of `at` is still the one `held` was made from: by its version where the store keeps one (any
   * write, an edit in place included, makes it read again: its views then say what is wrong with it), else by its
   * end (see {@link endsAt}).
   */
  private async unchanged(at: StoreRef, held: Kept<unknown>): Promise<boolean> {
    if (held.version !== undefined) return (await this.store.logVersion(at)) === held.version;
    return this.endsAt(at, held.eventCount, held.lastSeq);
  }

  /** Whether the log of `at` still ends with event `lastSeq` at line `eventCount - 1` (two lines read through its index). */
  private async endsAt(at: StoreRef, eventCount: number, lastSeq: number): Promise<boolean> {
    if (eventCount === 0) return false;
    // Anything the reader cannot serve after that event (a torn or damaged tail written since) means the log
    // changed: it is read again, so that its views say what is wrong with it.
    let damaged = false;
    const flag = (): void => void (damaged = true);
    const tail = await this.store.readPage(at, 2, eventCount - 1, { onCorrupt: flag, onWarning: flag }).catch(() => []);
    return !damaged && tail.length === 1 && tail[0]!.seq === lastSeq;
  }

  /** A step given by the client, checked against the run's recorded steps (a 400 giving the range otherwise). */
  private async checkedStep(ref: RunRef, step: number, parameter: string): Promise<number> {
    const range = await this.steps(ref);
    if (step < range.first || step > range.last) {
      throw new HttpError(400, `invalid ${parameter} ${step} for run '${ref.runId}': its recorded steps are ${range.first}..${range.last}`, parameter);
    }
    return step;
  }

  private async point(ref: RunRef, step: number, parameter: string): Promise<RunPoint> {
    await this.checkedStep(ref, step, parameter);
    try {
      return await loadRunPoint({ store: this.store, sessionKey: ref.session, runId: ref.runId, step });
    } catch (error) {
      // A log or keyframe that cannot give this step (damaged, cut): the error names the file. Not a fault of the
      // server's: a 409, as for a run whose stored state disagrees with what was asked.
      if (error instanceof StoreError) throw new HttpError(409, error.message, parameter);
      throw error;
    }
  }

  /** The Backpack at `step` (default: the last) with provenance per key, and the quarantined items. */
  async state(ref: RunRef, step: number | undefined): Promise<StateReport> {
    const at = step ?? (await this.steps(ref)).last;
    return stateReport(ref.runId, await this.point(ref, at, 'step'));
  }

  /** What changed between two steps, and who changed it. */
  async diff(ref: RunRef, from: number, to: number): Promise<DiffReport> {
    const before = await this.point(ref, from, 'from');
    const after = await this.point(ref, to, 'to');
    return diffStates(ref.runId, before, after);
  }

  /**
   * Every write of `key` in the run. A damaged log or keyframe does not fail the view: what could not be read is
   * skipped and named in the report's warnings, which the page shows above the writes.
   */
  async blame(ref: RunRef, key: string): Promise<BlameReport> {
    if (key === '' || key.length > 1024) throw new HttpError(400, `invalid key: must be 1..1024 characters, got ${key.length}`, 'key');
    const at = await this.existing(ref);
    const events: StreamEvent[] = [];
    const warnings: string[] = [];
    const onCorrupt = (c: CorruptLine): void => void warnings.push(skipped(ref, c));
    for await (const { event } of this.store.readVerified(at, { onCorrupt, onWarning: (w) => void warnings.push(w), types: BLAME_EVENT_TYPES })) {
      // Only what blame reads is kept: a long run's writes of other keys are not held in memory.
      if (blameReads(event, key)) events.push(event);
    }
    const first = firstStep(events);
    const initial = await loadRunPoint({ store: this.store, sessionKey: ref.session, runId: ref.runId, step: first }).catch((error: unknown) => {
      warnings.push(`the state at step ${first} could not be read (${error instanceof Error ? error.message : String(error)}): a value the run started with is not shown`);
      return undefined;
    });
    return blame(ref.runId, key, events, initial, warnings);
  }

  /** The memory items best matching `query` (BM25), best first, and what the search skipped (damaged items), named. */
  async searchMemory(query: string, top: number): Promise<{ hits: MemoryHit[]; warnings: string[] }> {
    const warnings: string[] = [];
    if (query.trim() === '') return { hits: [], warnings };
    const hits = await this.memory.searchScored(query, top, { onWarning: (message) => warnings.push(message) });
    return { hits: hits.map((h) => ({ id: h.item.id, score: h.score, content: h.item.content, keywords: h.item.keywords ?? [], metadata: h.item.metadata ?? {} })), warnings };
  }

  /** Releases the memory and the run store. */
  async close(): Promise<void> {
    await this.memory.close();
    await this.store.close();
  }

  /** The run and step a fork started from, from its start checkpoint (the first few events of its log). */
  private async forkOrigin(ref: RunRef): Promise<ForkOrigin | null> {
    const head = await this.store.readPage(storeRef(ref), 4, 0, { onCorrupt: 'skip' }).catch(() => []);
    for (const event of head) {
      if (event.type !== StreamEventType.CHECKPOINT_SAVED) continue;
      const origin = (event.payload as { forkedFrom?: { runId?: unknown; step?: unknown } }).forkedFrom;
      if (origin && typeof origin.runId === 'string' && typeof origin.step === 'number') return { runId: origin.runId, step: origin.step };
      return null;
    }
    return null;
  }
}
