import { redactorFor, type RedactionOptions, type Redactor } from '../redact/index.js';
import type { EventStreamer } from './streamer.js';
import { StreamEventType, type ErrorSummary, type EventPayloadMap, type StreamEvent } from './types.js';

/**
 * The OpenTelemetry bridge. `@opentelemetry/api` is an optional peer dependency: it is imported only when
 * {@link attachOpenTelemetry} is called, and the types below describe just what the bridge uses, so neither this
 * module nor its declarations need the package to be installed.
 */

/**
 * The version of the OpenTelemetry GenAI semantic conventions the model and tool spans follow. Those conventions
 * are still in development (attribute names have changed between versions: `gen_ai.system` became
 * `gen_ai.provider.name`), so the bridge pins one: the attribute names and values below are those of this version,
 * as `@opentelemetry/semantic-conventions` of the same version publishes them.
 */
export const GENAI_SEMCONV_VERSION = '1.45.0';

/** An attribute value the bridge sets. */
export type OtelAttributeValue = string | number | boolean | string[];

/** Attribute values the bridge sets. */
export type OtelAttributes = Record<string, OtelAttributeValue>;

/** The part of an OpenTelemetry `Span` the bridge uses. */
export interface OtelSpan {
  /** Sets one attribute (redacted before it is set). */
  setAttribute(key: string, value: OtelAttributeValue): unknown;
  /** Adds a timed event to the span (`time` in ms since the epoch, the event's own timestamp). */
  addEvent(name: string, attributes?: OtelAttributes, time?: number): unknown;
  /** Marks the span's outcome (`SpanStatusCode.ERROR` with the error's message for a failed node or run). */
  setStatus(status: { code: number; message?: string }): unknown;
  /** Records a failure's name and (redacted) message as an exception event. */
  recordException(exception: { name: string; message: string }, time?: number): unknown;
  /** Ends the span at `endTime` (ms since the epoch: the closing event's timestamp). */
  end(endTime?: number): void;
}

/** The part of an OpenTelemetry `Tracer` the bridge uses; any real tracer fits. */
export interface OtelTracer {
  /** Starts a span (`startTime`: the opening event's timestamp), as a child of the span in `context` when given. */
  startSpan(name: string, options?: { attributes?: OtelAttributes; startTime?: number; kind?: number }, context?: unknown): OtelSpan;
}

/** The part of the `@opentelemetry/api` module the bridge uses. */
export interface OtelApi {
  trace: { getTracer(name: string): OtelTracer; setSpan(context: unknown, span: OtelSpan): unknown };
  context: { active(): unknown };
  SpanStatusCode: { ERROR: number };
  /** Span kinds (model calls are CLIENT spans); optional so that a minimal API object still fits. */
  SpanKind?: { CLIENT: number; INTERNAL: number };
}

/** Options of {@link attachOpenTelemetry}. */
export interface OpenTelemetryOptions {
  /** The tracer spans are started with. Default: `trace.getTracer('backpackflow')` of the global provider. */
  tracer?: OtelTracer;
  /**
   * Secrets of your own, added to the built-in catalogue, that are redacted from what the bridge puts on spans: pass
   * the `redaction` you pass to `runFlow`, so that spans hide what the event log hides. The built-in catalogue applies
   * without it; redaction cannot be turned off.
   */
  redaction?: RedactionOptions;
}

