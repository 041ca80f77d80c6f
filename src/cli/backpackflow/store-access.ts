import { StreamEventType, isEventOf, type StreamEvent } from '../../events/index.js';
import { loadRunPoint, type RunPoint } from '../../runtime/index.js';
import { StoreError, isValidId, type RunMeta, type RunRef, type RunStore } from '../../store/index.js';
import { cliStore, type StoreOptions } from './run-store.js';
import { CliError, UsageError } from './errors.js';
import { warn } from './output.js';

/** Where the CLI finds runs. */
export interface RunRefOptions extends StoreOptions {
  session: string;
  runId: string;
}

/** A run the CLI reads: its store and its reference. */
export interface OpenedRun {
  store: RunStore;
  ref: RunRef;
}

/** The run's store and reference, after checking that the run exists (a clear error naming the run otherwise). */
export async function openRun(options: RunRefOptions): Promise<OpenedRun> {
  if (!isValidId(options.session)) throw new UsageError(`invalid session '${options.session}': use letters, digits, '.', '_' and '-'`);
  if (!isValidId(options.runId)) throw new UsageError(`invalid run id '${options.runId}': use letters, digits, '.', '_' and '-' (no path separators)`);
  const store = cliStore(options);
  const ref = { sessionKey: options.session, runId: options.runId };
  if (!(await store.hasEvents(ref))) {
    // A run whose log lost everything but whose projection is stored is known: its readers report the damage.
    const runs = await store.listRuns(options.session);
    if (runs.some((r) => r.runId === options.runId)) return { store, ref };
    const known = runs.length;
    throw new CliError(
      `unknown run id '${options.runId}' in session '${options.session}' of ${store.location} (${known} run${known === 1 ? '' : 's'} there; 'backpackflow runs list' shows them)`,
    );
  }
  return { store, ref };
}

/**
 * Every stored event of a run that its chain vouches for, in order. What is not served is warned about on stderr
 * and handed to `onWarning` too, when given (for a report that names it), and so is a log that serves fewer events
 * than the run's projection recorded (it lost its tail).
 */
export async function readRunEvents(options: RunRefOptions, onWarning?: (message: string) => void): Promise<StreamEvent[]> {
  return readFilteredEvents(options, () => true, onWarning);
}

/**
 * The stored events of a run for which `predicate` holds, in order (only the matches are kept in memory). `types`,
 * when given, are the only event types `predicate` can take: the others are verified with their batch but not
 * decoded, and the log's end is judged by {@link logEndWarnings} (the last line served need not be the log's last).
 */
export async function readFilteredEvents(
  options: RunRefOptions,
  predicate: (event: StreamEvent) => boolean,
  onWarning?: (message: string) => void,
  types?: readonly string[],
): Promise<StreamEvent[]> {
  const { store, ref } = await openRun(options);
  const out: StreamEvent[] = [];
  const warned = onceEach((message) => {
    warn(message);
    onWarning?.(message);
  });
  const claimed = types === undefined ? await projectionClaims(store, ref) : undefined;
  let served = 0;
  let lastSeq = -1;
  for await (const { event } of store.readVerified(ref, { onWarning: warned, types })) {
    served++;
    lastSeq = event.seq;
    if (predicate(event)) out.push(event);
  }
  if (types !== undefined) await logEndWarnings(options, warned);
  else {
    const lost = lostTail(store, ref, claimed, served, lastSeq);
    if (lost !== undefined) warned(lost);
  }
  return out;
}

/**
 * A page of a run's events (`runs events`) and the total the log serves (what its chain vouches for). A log that
 * serves fewer events than the run's projection counts was cut or damaged: a StoreError naming both, never a total
 * whose last pages come out empty. What the log does not serve is handed to `warn`.
 */
