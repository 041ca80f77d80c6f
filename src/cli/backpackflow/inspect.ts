/**
 * What `runs state`, `runs diff`, `runs blame` and `runs events` compute from a stored run. Each returns plain data
 * (what `--json` prints); the human renderers are in render.ts.
 */
import { decodeValue, deepEqual, summarizeValue, type BackpackState, type JsonValue, type QuarantinedStateItem } from '../../backpack/index.js';
import { StreamEventType, isEventOf, type EventPayloadMap, type StreamEvent } from '../../events/index.js';

/** Who wrote a value: the provenance of a Backpack item. */
export interface Provenance {
  nodeId: string | null;
  nodeName: string | null;
  namespace: string | null;
  version: number;
  timestamp: number;
  tags: string[];
}

/** One key of the Backpack at a step. */
export interface StateEntry {
  key: string;
  /** The value in the value codec's JSON form (exact for Dates, Maps, BigInts, ...). */
  value: JsonValue;
  summary: string;
  provenance: Provenance;
}

/** A quarantined key at a step. */
export interface QuarantinedEntry extends StateEntry {
  quarantine: { reason: string; nodeId: string | null; timestamp: number };
}

/** What a report read that was damaged or could not be verified. */
export interface Warned {
  /**
   * What was damaged or could not be verified, and how the answer was served despite it (an earlier keyframe, the
   * steps up to the last verified one, a skipped corrupt line); empty when everything read was intact.
   */
  warnings: string[];
}

/** The Backpack of a run at one step (`runs state`). */
export interface StateReport extends Warned {
  runId: string;
  step: number;
  /** Where the run continues after this step (node ids, outermost first); empty when it had ended. */
  position: string[];
  items: StateEntry[];
  quarantined: QuarantinedEntry[];
}

type Item = BackpackState['items'][string];

function provenance(item: Item): Provenance {
  const m = item.metadata;
  return {
    nodeId: m.sourceNodeId ?? null,
    nodeName: m.sourceNodeName ?? null,
    namespace: m.sourceNamespace ?? null,
    version: m.version,
    timestamp: m.timestamp,
    tags: [...m.tags],
  };
}

/** Short text of a stored (codec JSON) value. */
export function summarizeStored(value: unknown): string {
  try {
    return summarizeValue(decodeValue(value));
  } catch {
    return summarizeValue(value);
  }
}

function entry(key: string, item: Item): StateEntry {
  return { key, value: item.value as JsonValue, summary: summarizeStored(item.value), provenance: provenance(item) };
}

/** The report of `runs state` from a loaded run point. */
export function stateReport(runId: string, point: { step: number; position: string[]; state: BackpackState; warnings?: string[] }): StateReport {
  return {
    runId,
    step: point.step,
    position: [...point.position],
    items: Object.entries(point.state.items).map(([key, item]) => entry(key, item)),
    quarantined: Object.entries(point.state.quarantined).map(([key, item]) => ({
      ...entry(key, item),
      quarantine: { reason: item.quarantine.reason, nodeId: item.quarantine.nodeId ?? null, timestamp: item.quarantine.timestamp },
    })),
    warnings: [...(point.warnings ?? [])],
  };
}

/** One changed key between two steps. */
export interface DiffChange {
  key: string;
  change: 'added' | 'modified' | 'deleted' | 'quarantined';
  before: string | null;
  after: string | null;
  /** Provenance of the value at `to` (for a deleted or quarantined key: of the value it had at `from`). */
  by: Provenance;
  /**
   * For a quarantined key: why and by which node, and the item it quarantined: its value (`summary`) and who wrote
   * it (`by`). `replaced`: the quarantined item is not the value the key had at `from` (that one was replaced, or
   * quarantined too, in between: a key keeps one quarantined item). diffStates always sets all three.
   */
  quarantine?: { reason: string; nodeId: string | null; summary?: string; by?: Provenance; replaced?: boolean };
}

/** The `quarantine` of a {@link DiffChange}: `q`'s reason, node and item, and whether `q` holds another item than `old`. */
function quarantineChange(q: QuarantinedStateItem, old: Item | undefined): NonNullable<DiffChange['quarantine']> {
  return { reason: q.quarantine.reason, nodeId: q.quarantine.nodeId ?? null, summary: summarizeStored(q.value), by: provenance(q), replaced: old !== undefined && !sameItem(old, q) };
}

/** What changed in the Backpack from one step to another (`runs diff`). */
export interface DiffReport extends Warned {
  runId: string;
  from: number;
  to: number;
  changes: DiffChange[];
  counts: { added: number; modified: number; deleted: number; quarantined: number };
}

