import type { EventStreamer } from './streamer.js';
import { StreamEventType, type ErrorSummary, type EventPayloadMap, type StreamEvent } from './types.js';

/**
 * The OpenTelemetry bridge. `@opentelemetry/api` is an optional peer dependency: it is imported only when
 * {@link attachOpenTelemetry} is called, and the types below describe just what the bridge uses, so neither this
 * module nor its declarations need the package to be installed.
 */

/** Attribute values the bridge sets. */
export type OtelAttributes = Record<string, string | number | boolean>;

/** The part of an OpenTelemetry `Span` the bridge uses. */
export interface OtelSpan {
  setAttribute(key: string, value: string | number | boolean): unknown;
  addEvent(name: string, attributes?: OtelAttributes, time?: number): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  recordException(exception: { name: string; message: string }, time?: number): unknown;
  end(endTime?: number): void;
}

/** The part of an OpenTelemetry `Tracer` the bridge uses; any real tracer fits. */
export interface OtelTracer {
  startSpan(name: string, options?: { attributes?: OtelAttributes; startTime?: number }, context?: unknown): OtelSpan;
}

/** The part of the `@opentelemetry/api` module the bridge uses. */
export interface OtelApi {
  trace: { getTracer(name: string): OtelTracer; setSpan(context: unknown, span: OtelSpan): unknown };
  context: { active(): unknown };
  SpanStatusCode: { ERROR: number };
}

/** Options of {@link attachOpenTelemetry}. */
export interface OpenTelemetryOptions {
  /** The tracer spans are started with. Default: `trace.getTracer('backpackflow')` of the global provider. */
  tracer?: OtelTracer;
}

/**
 * Mirrors the event stream as OpenTelemetry spans: a span per run (`run.started` → `run.completed`/`run.failed`)
 * and per node execution (`node.started` → `node.completed`/`error`), each a child of the span of its
 * `parentSpanId` (so nodes inside a composite node nest under it), with retries, routes, quarantines and access
 * denials as span events and errors recorded as exceptions with an error status. Span times are the events'
 * timestamps. A run span starts in the active OpenTelemetry context, so a flow run inside a traced request joins
 * that trace.
 *
 * Loads `@opentelemetry/api` on first use and rejects with an error naming the package when it is missing.
 * Resolves to a function that detaches the bridge and ends the spans still open.
 */
export async function attachOpenTelemetry(streamer: EventStreamer, options: OpenTelemetryOptions = {}): Promise<() => void> {
  let api: OtelApi;
  try {
    api = (await import('@opentelemetry/api')) as unknown as OtelApi;
  } catch (cause) {
    throw new Error(
      'attachOpenTelemetry: could not load @opentelemetry/api, an optional peer dependency; install it with `npm install @opentelemetry/api`',
      { cause },
    );
  }
  return bridgeToOpenTelemetry(streamer, api, options.tracer ?? api.trace.getTracer('backpackflow'));
}

