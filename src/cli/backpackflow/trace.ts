/**
 * The trace of a stored run as a tree (`runs show`): node executions nested by span (`parentSpanId`), with their
 * durations, actions, retries, errors, quarantines and the routes taken between them, in the order they happened.
 * Its status, duration and segments are the run's as listings give them (`listedRun`), in DESIGN D16's words.
 */
import { StreamEventType, type StreamEvent } from '../../events/index.js';
import { terminalText as t } from '../../events/terminal-text.js';
import { listedRun } from '../../runtime/index.js';
import { emptyRunMeta, foldRunMetaBatch, runDuration } from '../../store/run-meta.js';
import type { RunMeta } from '../../store/index.js';
import { colors, commandLine, formatMs, type CommandPlace } from './output.js';
import { formatDuration } from './render.js';
import { readFilteredEvents, readRunEvents, openRun, type RunRefOptions } from './store-access.js';

/** One line under a span, in the order it happened. */
export type TraceItem =
  | { kind: 'node'; node: TraceNode }
  | { kind: 'route'; action: string; from: string; to: string }
  | { kind: 'route-missing'; action: string; from: string; available: string[] }
  | { kind: 'retry'; attempt: number; maxRetries: number; error: string }
  | { kind: 'error'; phase: string; error: string }
  | { kind: 'quarantine'; key: string; reason: string }
  | { kind: 'access-denied'; key: string; operation: string; rule: string }
  | { kind: 'interrupt'; index: number; payload: unknown }
  | { kind: 'answer'; nodeId: string; index: number; answer: unknown }
  | { kind: 'model'; model: string; purpose: string; text: string; inputTokens: number | null; outputTokens: number | null; error: string | null };

/** One node execution. */
export interface TraceNode {
  spanId: string;
  nodeId: string | null;
  nodeName: string | null;
  namespace: string | null;
  startedAt: number;
  durationMs: number | null;
  /** The action it returned; null while running or when it failed. */
  action: string | null;
  /**
   * `running`: no end recorded and the run is running; `stopped`: it recorded no end before its segment ended (the run
   * was stopped, or its writer killed, while it ran); otherwise how it ended.
   */
  status: 'completed' | 'failed' | 'waiting' | 'running' | 'stopped';
  items: TraceItem[];
}

/** One stretch a process ran the run: from a `run.started` to its end, failure or pause. */
export interface TraceSegment {
  startedAt: number;
  /** Up to its end, or, when it recorded none (`ended` false), up to its last recorded event: a lower bound. */
  durationMs: number | null;
  /** Whether it recorded its end (false: its writer was killed, or it is still running). */
  ended: boolean;
  /** How it ended (completed, failed, waiting), `stopped` (stopped, or its writer killed), or `running`. */
  outcome: 'completed' | 'failed' | 'waiting' | 'stopped' | 'running';
}

/** The whole trace of a run. */
export interface RunTrace {
  runId: string;
  flowNamespace: string | null;
  /** The run's status as `runs list` gives it (DESIGN D16: running only while a live writer holds it). */
  status: RunMeta['status'];
  /** When the run first started (kept across resumes). */
  startedAt: number | null;
  /** The time it ran: the sum of its segments (see `runDuration`). */
  durationMs: number | null;
  /** Whether {@link durationMs} is a lower bound: a segment recorded no end (killed, or still running). */
  durationLowerBound: boolean;
  segments: TraceSegment[];
  /** The run and step a fork started from. */
  forkedFrom: { runId: string; step: number } | null;
  /** What a waiting run waits for: the node, its question and the answer's JSON Schema. */
  interrupt: { nodeId: string; namespace: string; index: number; payload: unknown; schema?: Record<string, unknown>; pause?: number } | null;
  action: string | null;
  error: string | null;
  /** How many times the run was started (1, plus one per resume). */
  starts: number;
  /** Who writes a running run and why it is judged live (see RunStore.describeWriter). */
  writer?: string;
  items: TraceItem[];
}

function errorText(error: unknown): string {
  if (error && typeof error === 'object') {
    const e = error as { name?: unknown; message?: unknown };
    return `${String(e.name ?? 'Error')}: ${String(e.message ?? '')}`.replace(/\s*\n\s*/g, ' ');
  }
  return String(error ?? 'unknown error');
}

/**
 * The event types {@link buildTrace} reads (it ignores the others): a reader of a long log may decode only these
 * (`EventStore` read option `types`).
 */