export async function readEventsPage(
  options: RunRefOptions,
  pageSize: number,
  offset: number,
  warn: (message: string) => void,
): Promise<{ total: number; events: StreamEvent[] }> {
  const { store, ref } = await openRun(options);
  const warnOnce = onceEach(warn);
  // Read before the log (see projectionClaims). A damaged one is named, and the log alone gives the total.
  let meta: Awaited<ReturnType<RunStore['loadRunMeta']>> = null;
  try {
    meta = (await store.loadRunMeta(ref)) ?? (await rebuiltProjection(store, ref, warnOnce));
  } catch (error) {
    if (!(error instanceof StoreError)) throw error;
    warnOnce(`${error.message}; the pages are counted from the log alone`);
  }
  // Pages are addressed by line, as the chain numbers them: the total is the number of lines the log serves up to
  // its last, read from the end the projection names rather than counted from the start.
  const total = (await readLogEnd(store, ref, meta === null ? 0 : meta.eventCount - 1, warnOnce)).served;
  if (meta !== null && meta.eventCount > total) {
    throw new StoreError(
      `${store.describeProjection(ref)} counts ${meta.eventCount} events, but ${store.describeLog(ref)} serves ${total}: the log was cut or damaged (backpackflow runs verify ${options.runId})`,
    );
  }
  return { total, events: await store.readPage(ref, pageSize, offset, { onWarning: warnOnce }) };
}

/** `report`, called once for each different message (a log read again warns again). */
function onceEach(report: (message: string) => void): (message: string) => void {
  const told = new Set<string>();
  return (message) => {
    if (told.has(message)) return;
    told.add(message);
    report(message);
  };
}

/**
 * What the run's stored projection recorded, read before its log: a live writer stores its projection only after
 * the events it counts, so a log read after it holds them all unless it lost its tail. Undefined when it is damaged
 * (the listing reports that; the events come from the log alone), or when there is none and `rebuild` is not given;
 * with `rebuild`, a missing one is rebuilt from the log and stored ({@link rebuiltProjection}).
 */
async function projectionClaims(store: RunStore, ref: RunRef, rebuild?: { onWarning: (message: string) => void }): Promise<{ eventCount: number; lastSeq: number } | undefined> {
  try {
    return (await store.loadRunMeta(ref)) ?? (rebuild === undefined ? undefined : await rebuiltProjection(store, ref, rebuild.onWarning));
  } catch (error) {
    if (error instanceof StoreError) return undefined;
    throw error;
  }
}

/**
 * The projection of a run that has none stored (deleted, or its writer died before storing it), rebuilt from the
 * whole log and stored, as `runs list` does: the next read of the run starts from its end instead of reading the
 * whole log again.
 */
function rebuiltProjection(store: RunStore, ref: RunRef, onWarning: (message: string) => void): Promise<RunMeta> {
  return store.currentRunMeta(ref, onWarning);
}

/** The warning for a log that serves `served` events up to seq `lastSeq` when the projection `claimed` more. */
function lostTail(store: RunStore, ref: RunRef, claimed: { eventCount: number; lastSeq: number } | undefined, served: number, lastSeq: number): string | undefined {
  if (claimed === undefined || (claimed.eventCount <= served && claimed.lastSeq <= lastSeq)) return undefined;
  return (
    `${store.describeProjection(ref)} counts ${claimed.eventCount} events up to seq ${claimed.lastSeq}, but ${store.describeLog(ref)} serves ${served} ` +
    `up to seq ${lastSeq}: the log was cut or damaged (backpackflow runs verify ${ref.runId}); what it serves is shown`
  );
}

/** The recorded steps of a run: 0 through the last `checkpoint.saved` step. */
export function lastStep(events: StreamEvent[]): number {
  let last = 0;
  for (const event of events) {
    if (isEventOf(event, StreamEventType.CHECKPOINT_SAVED)) last = Math.max(last, Number(event.payload.step) || 0);
  }
  return last;
}

/**
 * The first recorded step of a run: 0, or for a fork the step it started from. That is the step of the start
 * checkpoint (`start: true`); runs recorded before start checkpoints existed begin one step before their first one.
 */