/**
 * `record[key]` when `record` has it as its own property: keys are data (a run may pack `constructor`, `toString` or
 * `__proto__`), never the names of what every object inherits.
 */
function ownValue<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/**
 * Whether two stored items are the same: value, and the whole of their metadata (writer, namespace, version, time,
 * tags, ...) and access control. A key written again with the same value and version in the same millisecond by
 * another node (a delete restarts its versions) is a change.
 */
function sameItem(a: Item, b: Item): boolean {
  return (
    a.metadata.version === b.metadata.version &&
    a.metadata.timestamp === b.metadata.timestamp &&
    deepEqual(a.metadata, b.metadata) &&
    deepEqual(a.accessControl, b.accessControl) &&
    JSON.stringify(a.value) === JSON.stringify(b.value)
  );
}

/**
 * Whether `to`'s quarantine record of `key` is one made after `from`: a record `from` already held is an old
 * quarantine (the key was packed again since), not what happened between the two steps.
 */
function newQuarantine(from: BackpackState, to: BackpackState, key: string): QuarantinedStateItem | undefined {
  const q = ownValue(to.quarantined, key);
  const old = ownValue(from.quarantined, key);
  if (q === undefined || old === undefined) return q;
  const same = old.quarantine.timestamp === q.quarantine.timestamp && old.quarantine.reason === q.quarantine.reason && old.quarantine.nodeId === q.quarantine.nodeId && sameItem(old, q);
  return same ? undefined : q;
}

/**
 * The changes of the active Backpack between two states, keys in the order they appear (from, then new keys). A key
 * is reported quarantined only when `to` holds a quarantine of it that `from` did not (see newQuarantine).
 */
export function diffStates(runId: string, from: { step: number; state: BackpackState; warnings?: string[] }, to: { step: number; state: BackpackState; warnings?: string[] }): DiffReport {
  const changes: DiffChange[] = [];
  const before = from.state.items;
  const after = to.state.items;
  for (const [key, old] of Object.entries(before)) {
    const now = ownValue(after, key);
    if (now === undefined) {
      const q = newQuarantine(from.state, to.state, key);
      changes.push({
        key,
        change: q ? 'quarantined' : 'deleted',
        before: summarizeStored(old.value),
        after: null,
        by: provenance(old),
        ...(q ? { quarantine: quarantineChange(q, old) } : {}),
      });
    } else if (!sameItem(old, now)) {
      changes.push({ key, change: 'modified', before: summarizeStored(old.value), after: summarizeStored(now.value), by: provenance(now) });
    }
  }
  for (const [key, now] of Object.entries(after)) {
    if (!Object.hasOwn(before, key)) changes.push({ key, change: 'added', before: null, after: summarizeStored(now.value), by: provenance(now) });
  }
  // A key written and quarantined between the two steps never was active at either: report its quarantine.
  for (const [key, q] of Object.entries(to.state.quarantined)) {
    if (Object.hasOwn(before, key) || newQuarantine(from.state, to.state, key) === undefined) continue;
    changes.push({ key, change: 'quarantined', before: null, after: null, by: provenance(q), quarantine: quarantineChange(q, undefined) });
  }
  const counts = { added: 0, modified: 0, deleted: 0, quarantined: 0 };
  for (const c of changes) counts[c.change]++;
  const warnings = [...new Set([...(from.warnings ?? []), ...(to.warnings ?? [])])];
  return { runId, from: from.step, to: to.step, changes, counts, warnings };
}

/** One write of a key (`runs blame`). */
export interface BlameEntry {
  /**
   * The step whose boundary recorded the write (0: before the first node, e.g. the run's input). For a value a fork
   * started with, the fork's first step: where the value came from is {@link inheritedFrom}.
   */
  step: number;
  seq: number | null;
  timestamp: number;
  nodeId: string | null;
  nodeName: string | null;
  namespace: string | null;
  version: number | null;
  summary: string;
  /**
   * 'pack'; 'quarantine' when a node moved the key out of the active state; 'delete' when the key left the active
   * state by a delete or a clear (no event names those: the step's checkpoint does; `seq` and `version` are null, and
   * `nodeId` is the node that ran last in the step, when the log says).
   */
  action: 'pack' | 'quarantine' | 'delete';
  reason?: string;
  /** For a value the run started with as a fork: the run and step it was forked from (written there or before). */
  inheritedFrom?: { runId: string; step: number };
}

/** A write the log holds that never took effect: its step reached no boundary, so no step's state holds it. */
export interface RolledBackWrite extends BlameEntry {
  /** Why: its step failed, its node paused for an answer, its process ended, or the step has not finished. */
  why: string;
}