export const TRACE_EVENT_TYPES: readonly string[] = [
  StreamEventType.RUN_START,
  StreamEventType.RUN_END,
  StreamEventType.RUN_ERROR,
  StreamEventType.RUN_WAITING,
  StreamEventType.NODE_INTERRUPT,
  StreamEventType.INTERRUPT_ANSWERED,
  StreamEventType.NODE_START,
  StreamEventType.NODE_END,
  StreamEventType.NODE_RETRY,
  StreamEventType.ERROR,
  StreamEventType.ROUTE,
  StreamEventType.ROUTE_MISSING,
  StreamEventType.BACKPACK_QUARANTINE,
  StreamEventType.ACCESS_DENIED,
  StreamEventType.MODEL_START,
  StreamEventType.MODEL_DELTA,
  StreamEventType.MODEL_END,
];

/**
 * The header of a run's trace from its projection: status, start, duration and segments, as `runs list` gives them
 * (pass the listed projection: `listedRun`, whose status says `running` only while a live writer holds the run).
 */
function header(meta: RunMeta): Pick<RunTrace, 'status' | 'startedAt' | 'durationMs' | 'durationLowerBound' | 'segments'> {
  const duration = runDuration(meta);
  const segments = meta.segments ?? [];
  return {
    status: meta.status,
    startedAt: meta.eventCount === 0 ? null : meta.startedAt,
    durationMs: duration?.ms ?? null,
    durationLowerBound: duration?.lowerBound ?? false,
    segments: segments.map((segment, i) => {
      const ended = segment.endedAt !== undefined;
      // The last segment open is the run's: running or stopped as listed; an earlier one open had its writer killed.
      const open = i === segments.length - 1 && segment.durationMs === undefined;
      const durationMs = open ? Math.max(0, meta.updatedAt - segment.startedAt) : (segment.durationMs ?? null);
      const outcome = segment.outcome ?? (open && meta.status === 'running' ? 'running' : 'stopped');
      return { startedAt: segment.startedAt, durationMs, ended, outcome };
    }),
  };
}

/**
 * `trace` with the header of `meta` (see {@link header}): a node that recorded no end is `running` only while the
 * run is. `trace` is not modified (the studio keeps traces and gives each request the run's status at that time).
 */
export function withRunMeta(trace: RunTrace, meta: RunMeta): RunTrace {
  const running = meta.status === 'running';
  const relabel = (items: TraceItem[]): TraceItem[] => {
    if (running || !items.some(hasRunning)) return items;
    return items.map((item) => {
      if (item.kind !== 'node' || !hasRunning(item)) return item;
      const node = item.node;
      return { kind: 'node', node: { ...node, status: node.status === 'running' ? 'stopped' : node.status, items: relabel(node.items) } };
    });
  };
  return { ...trace, ...header(meta), items: relabel(trace.items) };
}

/** Whether `item` is a node that recorded no end, or holds one. */
function hasRunning(item: TraceItem): boolean {
  return item.kind === 'node' && (item.node.status === 'running' || item.node.items.some(hasRunning));
}

/**
 * The trace of a stored run (`runs show`): its tree from its events, with the status, duration and segments
 * `runs list` gives it (one rule for every reader: `listedRun`, run-meta's `runDuration`).
 */
export async function storedTrace(options: RunRefOptions): Promise<RunTrace> {
  const { store, ref } = await openRun(options);
  const meta = await listedRun({ store, sessionKey: ref.sessionKey, runId: ref.runId });
  if (meta === undefined) return buildTrace(ref.runId, await readRunEvents(options));
  // The header is the projection's (withRunMeta): the tree needs only the events it draws, the others are verified
  // with their batch but not decoded.
  const trace = withRunMeta(buildTrace(ref.runId, await readFilteredEvents(options, () => true, undefined, TRACE_EVENT_TYPES)), meta);
  const writer = trace.status === 'running' ? await store.describeWriter(ref) : undefined;
  return writer === undefined ? trace : { ...trace, writer };
}

/**
 * Builds the trace tree of a run from its stored events. Its header (status, duration, segments) is the projection
 * of these events (see foldRunMeta): a run that recorded no end is `running` as far as they tell; {@link withRunMeta}
 * gives it the status listings give it (`stopped` when no live writer holds it).
 */