/** The bridge itself, given the loaded API (see {@link attachOpenTelemetry}). Returns the detach function. */
export function bridgeToOpenTelemetry(streamer: EventStreamer, api: OtelApi, tracer: OtelTracer): () => void {
  const open = new Map<string, { span: OtelSpan; runId: string }>();
  const errorCode = api.SpanStatusCode.ERROR;

  const start = (event: StreamEvent, name: string, attributes: OtelAttributes): void => {
    if (event.spanId === undefined) return;
    const parent = event.parentSpanId === undefined ? undefined : open.get(event.parentSpanId)?.span;
    const context = parent === undefined ? api.context.active() : api.trace.setSpan(api.context.active(), parent);
    const span = tracer.startSpan(name, { attributes: { ...commonAttributes(event), ...attributes }, startTime: event.timestamp }, context);
    open.set(event.spanId, { span, runId: event.runId });
  };
  const end = (event: StreamEvent, error?: ErrorSummary): void => {
    const entry = event.spanId === undefined ? undefined : open.get(event.spanId);
    if (entry === undefined) return;
    if (error !== undefined) fail(entry.span, error, event.timestamp);
    entry.span.end(event.timestamp);
    open.delete(event.spanId!);
  };
  const fail = (span: OtelSpan, error: ErrorSummary | undefined, time: number): void => {
    const summary = error ?? { name: 'Error', message: 'unknown error' };
    span.recordException(summary, time);
    span.setStatus({ code: errorCode, message: `${summary.name}: ${summary.message}` });
  };
  /** Span events go to the event's own span, or else to the span it happened in (routes carry only a parent). */
  const annotate = (event: StreamEvent, name: string, attributes: OtelAttributes): void => {
    const id = event.spanId ?? event.parentSpanId;
    open.get(id ?? '')?.span.addEvent(name, attributes, event.timestamp);
  };

  const unsubscribe = streamer.on('*', (event) => {
    switch (event.type) {
      case StreamEventType.RUN_START: {
        const p = event.payload as Partial<EventPayloadMap['run.started']>;
        const flow = p.flowNamespace || event.namespace || 'flow';
        start(event, `run ${flow}`, { 'backpackflow.flow.namespace': p.flowNamespace ?? '', 'backpackflow.resumed': p.resumed === true });
        return;
      }
      case StreamEventType.RUN_END: {
        const p = event.payload as Partial<EventPayloadMap['run.completed']>;
        const entry = event.spanId === undefined ? undefined : open.get(event.spanId);
        if (typeof p.steps === 'number') entry?.span.setAttribute('backpackflow.steps', p.steps);
        if (typeof p.action === 'string') entry?.span.setAttribute('backpackflow.action', p.action);
        endRun(event);
        return;
      }
      case StreamEventType.RUN_WAITING: {
        // A pause: the span ends here, unfailed; a resumed run is a span of its own.
        const entry = event.spanId === undefined ? undefined : open.get(event.spanId);
        entry?.span.setAttribute('backpackflow.waiting', true);
        endRun(event);
        return;
      }
      case StreamEventType.RUN_ERROR: {
        const p = event.payload as Partial<EventPayloadMap['run.failed']>;
        const entry = event.spanId === undefined ? undefined : open.get(event.spanId);
        if (entry !== undefined) fail(entry.span, p.error, event.timestamp);
        endRun(event);
        return;
      }
      case StreamEventType.NODE_START:
        start(event, event.namespace || event.nodeName || event.nodeId || 'node', {});
        return;
      case StreamEventType.EXEC_COMPLETE: {
        const p = event.payload as Partial<EventPayloadMap['node.exec_completed']>;
        if (typeof p.attempts === 'number') open.get(event.spanId ?? '')?.span.setAttribute('backpackflow.attempts', p.attempts);
        return;
      }
      case StreamEventType.NODE_END: {
        const p = event.payload as Partial<EventPayloadMap['node.completed']>;
        if (typeof p.action === 'string') open.get(event.spanId ?? '')?.span.setAttribute('backpackflow.action', p.action);
        end(event);
        return;
      }
      case StreamEventType.ERROR: {
        const p = event.payload as Partial<EventPayloadMap['error']>;
        open.get(event.spanId ?? '')?.span.setAttribute('backpackflow.error.phase', p.phase ?? 'unknown');
        end(event, p.error ?? { name: 'Error', message: 'unknown error' });
        return;
      }
      case StreamEventType.NODE_RETRY: {
        const p = event.payload as Partial<EventPayloadMap['node.retry']>;
        annotate(event, 'retry', {
          attempt: p.attempt ?? 0,
          max_attempts: p.maxRetries ?? 0,
          delay_ms: p.delayMs ?? 0,
          'exception.type': p.error?.name ?? 'Error',
          'exception.message': p.error?.message ?? '',
        });
        return;
      }
      case StreamEventType.ROUTE: {
        const p = event.payload as Partial<EventPayloadMap['route.taken']>;
        annotate(event, 'route', { action: p.action ?? '', from: p.from ?? '', to: p.to ?? '' });
        return;
      }
      case StreamEventType.ROUTE_MISSING: {
        const p = event.payload as Partial<EventPayloadMap['route.missing']>;
        annotate(event, 'route.missing', { action: p.action ?? '', from: p.from ?? '', available: (p.available ?? []).join(',') });
        return;
      }
      case StreamEventType.BACKPACK_QUARANTINE: {
        const p = event.payload as Partial<EventPayloadMap['backpack.quarantined']>;
        annotate(event, 'backpack.quarantined', { key: p.key ?? '', reason: p.reason ?? '' });
        return;
      }
      case StreamEventType.ACCESS_DENIED: {
        const p = event.payload as Partial<EventPayloadMap['access.denied']>;
        annotate(event, 'access.denied', { key: p.key ?? '', operation: p.operation ?? '', rule: p.rule ?? '' });
        return;
      }
      default:
        return;
    }
  });

  /** Ends the run's span and any span of the run left open (a node whose end was never reported). */
  function endRun(event: StreamEvent): void {
    for (const [spanId, entry] of open) {
      if (entry.runId !== event.runId || spanId === event.spanId) continue;
      entry.span.end(event.timestamp);
      open.delete(spanId);
    }
    end(event);
  }

  return () => {
    unsubscribe();
    const now = Date.now();
    for (const { span } of open.values()) span.end(now);
    open.clear();
  };
}

function commonAttributes(event: StreamEvent): OtelAttributes {
  const attributes: OtelAttributes = { 'backpackflow.run_id': event.runId };
  if (event.sessionKey !== undefined) attributes['backpackflow.session_key'] = event.sessionKey;
  if (event.spanId !== undefined) attributes['backpackflow.span_id'] = event.spanId;
  if (event.namespace !== undefined) attributes['backpackflow.namespace'] = event.namespace;
  if (event.nodeId !== undefined) attributes['backpackflow.node.id'] = event.nodeId;
  if (event.nodeName !== undefined) attributes['backpackflow.node.name'] = event.nodeName;
  return attributes;
}
