import { StreamEventType, type StreamEvent } from '../events/types.js';
import type { RunMeta } from './types.js';

/** The projection of a run with no events yet. */
export function emptyRunMeta(sessionKey: string, runId: string): RunMeta {
  return {
    v: 1,
    runId,
    sessionKey,
    status: 'running',
    startedAt: 0,
    updatedAt: 0,
    lastSeq: -1,
    eventCount: 0,
    stepCount: 0,
    nodeCount: 0,
    nodeIds: [],
    toolCallCount: 0,
    errorCount: 0,
    tokenUsage: { input: 0, output: 0, total: 0 },
  };
}

function num(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

function errorText(payload: Record<string, unknown>): string | undefined {
  const error = payload['error'] ?? payload['message'];
  if (typeof error === 'string') return error;
  if (error !== null && typeof error === 'object' && typeof (error as { message?: unknown }).message === 'string') {
    return (error as { message: string }).message;
  }
  return undefined;
}

/**
 * A stored projection brought up to date with its log, from `events`: the log read from the projection's last counted
 * event on (line `stored.eventCount - 1`). The first must be that event (its seq), or the projection is not this log's
 * and undefined is returned (the caller rebuilds it); the events after it are folded in. One read serves both. A
 * waiting run's projection whose pause has no number (stored before pauses were numbered: InterruptInfo.pause) is
 * rebuilt too, so that every reader names the pause an answer must name.
 */
export async function continuedRunMeta(stored: RunMeta, events: AsyncIterable<{ event: StreamEvent }>): Promise<RunMeta | undefined> {
  if (stored.interrupt !== undefined && stored.interrupt.pause === undefined) return undefined;
  let matched: boolean | undefined;
  let meta = stored;
  for await (const { event } of events) {
    if (matched === undefined) {
      matched = event.seq === stored.lastSeq;
      if (!matched) return undefined;
    } else meta = foldRunMeta(meta, event);
  }
  return matched === true ? meta : undefined;
}

/**
 * Folds one event into a run's projection and returns the new projection (the input is not modified). Events at
 * or below `lastSeq` are already counted and return the input unchanged, so replaying events is harmless.
 *
 * - status: `run.started` → running, `run.completed` → completed, `run.failed` → failed (with `error`), or stopped
 *   when it carries `aborted: true` (its own AbortSignal stopped it: resumable, no error counted),
 *   `run.waiting` → waiting (with `interrupt`);
 * - segments: one per `run.started` (a resume starts a new one), closed by the run's end, failure, abort (no
 *   `outcome`: stopped) or pause, with `endedAt` and `durationMs`. A segment whose writer was killed recorded no end:
 *   the next `run.started` gives it `durationMs` up to its last recorded event, and no `endedAt`;
 *   startedAt: the first segment's start (the first event's until one is seen); durationMs: the segments' sum, a
 *   segment still open counted up to the last event (see {@link runDuration});
 * - forkedFrom: from the start checkpoint of a fork;
 * - stepCount: `node.completed` events; lastStep: the `step` of the last `checkpoint.saved`; nodeCount/nodeIds: distinct nodes started (namespace, else node id);
 * - toolCallCount: `tool.called`; errorCount: each error once: `error` events where they happened (not the copies
 *   reported by enclosing composites as it passes up, marked `propagated`), and a `run.failed` no node reported
 *   (an aborted one is no error);
 * - tokenUsage: sums of `model.completed` payload.usage {inputTokens, outputTokens, totalTokens} (total defaults
 *   to input + output); lastNodeId: the node of the last `node.started`.
 */
export function foldRunMeta(meta: RunMeta, event: StreamEvent): RunMeta {
  return foldRunMetaBatch(meta, [event]);
}

/**
 * Folds several events, in order, with the rules of {@link foldRunMeta}, into one new projection (one copy for the
 * batch instead of one per event); the same result as folding them one by one. The input is not modified.
 */
export function foldRunMetaBatch(meta: RunMeta, events: readonly StreamEvent[]): RunMeta {
  let next: RunMeta | undefined;
  for (const event of events) {
    if (event.seq <= (next ?? meta).lastSeq) continue;
    next ??= { ...meta };
    foldInto(next, event);
  }
  return next ?? meta;
}

/** Folds `event` into `next`, a copy of its own: fields are replaced, never the objects or arrays they hold. */
function foldInto(next: RunMeta, event: StreamEvent): void {
  if (next.eventCount === 0) next.startedAt = event.timestamp;
  const previous = next.updatedAt;
  // An open segment (no end recorded yet) counts up to its last event: O(1) per event, the sum telescopes.
  const open = next.segments?.at(-1);
  if (open !== undefined && open.durationMs === undefined) next.durationMs = (next.durationMs ?? 0) + Math.max(0, event.timestamp - previous);
  next.lastSeq = event.seq;
  next.eventCount++;
  next.updatedAt = event.timestamp;
  switch (event.type) {
    case StreamEventType.RUN_START: {
      // A resume starts a new segment; the run's start stays the first one's. A segment still open had its writer
      // killed: it ran at least up to its last recorded event (no endedAt: its end is not known).
      const segments = [...(next.segments ?? [])];
      if (segments.length === 0) next.startedAt = event.timestamp;
      const cut = segments.at(-1);
      if (cut !== undefined && cut.durationMs === undefined) {
        segments[segments.length - 1] = { ...cut, durationMs: Math.max(0, previous - cut.startedAt) };
        next.durationMs = segments.reduce((sum, seg) => sum + (seg.durationMs ?? 0), 0);
      }
      next.segments = [...segments, { startedAt: event.timestamp }];
      next.status = 'running';
      delete next.endedAt;
      delete next.error;
      delete next.interrupt;
      break;
    }
    case StreamEventType.RUN_END:
    case StreamEventType.RUN_ERROR:
    case StreamEventType.RUN_WAITING: {
      // A run its own AbortSignal stopped is stopped (resumable), not failed: no error, and its segment has no outcome.
      const aborted = event.type === StreamEventType.RUN_ERROR && event.payload['aborted'] === true;
      const outcome = event.type === StreamEventType.RUN_END ? 'completed' : event.type === StreamEventType.RUN_ERROR ? 'failed' : 'waiting';
      next.status = aborted ? 'stopped' : outcome;
      next.endedAt = event.timestamp;
      const segments = [...(next.segments ?? [{ startedAt: next.startedAt }])];
      const last = segments.at(-1)!;
      const closed = { ...last, endedAt: event.timestamp, durationMs: Math.max(0, event.timestamp - last.startedAt) };
      segments[segments.length - 1] = aborted ? closed : { ...closed, outcome };
      next.segments = segments;
      next.durationMs = segments.reduce((sum, seg) => sum + (seg.durationMs ?? 0), 0);
      if (event.type === StreamEventType.RUN_ERROR && !aborted) {
        // A node's error was counted when the node reported it; count only a failure no node reported.
        if (event.payload['reported'] !== true) next.errorCount++;
        next.error = errorText(event.payload) ?? 'run failed';
      }
      if (event.type === StreamEventType.RUN_WAITING) {
        const interrupt = event.payload['interrupt'];
        // The pause is named by its event's seq (see InterruptInfo.pause).
        if (interrupt !== null && typeof interrupt === 'object') next.interrupt = { ...(interrupt as NonNullable<RunMeta['interrupt']>), pause: event.seq };
      }
      break;
    }
    case StreamEventType.CHECKPOINT_SAVED: {
      const step = event.payload['step'];
      if (Number.isSafeInteger(step) && (step as number) >= 0) next.lastStep = step as number;
      const from = event.payload['forkedFrom'];
      if (event.payload['start'] === true && from !== null && typeof from === 'object') next.forkedFrom = from as RunMeta['forkedFrom'];
      break;
    }
    case StreamEventType.NODE_START: {
      const node = event.namespace ?? event.nodeId;
      if (node !== undefined && !next.nodeIds.includes(node)) {
        next.nodeIds = [...next.nodeIds, node];
        next.nodeCount = next.nodeIds.length;
      }
      if (event.nodeId !== undefined) next.lastNodeId = event.nodeId;
      break;
    }
    case StreamEventType.NODE_END:
      next.stepCount++;
      break;
    case StreamEventType.TOOL_CALL:
      next.toolCallCount++;
      break;
    case StreamEventType.ERROR:
      // An error passing up through enclosing composites is the same error: counted where it happened.
      if (event.payload['propagated'] !== true) next.errorCount++;
      break;
    case StreamEventType.MODEL_END: {
      const usage = event.payload['usage'] as Record<string, unknown> | undefined;
      if (usage !== null && typeof usage === 'object') {
        const input = num(usage['inputTokens']);
        const output = num(usage['outputTokens']);
        const total = typeof usage['totalTokens'] === 'number' ? num(usage['totalTokens']) : input + output;
        const sum = next.tokenUsage;
        next.tokenUsage = { input: sum.input + input, output: sum.output + output, total: sum.total + total };
      }
      break;
    }
    default:
      break;
  }
}

/** How long a run ran, as every reader shows it (see {@link runDuration}). */
export interface RunDuration {
  /** The sum of its segments (RunMeta.durationMs). */
  ms: number;
  /**
   * Some segment recorded no end (its writer was killed, or it is still running) and is counted up to its last recorded
   * event: the run ran at least `ms` (shown as "≥ 945.0ms").
   */
  lowerBound: boolean;
}

/**
 * The duration of a run from its projection, or undefined when it has none yet: `durationMs`, and whether it is a lower
 * bound (a segment without `endedAt`: cut short by a killed writer, or still running). The one rule `runs list`,
 * `runs show` and the studio show durations by.
 */
export function runDuration(meta: Pick<RunMeta, 'durationMs' | 'segments'>): RunDuration | undefined {
  if (meta.durationMs === undefined) return undefined;
  return { ms: meta.durationMs, lowerBound: (meta.segments ?? []).some((segment) => segment.endedAt === undefined) };
}