export function buildTrace(runId: string, events: StreamEvent[]): RunTrace {
  const trace: RunTrace = {
    runId, flowNamespace: null, ...header(foldRunMetaBatch(emptyRunMeta('trace', runId), events)), forkedFrom: null, interrupt: null,
    action: null, error: null, starts: 0, items: [],
  };
  /** Nodes started that have not recorded their end yet. */
  const open = new Set<TraceNode>();
  /** A node that stopped without finishing (failed, or paused for a person) ends there, unless it already ended. */
  const settle = (event: StreamEvent, status: 'failed' | 'waiting'): void => {
    const node = event.spanId === undefined ? undefined : nodes.get(event.spanId);
    if (node && open.delete(node)) {
      node.status = status;
      node.durationMs = event.timestamp - node.startedAt;
    }
  };
  /** A segment ended: the nodes it left without an end did not finish in it. */
  const endSegment = (status: TraceNode['status']): void => {
    for (const node of open) node.status = status;
    open.clear();
  };
  const nodes = new Map<string, TraceNode>();
  /** Model calls in progress, by node span and purpose. */
  const models = new Map<string, Extract<TraceItem, { kind: 'model' }>>();
  // A model call is its node's span, its number there (LlmNode's `call`: calls made at once are told apart) and purpose.
  const modelKey = (event: StreamEvent): string => {
    const p = event.payload as Record<string, unknown>;
    return `${event.spanId ?? ''}\u0000${String(p['call'] ?? '')}\u0000${String(p['purpose'] ?? '')}`;
  };
  /** Where the lines of an event go: its own node, else its parent's, else the run's top level. */
  const home = (spanId: string | undefined): TraceItem[] => (spanId !== undefined ? nodes.get(spanId)?.items : undefined) ?? trace.items;
  const ownerOf = (event: StreamEvent): TraceItem[] =>
    event.spanId !== undefined && nodes.has(event.spanId) ? home(event.spanId) : home(event.parentSpanId);
  for (const event of events) {
    const p = event.payload as Record<string, unknown>;
    switch (event.type) {
      case StreamEventType.RUN_START: {
        trace.starts++;
        trace.flowNamespace ??= typeof p['flowNamespace'] === 'string' ? p['flowNamespace'] : (event.namespace ?? null);
        trace.interrupt = null;
        trace.error = null;
        const from = p['forkedFrom'] as RunTrace['forkedFrom'] | undefined;
        if (from && typeof from === 'object') trace.forkedFrom = { runId: String(from.runId), step: Number(from.step) };
        // Nodes the previous segment left without an end: its writer was killed while they ran.
        endSegment('stopped');
        break;
      }
      case StreamEventType.RUN_END:
        trace.action = typeof p['action'] === 'string' ? p['action'] : null;
        endSegment('stopped');
        break;
      case StreamEventType.RUN_ERROR:
        // Stopped by the run's own signal (`aborted`): not a failure; the run stopped there and resumes from there.
        if (p['aborted'] === true) {
          endSegment('stopped');
          break;
        }
        trace.error = errorText(p['error']);
        endSegment('failed');
        break;
      case StreamEventType.RUN_WAITING:
        // Named by its event's seq (InterruptInfo.pause), as an answer names it.
        trace.interrupt = p['interrupt'] === null || typeof p['interrupt'] !== 'object' ? null : { ...(p['interrupt'] as NonNullable<RunTrace['interrupt']>), pause: event.seq };
        endSegment('waiting');
        break;
      case StreamEventType.NODE_INTERRUPT:
        ownerOf(event).push({ kind: 'interrupt', index: Number(p['index']), payload: p['payload'] });
        settle(event, 'waiting');
        break;
      case StreamEventType.INTERRUPT_ANSWERED:
        trace.items.push({ kind: 'answer', nodeId: String(p['nodeId']), index: Number(p['index']), answer: p['answer'] });
        break;
      case StreamEventType.NODE_START: {
        if (event.spanId === undefined) break;
        const node: TraceNode = {
          spanId: event.spanId,
          nodeId: event.nodeId ?? null,
          nodeName: event.nodeName ?? null,
          namespace: event.namespace ?? null,
          startedAt: event.timestamp,
          durationMs: null,
          action: null,
          status: 'running',
          items: [],
        };
        home(event.parentSpanId).push({ kind: 'node', node });
        nodes.set(event.spanId, node);
        open.add(node);
        break;
      }
      case StreamEventType.NODE_END: {
        const node = event.spanId === undefined ? undefined : nodes.get(event.spanId);
        if (!node) break;
        open.delete(node);
        node.status = 'completed';
        node.durationMs = typeof p['durationMs'] === 'number' ? p['durationMs'] : event.timestamp - node.startedAt;
        node.action = typeof p['action'] === 'string' ? p['action'] : null;
        break;
      }
      case StreamEventType.NODE_RETRY:
        ownerOf(event).push({ kind: 'retry', attempt: Number(p['attempt']), maxRetries: Number(p['maxRetries']), error: errorText(p['error']) });
        break;
      case StreamEventType.ERROR:
        ownerOf(event).push({ kind: 'error', phase: String(p['phase'] ?? 'unknown'), error: errorText(p['error']) });
        settle(event, 'failed');
        break;
      case StreamEventType.ROUTE:
        home(event.parentSpanId).push({ kind: 'route', action: String(p['action']), from: String(p['from']), to: String(p['to']) });
        break;
      case StreamEventType.ROUTE_MISSING:
        home(event.parentSpanId).push({
          kind: 'route-missing',
          action: String(p['action']),
          from: String(p['from']),
          available: Array.isArray(p['available']) ? p['available'].map(String) : [],
        });
        break;
      case StreamEventType.BACKPACK_QUARANTINE:
        ownerOf(event).push({ kind: 'quarantine', key: String(p['key']), reason: String(p['reason'] ?? '') });
        break;
      case StreamEventType.MODEL_START: {
        const item: Extract<TraceItem, { kind: 'model' }> = { kind: 'model', model: String(p['model'] ?? 'model'), purpose: String(p['purpose'] ?? ''), text: '', inputTokens: null, outputTokens: null, error: null };
        ownerOf(event).push(item);
        models.set(modelKey(event), item);
        break;
      }
      case StreamEventType.MODEL_DELTA: {
        // Stored deltas are folded (one event per model call and step) unless the run kept every delta.
        const item = models.get(modelKey(event));
        if (item && typeof p['delta'] === 'string') item.text += p['delta'];
        break;
      }
      case StreamEventType.MODEL_END: {
        const item = models.get(modelKey(event));
        if (!item || p['retryInMs'] !== undefined) break;
        const usage = p['usage'] as { inputTokens?: unknown; outputTokens?: unknown } | undefined;
        if (typeof usage?.inputTokens === 'number') item.inputTokens = usage.inputTokens;
        if (typeof usage?.outputTokens === 'number') item.outputTokens = usage.outputTokens;
        if (p['error'] !== undefined) item.error = errorText(p['error']);
        models.delete(modelKey(event));
        break;
      }
      case StreamEventType.ACCESS_DENIED:
        ownerOf(event).push({ kind: 'access-denied', key: String(p['key']), operation: String(p['operation']), rule: String(p['rule'] ?? '') });
        break;
      default:
        break;
    }
  }
  return trace;
}