/**
 * A write of a step that reached its boundary, but that the step's state does not hold: a later write, delete or
 * quarantine of the key in the same step replaced it.
 */
export interface SupersededWrite extends BlameEntry {
  /** What replaced it. */
  why: string;
}

/** Every write of a key in a run. */
export interface BlameReport extends Warned {
  runId: string;
  key: string;
  /** The writes that took effect: each is in the state at its step's boundary. */
  writes: BlameEntry[];
  /**
   * The writes that were rolled back (or whose step has not finished yet), oldest first. {@link blame} always sets
   * it; a report made elsewhere without it has none.
   */
  rolledBack?: RolledBackWrite[];
  /**
   * The writes whose step finished but whose state does not hold them (replaced later in the same step), oldest
   * first. {@link blame} always sets it; a report made elsewhere without it has none.
   */
  superseded?: SupersededWrite[];
}

/**
 * Why the writes made since the last step boundary never took effect, when `event` ends a stretch of the run before a
 * boundary recorded them (any `run.*` event; a `run.started` after them is a new process's resume); else undefined.
 */
function rolledBackBy(event: StreamEvent): string | undefined {
  const type = event.type;
  if (type === StreamEventType.RUN_ERROR) return (event.payload as { aborted?: unknown }).aborted === true ? 'the run was stopped before the step finished' : 'its step failed';
  if (type === StreamEventType.RUN_WAITING) return 'its node paused for an answer (and runs again from prep on resume)';
  if (type === StreamEventType.RUN_START) return 'its process ended before the step did';
  return type.startsWith('run.') ? `the run ended (${type}) before the step did` : undefined;
}

/**
 * Whether {@link blame} needs `event` for the writes of `key`: a step boundary, a run event, a node's start (who
 * ran a step, for a delete), or a write of the key.
 */
export function blameReads(event: StreamEvent, key: string): boolean {
  return event.type === StreamEventType.CHECKPOINT_SAVED || event.type === StreamEventType.NODE_START || event.type.startsWith('run.') || (event.payload as { key?: unknown }).key === key;
}

/** The event types {@link blame} reads (see {@link blameReads}), for a reader that filters the log by type. */
export const BLAME_EVENT_TYPES: readonly string[] = [
  StreamEventType.CHECKPOINT_SAVED,
  StreamEventType.NODE_START,
  StreamEventType.BACKPACK_PACK,
  StreamEventType.BACKPACK_QUARANTINE,
  ...Object.values(StreamEventType).filter((type) => type.startsWith('run.')),
];

/**
 * Every write of `key` that took effect: the value the run started with (the state at its first step, when it holds
 * the key: the run's input, or for a fork what it inherited from the run and step it was forked from), then each
 * stored `backpack.packed` / `backpack.quarantined` event of the key that the next step boundary
 * (`checkpoint.saved`) recorded, with that step. A write followed by the end of a stretch of the run (`run.failed`,
 * `run.waiting`, a resume's `run.started` after a killed process) before any boundary was rolled back: it is in
 * `rolledBack`, with why, as are the writes of a step that has not finished. `warnings`: what the reader of `events`
 * could not serve (see BlameReport.warnings); the warnings of `initial` are added to them.
 */