/**
 * Mirrors the event stream as OpenTelemetry spans: a span per run (`run.started` → `run.completed`/`run.failed`),
 * per node execution (`node.started` → `node.completed`/`error`), per model call (`model.started` →
 * `model.completed`: `chat <model>`, a CLIENT span) and per tool call (`tool.called` → `tool.result`:
 * `execute_tool <tool>`). Model and tool spans carry the GenAI semantic conventions' attributes
 * ({@link GENAI_SEMCONV_VERSION}: `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`,
 * `gen_ai.response.model`, `gen_ai.usage.input_tokens`/`output_tokens`, `gen_ai.tool.name`, `gen_ai.tool.call.id`,
 * ...), so Langfuse, Phoenix and other GenAI-aware backends show them without mapping; every span carries
 * backpackflow's own under `backpackflow.*` (run id, step, namespace, node). Each span is a child of the span of its
 * `parentSpanId` (so nodes inside a composite node nest under it), with retries, routes, quarantines and access
 * denials as span events and errors recorded as exceptions with an error status. Span times are the events'
 * timestamps. A run span starts in the active OpenTelemetry context, so a flow run inside a traced request joins
 * that trace.
 *
 * Secrets are redacted (DESIGN D15) from all the text the bridge takes from events before it reaches a span: span
 * names, string attributes, span event attributes (a retry's `exception.message`, a quarantine's `reason`), the error
 * status message and the recorded exception (its name and message; the stack is never exported). The built-in catalogue
 * always applies; `options.redaction` adds your own patterns and key names, as runFlow's `redaction` does.
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
  return bridgeToOpenTelemetry(streamer, api, options.tracer ?? api.trace.getTracer('backpackflow'), { redaction: options.redaction });
}

/**
 * The bridge itself, given the loaded API (see {@link attachOpenTelemetry}, which also describes the redaction of what
 * reaches a span). Returns the detach function. A direct caller whose runs use `runFlow(..., { redaction })` passes
 * the same `redaction` here; without it only the built-in catalogue is redacted.
 */