const c = colors;

function shorten(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function nodeLine(node: TraceNode): string {
  const name = t(node.nodeName ?? node.nodeId ?? '(node)');
  const ns = node.namespace ? ` ${c.dim(t(node.namespace))}` : '';
  const time = node.durationMs === null ? '' : ` ${c.dim(formatMs(node.durationMs))}`;
  const mark = node.status === 'completed' ? c.green('✓') : node.status === 'failed' ? c.red('✗') : node.status === 'waiting' ? c.yellow('?') : c.yellow('…');
  const unfinished = { running: ' (running)', stopped: ' (stopped: did not finish)', waiting: ' (waiting for an answer)', failed: '', completed: '' }[node.status];
  const action = node.action === null ? (unfinished === '' ? '' : c.yellow(unfinished)) : ` → ${c.cyan(t(node.action))}`;
  return `${mark} ${c.bold(name)}${ns}${time}${action}`;
}

/** A value as JSON, through terminalText (JSON escapes C0 controls, not C1 nor bidirectional characters). */
function json(value: unknown): string {
  return t(String(JSON.stringify(value)));
}

/** The line of a trace item; every text of it recorded by the run goes through terminalText. */
function itemLine(item: Exclude<TraceItem, { kind: 'node' }>): string {
  switch (item.kind) {
    case 'route':
      return c.cyan(`→ route ${t(item.action)}: ${t(item.from)} → ${t(item.to)}`);
    case 'route-missing':
      return c.yellow(`⚠ no route for '${t(item.action)}' from ${t(item.from)} (available: ${t(item.available.join(', ')) || 'none'})`);
    case 'retry':
      return c.yellow(`↻ attempt ${item.attempt}/${item.maxRetries} failed: ${t(item.error)}`);
    case 'error':
      return c.red(`✗ error in ${t(item.phase)}: ${t(item.error)}`);
    case 'quarantine':
      return c.magenta(`⊘ quarantined ${t(item.key)}: ${t(item.reason)}`);
    case 'access-denied':
      return c.magenta(`⛔ access denied: ${t(item.operation)} ${t(item.key)} (${t(item.rule)})`);
    case 'interrupt':
      return c.yellow(`? asked (${item.index}): ${json(item.payload)}`);
    case 'answer':
      return c.yellow(`✎ answered ${t(item.nodeId)} (${item.index}): ${json(item.answer)}`);
    case 'model': {
      const tokens = item.inputTokens === null && item.outputTokens === null ? '' : c.dim(` ${item.inputTokens ?? '?'}→${item.outputTokens ?? '?'} tokens`);
      const text = item.text === '' ? '' : `: ${json(shorten(item.text, 120))}`;
      const error = item.error === null ? '' : c.red(` ✗ ${t(item.error)}`);
      return `${c.magenta('✎')} ${t(item.model)}${item.purpose ? ` (${t(item.purpose)})` : ''}${tokens}${text}${error}`;
    }
  }
}

function renderItems(items: TraceItem[], prefix: string, out: string[]): void {
  items.forEach((item, i) => {
    const last = i === items.length - 1;
    const branch = c.dim(last ? '└─ ' : '├─ ');
    if (item.kind === 'node') {
      out.push(`${prefix}${branch}${nodeLine(item.node)}`);
      renderItems(item.node.items, prefix + c.dim(last ? '   ' : '│  '), out);
    } else {
      out.push(`${prefix}${branch}${itemLine(item)}`);
    }
  });
}

/** The command that answers the pause `pause` of run `runId` stored at `place` (with `extra` flags), as a person pastes it. */
export function answerCommand(runId: string, pause: number | undefined, place: CommandPlace, extra: readonly string[] = []): string {
  return commandLine(['runs', 'resume', runId, ...(pause === undefined ? [] : ['--answering', String(pause)]), '--input', '<json>', ...extra], place);
}

/** The trace as an indented tree of text lines; its commands name `place` (where the run is stored). */
export function renderTrace(trace: RunTrace, place: CommandPlace): string {
  const status =
    trace.status === 'completed'
      ? c.green('completed')
      : trace.status === 'failed'
        ? c.red(`failed: ${t(trace.error ?? '')}`)
        : c.yellow(trace.status);
  const time = trace.durationMs === null ? '' : ` · ${formatDuration({ ms: trace.durationMs, lowerBound: trace.durationLowerBound })}`;
  const action = trace.action === null ? '' : ` → ${c.cyan(t(trace.action))}`;
  const resumed = trace.starts > 1 ? c.yellow(` · resumed ${trace.starts - 1}×`) : '';
  const out = [`${c.bold('run')} ${t(trace.runId)} ${c.dim(t(trace.flowNamespace || '(root flow)'))} ${status}${time}${action}${resumed}`];
  if (trace.startedAt !== null) out.push(c.dim(`started ${new Date(trace.startedAt).toISOString()}`));
  if (trace.forkedFrom) out.push(c.yellow(`fork of ${t(trace.forkedFrom.runId)} at step ${trace.forkedFrom.step}`));
  if (trace.writer !== undefined) out.push(c.dim(`written by ${t(trace.writer)}`));
  if (trace.segments.length > 1) {
    trace.segments.forEach((s, i) =>
      out.push(c.dim(`segment ${i + 1}: ${new Date(s.startedAt).toISOString()} · ${s.durationMs === null ? '' : formatDuration({ ms: s.durationMs, lowerBound: !s.ended })} · ${s.outcome}`)),
    );
  }
  if (trace.interrupt) {
    out.push(c.yellow(`waiting for an answer to node '${t(String(trace.interrupt.nodeId))}' (${t(String(trace.interrupt.namespace))}): ${json(trace.interrupt.payload)}`));
    if (trace.interrupt.schema) out.push(c.yellow(`answer schema: ${json(trace.interrupt.schema)}`));
    out.push(c.yellow(`answer it: ${answerCommand(trace.runId, trace.interrupt.pause, place)}`));
  }
  renderItems(trace.items, '', out);
  return out.join('\n');
}