export function blame(runId: string, key: string, events: StreamEvent[], initial: { step: number; state: BackpackState; warnings?: string[] } | undefined, warnings: readonly string[] = []): BlameReport {
  const writes: BlameEntry[] = [];
  const rolledBack: RolledBackWrite[] = [];
  const seed = initial === undefined ? undefined : ownValue(initial.state.items, key);
  if (initial && seed) {
    const p = provenance(seed);
    const start = events.find((event) => isEventOf(event, StreamEventType.RUN_START));
    const fork = start === undefined ? undefined : (start.payload as Partial<EventPayloadMap['run.started']>).forkedFrom;
    writes.push({
      step: initial.step,
      seq: null,
      timestamp: p.timestamp,
      nodeId: p.nodeId,
      nodeName: p.nodeName,
      namespace: p.namespace,
      version: p.version,
      summary: summarizeStored(seed.value),
      action: 'pack',
      ...(fork ? { inheritedFrom: { runId: String(fork.runId), step: Number(fork.step) } } : {}),
    });
  }
  const superseded: SupersededWrite[] = [];
  let step = initial?.step ?? 0;
  // The writes since the last step boundary: the next boundary records them, or the end of the stretch drops them.
  let pending: BlameEntry[] = [];
  // The node that started last since the last boundary: who ran the step (a delete names no node of its own).
  let ran: StreamEvent | undefined;
  for (const event of events) {
    if (isEventOf(event, StreamEventType.CHECKPOINT_SAVED)) {
      step = Number(event.payload.step) || step;
      const boundary = atBoundary(key, event.payload as { delta?: unknown }, pending);
      if (boundary.deleted) {
        boundary.effective = {
          step,
          seq: null,
          timestamp: event.timestamp,
          nodeId: ran?.nodeId ?? null,
          nodeName: ran?.nodeName ?? null,
          namespace: ran?.namespace ?? null,
          version: null,
          summary: '(deleted)',
          action: 'delete',
        };
      }
      const replacedBy = boundary.effective === undefined ? 'a later change of the key in its step undid it' : boundary.effective.action === 'pack' ? `packed again later in its step${boundary.effective.seq === null ? '' : ` (seq ${boundary.effective.seq})`}` : boundary.effective.action === 'delete' ? 'the key was deleted (or cleared) later in its step' : 'the key was quarantined later in its step';
      for (const w of pending) if (w !== boundary.effective) superseded.push({ ...w, step, why: replacedBy });
      if (boundary.effective) writes.push({ ...boundary.effective, step });
      pending = [];
      ran = undefined;
      continue;
    }
    const why = rolledBackBy(event);
    if (why !== undefined) {
      rolledBack.push(...pending.map((w) => ({ ...w, why })));
      pending = [];
      ran = undefined;
      continue;
    }
    if (event.type === StreamEventType.NODE_START) {
      ran = event;
      continue;
    }
    // Read as stored: a field may be missing from a hand-made log.
    let p: Partial<EventPayloadMap['backpack.packed'] & EventPayloadMap['backpack.quarantined']>;
    if (isEventOf(event, StreamEventType.BACKPACK_PACK) || isEventOf(event, StreamEventType.BACKPACK_QUARANTINE)) p = event.payload;
    else continue;
    if (p.key !== key) continue;
    const quarantine = event.type === StreamEventType.BACKPACK_QUARANTINE;
    pending.push({
      step: step + 1,
      seq: event.seq,
      timestamp: event.timestamp,
      nodeId: event.nodeId ?? null,
      nodeName: event.nodeName ?? null,
      namespace: event.namespace ?? null,
      version: typeof p.version === 'number' ? p.version : null,
      summary: quarantine ? '(quarantined)' : String(p.valueSummary ?? ''),
      action: quarantine ? 'quarantine' : 'pack',
      ...(quarantine ? { reason: String(p.reason ?? '') } : {}),
    });
  }
  rolledBack.push(...pending.map((w) => ({ ...w, why: 'its step has not finished (the run is at it, or its process ended)' })));
  return { runId, key, writes, rolledBack, superseded, warnings: [...new Set([...warnings, ...(initial?.warnings ?? [])])] };
}

/**
 * What a step's checkpoint says of `key`, against the writes of the step (`pending`, in order): the write its state
 * holds (`effective`: the last pack, when the checkpoint sets the key at that pack's version; the last quarantine,
 * when it quarantines the key), or that the key left the active state by a delete or a clear (`deleted`: removed, and
 * neither set again nor quarantined). A checkpoint that does not name the key left it as it was: no write holds.
 */
function atBoundary(key: string, payload: { delta?: unknown }, pending: readonly BlameEntry[]): { effective?: BlameEntry; deleted?: boolean } {
  const delta = (payload.delta ?? {}) as { set?: unknown; removed?: unknown; quarantined?: unknown };
  const record = (value: unknown): Record<string, unknown> => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {});
  const set = ownValue(record(delta.set), key) as { metadata?: { version?: unknown } } | undefined;
  const last = (action: BlameEntry['action']): BlameEntry | undefined => pending.findLast((w) => w.action === action);
  if (set !== undefined) {
    const pack = last('pack');
    if (pack === undefined) return {};
    const version = set.metadata?.version;
    // A hand-made log may lack versions: then the last pack is the one.
    return typeof version === 'number' && pack.version !== null && pack.version !== version ? {} : { effective: pack };
  }
  if (ownValue(record(delta.quarantined), key) !== undefined) return { effective: last('quarantine') };
  if (Array.isArray(delta.removed) && delta.removed.includes(key)) return { deleted: true };
  return {};
}

/** A page of a run's events (`runs events`). */
export interface EventsPage {
  runId: string;
  page: number;
  pageSize: number;
  /** Events matching the filters, over all pages. */
  total: number;
  pages: number;
  events: StreamEvent[];
}