export function firstStep(events: StreamEvent[]): number {
  for (const event of events) {
    if (!isEventOf(event, StreamEventType.CHECKPOINT_SAVED)) continue;
    const step = Number(event.payload.step) || 0;
    return event.payload.start === true ? step : Math.max(0, step - 1);
  }
  return 0;
}

/**
 * The run's state at `step` (default: the last), or a CliError giving the valid range. It reads the keyframe at or
 * before the step and the log from there (see loadRunPoint), not the whole log: `events`, when the caller read them
 * already, give the range up front; otherwise the range is read only when the step is not there. Its warnings go to
 * `report` (default: printed).
 */
export async function runPointAt(options: RunRefOptions, step: number | undefined, events?: StreamEvent[], report: (message: string) => void = warn): Promise<RunPoint> {
  const store = cliStore(options);
  const outOfRange = (read: StreamEvent[]): CliError | undefined => {
    const first = firstStep(read);
    const last = Math.max(first, lastStep(read));
    if (step === undefined || (step <= last && step >= first)) return undefined;
    // The log is named: the range is what it serves (a cut log serves fewer steps than the run took).
    const log = store.describeLog({ sessionKey: options.session, runId: options.runId });
    return new CliError(`invalid step ${step} for run '${options.runId}': its recorded steps are ${first}..${last} (as ${log} serves them)`);
  };
  const early = events === undefined ? undefined : outOfRange(events);
  if (early !== undefined) throw early;
  let point: RunPoint;
  try {
    point = await loadRunPoint({ store, sessionKey: options.session, runId: options.runId, step });
  } catch (error) {
    // A step the log does not hold: the message gives the range (read now, on this failure path).
    if (events === undefined && step !== undefined && error instanceof StoreError) throw outOfRange(await readRunEvents(options)) ?? error;
    throw error;
  }
  for (const warning of point.warnings) report(warning);
  return point;
}

/**
 * What is wrong with the end of a run's log, as warnings (also printed): lines after its last chain hash, which are
 * not served, a changed last batch, or a log that serves fewer events than the run's projection counts (it was cut).
 * Only the log's last batch is read (from the projection's last event on; a missing projection is first rebuilt from
 * the whole log and stored, once), so that a state or a diff of a step costs what that step's keyframe and the events after it cost,
 * not a read of the whole log. A changed batch before the last one is reported by the reads that cover it (the
 * step's own, `runs show`, `blame`, `events`) and by `runs verify`, which proves the whole log. Each warning also
 * goes to `report` (default: printed).
 */
export async function logEndWarnings(options: RunRefOptions, report: (message: string) => void = warn): Promise<string[]> {
  const { store, ref } = await openRun(options);
  const warnings: string[] = [];
  const warned = onceEach((message) => {
    report(message);
    warnings.push(message);
  });
  const claimed = await projectionClaims(store, ref, { onWarning: warned });
  const end = await readLogEnd(store, ref, claimed === undefined ? 0 : claimed.eventCount - 1, warned);
  const lost = lostTail(store, ref, claimed, end.served, end.lastSeq);
  if (lost !== undefined) warned(lost);
  return warnings;
}

/**
 * Where a run's log ends: the number of lines it serves (its last served line's number, which the chain proves, plus
 * one) and the seq of its last event, read from line `from` on (the line a projection names as the last it counted);
 * from the start when nothing is served from there (the log is shorter than that).
 */
async function readLogEnd(store: RunStore, ref: RunRef, from: number, onWarning: (message: string) => void): Promise<{ served: number; lastSeq: number }> {
  const readFrom = async (start: number): Promise<{ served: number; lastSeq: number }> => {
    let served = 0;
    let lastSeq = -1;
    for await (const { event, line } of store.readVerified(ref, { from: start, onWarning })) {
      served = line + 1;
      lastSeq = event.seq;
    }
    return { served, lastSeq };
  };
  const start = Math.max(0, from);
  const end = await readFrom(start);
  return end.lastSeq < 0 && start > 0 ? readFrom(0) : end;
}
