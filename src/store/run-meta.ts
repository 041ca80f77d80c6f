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
 * Folds one event into a run's projection and returns the new projection (the input is not modified). Events at
 * or below `lastSeq` are already counted and return the input unchanged, so replaying events is harmless.
 *
 * - status: `run.started` → running, `run.completed` → completed, `run.failed` → failed (with `error`);
 * - startedAt: the `run.started` timestamp (the first event's until one is seen); endedAt and durationMs on end;
 * - stepCount: `node.completed` events; nodeCount/nodeIds: distinct nodes started (namespace, else node id);
 * - toolCallCount: `tool.called`; errorCount: `error` and `run.failed` events;
 * - tokenUsage: sums of `model.completed` payload.usage {inputTokens, outputTokens, totalTokens} (total defaults
 *   to input + output); lastNodeId: the node of the last `node.started`.
 */
export function foldRunMeta(meta: RunMeta, event: StreamEvent): RunMeta {
  if (event.seq <= meta.lastSeq) return meta;
  const next: RunMeta = { ...meta, lastSeq: event.seq, eventCount: meta.eventCount + 1, updatedAt: event.timestamp };
  if (meta.eventCount === 0) next.startedAt = event.timestamp;
  switch (event.type) {
    case StreamEventType.RUN_START:
      next.status = 'running';
      next.startedAt = event.timestamp;
      delete next.endedAt;
      delete next.durationMs;
      delete next.error;
      break;
    case StreamEventType.RUN_END:
    case StreamEventType.RUN_ERROR: {
      next.status = event.type === StreamEventType.RUN_END ? 'completed' : 'failed';
      next.endedAt = event.timestamp;
      next.durationMs = Math.max(0, event.timestamp - next.startedAt);
      if (event.type === StreamEventType.RUN_ERROR) {
        next.errorCount = meta.errorCount + 1;
        next.error = errorText(event.payload) ?? 'run failed';
      }
      break;
    }
    case StreamEventType.NODE_START: {
      const node = event.namespace ?? event.nodeId;
      if (node !== undefined && !meta.nodeIds.includes(node)) {
        next.nodeIds = [...meta.nodeIds, node];
        next.nodeCount = next.nodeIds.length;
      }
      if (event.nodeId !== undefined) next.lastNodeId = event.nodeId;
      break;
    }
    case StreamEventType.NODE_END:
      next.stepCount = meta.stepCount + 1;
      break;
    case StreamEventType.TOOL_CALL:
      next.toolCallCount = meta.toolCallCount + 1;
      break;
    case StreamEventType.ERROR:
      next.errorCount = meta.errorCount + 1;
      break;
    case StreamEventType.MODEL_END: {
      const usage = event.payload['usage'] as Record<string, unknown> | undefined;
      if (usage !== null && typeof usage === 'object') {
        const input = num(usage['inputTokens']);
        const output = num(usage['outputTokens']);
        const total = typeof usage['totalTokens'] === 'number' ? num(usage['totalTokens']) : input + output;
        next.tokenUsage = { input: meta.tokenUsage.input + input, output: meta.tokenUsage.output + output, total: meta.tokenUsage.total + total };
      }
      break;
    }
    default:
      break;
  }
  return next;
}