export function bridgeToOpenTelemetry(streamer: EventStreamer, api: OtelApi, tracer: OtelTracer, options: Pick<OpenTelemetryOptions, 'redaction'> = {}): () => void {
  const open = new Map<string, { span: OtelSpan; runId: string }>();
  /** The open spans of model calls, in the order they started, by node span and purpose (see MODEL_START). */
  const modelCalls = new Map<string, string[]>();
  let modelCallCount = 0;
  const errorCode = api.SpanStatusCode.ERROR;
  const redactor = redactorFor(options.redaction);
  const text = (value: string): string => bounded(redactor.redactText(value));
  // Text reaches a span only through these two, start and fail, which redact it.
  const setAttribute = (span: OtelSpan, key: string, value: OtelAttributeValue): void => {
    span.setAttribute(key, redactValue(redactor, value));
  };
  const addEvent = (span: OtelSpan, name: string, attributes: OtelAttributes, time: number): void => {
    span.addEvent(name, redactAttributes(redactor, attributes), time);
  };

  /** Per run: its span, and the step in progress (see {@link stepAttribute}). */
  const runs = new Map<string, { spanId?: string; step?: number; checkpoints: boolean }>();
  const withStep = (event: StreamEvent, attributes: OtelAttributes): OtelAttributes => {
    const step = runs.get(event.runId)?.step;
    return step === undefined ? attributes : { ...attributes, 'backpackflow.step': step + 1 };
  };
  /** Starts a span under `key` (default: the event's span id), as a child of `parentKey` (default: its parent span). */
  const start = (event: StreamEvent, name: string, attributes: OtelAttributes, keys: { key?: string; parentKey?: string; kind?: number } = {}): void => {
    const key = keys.key ?? event.spanId;
    if (key === undefined) return;
    const parentKey = keys.parentKey ?? event.parentSpanId;
    const parent = parentKey === undefined ? undefined : open.get(parentKey)?.span;
    const context = parent === undefined ? api.context.active() : api.trace.setSpan(api.context.active(), parent);
    const options = {
      attributes: redactAttributes(redactor, withStep(event, { ...commonAttributes(event), ...attributes })),
      startTime: event.timestamp,
      ...(keys.kind === undefined ? {} : { kind: keys.kind }),
    };
    open.set(key, { span: tracer.startSpan(text(name), options, context), runId: event.runId });
  };
  /** Ends the span under `key` (failed with `error`, and `error.type` set, when there is one). */
  const endKey = (key: string, time: number, error?: ErrorSummary): void => {
    const entry = open.get(key);
    if (entry === undefined) return;
    if (error !== undefined) {
      setAttribute(entry.span, 'error.type', error.name || 'Error');
      fail(entry.span, error, time);
    }
    entry.span.end(time);
    open.delete(key);
  };
  const setAttributeOf = (entry: { span: OtelSpan } | undefined, key: string, value: OtelAttributeValue): void => {
    if (entry !== undefined) setAttribute(entry.span, key, value);
  };
  const end = (event: StreamEvent, error?: ErrorSummary): void => {
    const entry = event.spanId === undefined ? undefined : open.get(event.spanId);
    if (entry === undefined) return;
    if (error !== undefined) fail(entry.span, error, event.timestamp);
    entry.span.end(event.timestamp);
    open.delete(event.spanId!);
  };
  const fail = (span: OtelSpan, error: ErrorSummary | undefined, time: number): void => {
    // A fresh object of the name and message only: whatever else an emitter put in the payload (a stack) stays out.
    const summary = { name: text(String(error?.name ?? 'Error')), message: text(String(error?.message ?? 'unknown error')) };
    span.recordException(summary, time);
    span.setStatus({ code: errorCode, message: `${summary.name}: ${summary.message}` });
  };
  /** Span events go to the event's own span, or else to the span it happened in (routes carry only a parent). */
  const annotate = (event: StreamEvent, name: string, attributes: OtelAttributes): void => {
    const span = open.get(event.spanId ?? event.parentSpanId ?? '')?.span;
    if (span !== undefined) addEvent(span, name, attributes, event.timestamp);
  };

  const unsubscribe = streamer.on('*', (event) => {
    switch (event.type) {
      case StreamEventType.RUN_START: {
        const p = event.payload as Partial<EventPayloadMap['run.started']>;
        const flow = p.flowNamespace || event.namespace || 'flow';
        start(event, `run ${flow}`, { 'backpackflow.flow.namespace': p.flowNamespace ?? '', 'backpackflow.resumed': p.resumed === true });
        // The step in progress is known from the start (0) on, except in a resumed run until its first boundary.
        runs.set(event.runId, { spanId: event.spanId, step: p.resumed === true ? undefined : 0, checkpoints: false });
        return;
      }
      case StreamEventType.RUN_END: {
        const p = event.payload as Partial<EventPayloadMap['run.completed']>;
        const entry = event.spanId === undefined ? undefined : open.get(event.spanId);
        if (typeof p.steps === 'number') setAttributeOf(entry, 'backpackflow.steps', p.steps);
        if (typeof p.action === 'string') setAttributeOf(entry, 'backpackflow.action', p.action);
        endRun(event);
        return;
      }
      case StreamEventType.RUN_WAITING: {
        // A pause: the span ends here, unfailed; a resumed run is a span of its own.
        const entry = event.spanId === undefined ? undefined : open.get(event.spanId);
        setAttributeOf(entry, 'backpackflow.waiting', true);
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
      case StreamEventType.CHECKPOINT_SAVED: {
        const run = runs.get(event.runId);
        const step = (event.payload as { step?: unknown }).step;
        if (run !== undefined && typeof step === 'number') Object.assign(run, { step, checkpoints: true });
        return;
      }
      case StreamEventType.NODE_START:
        start(event, event.namespace || event.nodeName || event.nodeId || 'node', {});
        return;
      case StreamEventType.MODEL_START: {
        const p = event.payload as ModelStartPayload;
        const model = p.modelId ?? p.model ?? 'unknown';
        const attributes: OtelAttributes = {
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': providerName(p.provider, p.model),
          'gen_ai.request.model': model,
          'backpackflow.model.purpose': p.purpose ?? '',
          'backpackflow.model.stream': p.stream === true,
        };
        if (typeof p.temperature === 'number') attributes['gen_ai.request.temperature'] = p.temperature;
        if (typeof p.maxOutputTokens === 'number') attributes['gen_ai.request.max_tokens'] = p.maxOutputTokens;
        // Calls of one node with one purpose may run at once: each gets a span of its own. LlmNode's events carry the
        // call's number, which pairs an end with its start; a node's own model events without one are paired first
        // in, first out, so that none is left open and lost.
        const base = modelKey(event);
        const calls = modelCalls.get(base) ?? [];
        const key = `${base}\u0000${modelCallCount++}${typeof p.call === 'number' ? `\u0001${p.call}` : ''}`;
        calls.push(key);
        modelCalls.set(base, calls);
        start(event, `chat ${model}`, attributes, { key, parentKey: event.spanId, kind: api.SpanKind?.CLIENT });
        return;
      }
      case StreamEventType.MODEL_END: {
        const p = event.payload as ModelEndPayload;
        const base = modelKey(event);
        const calls = modelCalls.get(base);
        const at = calls === undefined ? -1 : callIndex(calls, p.call);
        const key = at < 0 ? undefined : calls![at];
        const entry = key === undefined ? undefined : open.get(key);
        if (entry === undefined) return;
        if (p.retryInMs !== undefined) {
          // A failed attempt that is retried: the call goes on in the same span.
          addEvent(entry.span, 'retry', { attempt: p.attempt ?? 0, delay_ms: p.retryInMs, 'exception.type': p.error?.name ?? 'Error', 'exception.message': p.error?.message ?? '' }, event.timestamp);
          return;
        }
        if (typeof p.responseModel === 'string') setAttribute(entry.span, 'gen_ai.response.model', p.responseModel);
        if (typeof p.responseId === 'string') setAttribute(entry.span, 'gen_ai.response.id', p.responseId);
        if (typeof p.usage?.inputTokens === 'number') setAttribute(entry.span, 'gen_ai.usage.input_tokens', p.usage.inputTokens);
        if (typeof p.usage?.outputTokens === 'number') setAttribute(entry.span, 'gen_ai.usage.output_tokens', p.usage.outputTokens);
        if (typeof p.finishReason === 'string') setAttribute(entry.span, 'gen_ai.response.finish_reasons', [p.finishReason]);
        if (typeof p.attempt === 'number') setAttribute(entry.span, 'backpackflow.attempts', p.attempt);
        endKey(key!, event.timestamp, p.error);
        calls!.splice(at, 1);
        if (calls!.length === 0) modelCalls.delete(base);
        return;
      }
      case StreamEventType.TOOL_CALL: {
        const p = event.payload as ToolPayload;
        const attributes: OtelAttributes = {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': p.toolName ?? '',
          'gen_ai.tool.type': 'function',
        };
        if (typeof p.toolCallId === 'string') attributes['gen_ai.tool.call.id'] = p.toolCallId;
        if (typeof p.mcpServer === 'string') attributes['backpackflow.mcp.server'] = p.mcpServer;
        start(event, `execute_tool ${p.toolName ?? ''}`.trim(), attributes, { key: toolKey(event), parentKey: event.spanId, kind: api.SpanKind?.INTERNAL });
        return;
      }
      case StreamEventType.TOOL_RESULT: {
        const p = event.payload as ToolPayload;
        const entry = open.get(toolKey(event));
        if (typeof p.attempts === 'number') setAttributeOf(entry, 'backpackflow.attempts', p.attempts);
        endKey(toolKey(event), event.timestamp, typeof p.error === 'string' ? { name: 'ToolError', message: p.error } : undefined);
        return;
      }
      case StreamEventType.EXEC_COMPLETE: {
        const p = event.payload as Partial<EventPayloadMap['node.exec_completed']>;
        if (typeof p.attempts === 'number') setAttributeOf(open.get(event.spanId ?? ''), 'backpackflow.attempts', p.attempts);
        return;
      }
      case StreamEventType.NODE_END: {
        const p = event.payload as Partial<EventPayloadMap['node.completed']>;
        if (typeof p.action === 'string') setAttributeOf(open.get(event.spanId ?? ''), 'backpackflow.action', p.action);
        end(event);
        // A run without checkpoints (not durable): a step is one execution of a node of the top-level flow.
        const run = runs.get(event.runId);
        if (run !== undefined && !run.checkpoints && run.step !== undefined && event.parentSpanId === run.spanId) run.step++;
        return;
      }
      case StreamEventType.ERROR: {
        const p = event.payload as Partial<EventPayloadMap['error']>;
        setAttributeOf(open.get(event.spanId ?? ''), 'backpackflow.error.phase', p.phase ?? 'unknown');
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
    runs.delete(event.runId);
    for (const [spanId, entry] of open) {
      if (entry.runId !== event.runId || spanId === event.spanId) continue;
      entry.span.end(event.timestamp);
      open.delete(spanId);
    }
    // Model calls the run's end closed above (never ended by their own event) are no longer waited for.
    for (const [base, calls] of modelCalls) {
      const left = calls.filter((key) => open.has(key));
      if (left.length === 0) modelCalls.delete(base);
      else modelCalls.set(base, left);
    }
    end(event);
  }

  return () => {
    unsubscribe();
    const now = Date.now();
    for (const { span } of open.values()) span.end(now);
    open.clear();
    modelCalls.clear();
    runs.clear();
  };
}

interface ModelStartPayload {
  call?: number;
  model?: string;
  modelId?: string;
  provider?: string;
  purpose?: string;
  stream?: boolean;
  temperature?: number;
  maxOutputTokens?: number;
}

interface ModelEndPayload {
  call?: number;
  attempt?: number;
  finishReason?: string;
  usage?: { inputTokens?: number; outputTokens?: number };
  responseModel?: string;
  responseId?: string;
  error?: ErrorSummary;
  retryInMs?: number;
}

interface ToolPayload {
  toolCallId?: string;
  toolName?: string;
  mcpServer?: string;
  attempts?: number;
  error?: string;
}

/** The key of a model call's span: one call per node span and purpose at a time. */
/**
 * Where in `calls` (the keys of a node's open model spans of one purpose, oldest first) the call numbered `call`
 * is: the span started for it (its key ends with `\u0001` and the number, see MODEL_START), else the oldest one.
 */
function callIndex(calls: readonly string[], call: unknown): number {
  if (typeof call !== 'number') return calls.length > 0 ? 0 : -1;
  const suffix = `\u0001${call}`;
  const at = calls.findIndex((key) => key.endsWith(suffix));
  return at >= 0 ? at : calls.length > 0 ? 0 : -1;
}

function modelKey(event: StreamEvent): string {
  return `model\u0000${event.spanId ?? ''}\u0000${String((event.payload as { purpose?: unknown }).purpose ?? '')}`;
}

function toolKey(event: StreamEvent): string {
  return `tool\u0000${event.spanId ?? ''}\u0000${String((event.payload as { toolCallId?: unknown }).toolCallId ?? '')}`;
}

/** AI SDK provider names (their first dot-separated part) that the conventions name otherwise. */
const PROVIDER_NAMES: Readonly<Record<string, string>> = {
  'amazon-bedrock': 'aws.bedrock',
  azure: 'azure.ai.openai',
  google: 'gcp.gemini',
  'google-vertex': 'gcp.vertex_ai',
  vertex: 'gcp.vertex_ai',
  mistral: 'mistral_ai',
  xai: 'x_ai',
};

/**
 * `gen_ai.provider.name`: from the AI SDK's provider of the model (`openai.chat` → `openai`, `anthropic.messages` →
 * `anthropic`, `mistral.chat` → `mistral_ai`, ...), else the provider of a `"provider:model"` label; names the
 * conventions do not list are kept as they are (the conventions allow other values).
 */
export function providerName(provider: string | undefined, label: string | undefined): string {
  const raw = provider?.split('.')[0] || (label?.includes(':') ? label.slice(0, label.indexOf(':')) : undefined) || 'unknown';
  return PROVIDER_NAMES[raw] ?? raw;
}

/** `value` with its text redacted (the same value when nothing was). */
function redactValue(redactor: Redactor, value: OtelAttributeValue): OtelAttributeValue {
  if (typeof value === 'string') return bounded(redactor.redactText(value));
  if (typeof value === 'number' || typeof value === 'boolean') return value;
  // Anything else a node's payload put here (an object where text was expected): its text, redacted. An attribute is
  // text, a number, a boolean or a list of text; a value of another kind is never handed to a tracer as it is.
  if (!Array.isArray(value)) return bounded(redactor.redactText(textOf(value)));
  const items = value.map((item) => bounded(redactor.redactText(typeof item === 'string' ? item : textOf(item))));
  return items.some((item, i) => item !== value[i]) ? items : value;
}

/** Longest attribute text exported: a node can emit text of any size, and a span's attributes are sent whole. */
export const MAX_ATTRIBUTE_LENGTH = 8192;

/** `text`, cut to {@link MAX_ATTRIBUTE_LENGTH} characters (with `…`) when longer. */
function bounded(text: string): string {
  return text.length <= MAX_ATTRIBUTE_LENGTH ? text : `${text.slice(0, MAX_ATTRIBUTE_LENGTH - 1)}…`;
}

/** The text of a value that is not text (its JSON, or String() of what JSON cannot write). */
function textOf(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** `attributes` with their text redacted (the same object when nothing was). */
function redactAttributes(redactor: Redactor, attributes: OtelAttributes): OtelAttributes {
  let out: OtelAttributes | undefined;
  for (const [key, value] of Object.entries(attributes)) {
    const next = redactValue(redactor, value);
    if (next !== value) (out ??= { ...attributes })[key] = next;
  }
  return out ?? attributes;
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
