import { z } from 'zod';

/**
 * Every event type of the one event vocabulary (DESIGN D11). The value is what is stored in `type` of the
 * envelope and written to the event log.
 */
export const StreamEventType = {
  RUN_START: 'run.started',
  RUN_END: 'run.completed',
  RUN_ERROR: 'run.failed',
  RUN_WAITING: 'run.waiting',
  NODE_START: 'node.started',
  PREP_COMPLETE: 'node.prep_completed',
  EXEC_COMPLETE: 'node.exec_completed',
  NODE_END: 'node.completed',
  NODE_RETRY: 'node.retry',
  NODE_INTERRUPT: 'node.interrupted',
  INTERRUPT_ANSWERED: 'interrupt.answered',
  ERROR: 'error',
  ROUTE: 'route.taken',
  ROUTE_MISSING: 'route.missing',
  BACKPACK_PACK: 'backpack.packed',
  BACKPACK_UNPACK: 'backpack.unpacked',
  BACKPACK_QUARANTINE: 'backpack.quarantined',
  ACCESS_DENIED: 'access.denied',
  CHECKPOINT_SAVED: 'checkpoint.saved',
  MEMORY_WRITTEN: 'memory.written',
  MEMORY_RETRIEVED: 'memory.retrieved',
  TOOL_CALL: 'tool.called',
  TOOL_RESULT: 'tool.result',
  MODEL_START: 'model.started',
  MODEL_DELTA: 'model.delta',
  MODEL_END: 'model.completed',
  CUSTOM: 'custom',
} as const;

/** One of the values of {@link StreamEventType}. */
export type StreamEventTypeValue = (typeof StreamEventType)[keyof typeof StreamEventType];

const eventTypeValues = Object.values(StreamEventType) as [StreamEventTypeValue, ...StreamEventTypeValue[]];

/** zod schema of an event type value. */
export const StreamEventTypeSchema = z.enum(eventTypeValues);

/**
 * The one event envelope (DESIGN D11): what the streamer emits is exactly the line the EventStore writes.
 * `seq` increases by one per event within a run; `timestamp` is milliseconds since the epoch.
 */
export const StreamEventSchema = z.object({
  v: z.literal(1),
  id: z.string().min(1),
  seq: z.number().int().nonnegative(),
  timestamp: z.number().int().nonnegative(),
  runId: z.string().min(1),
  sessionKey: z.string().min(1).optional(),
  type: StreamEventTypeSchema,
  namespace: z.string().optional(),
  nodeId: z.string().optional(),
  nodeName: z.string().optional(),
  spanId: z.string().optional(),
  parentSpanId: z.string().optional(),
  payload: z.record(z.string(), z.unknown()),
  redaction: z.object({ containsSecrets: z.boolean() }).optional(),
  /**
   * Set by the event log on the stored line that ends a batch: the running BLAKE3 chain hash of the log (see
   * store/chain.ts). Never part of an event handed out by a reader, and not accepted on append.
   */
  chain: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
});

/** An event as emitted, stored and read back. */
export type StreamEvent = z.infer<typeof StreamEventSchema>;

/**
 * What a producer hands to an emitter: the envelope without the fields the streamer assigns
 * (`v`, `id`, `seq`, `timestamp`, `runId` default to the streamer's, `sessionKey`).
 */
export interface EventInput {
  type: StreamEventTypeValue;
  payload?: Record<string, unknown>;
  namespace?: string;
  nodeId?: string;
  nodeName?: string;
  spanId?: string;
  parentSpanId?: string;
  runId?: string;
}

/** Anything that accepts events: the EventStreamer, or a test double. The Backpack emits through this. */
export interface EventSink {
  /** Takes one event; the streamer fills in its id, seq and timestamp. */
  emit(event: EventInput): void;
}

/** A pause for a person (DESIGN D16): which node asked, its how-many-th question in this execution, and what. */
export interface InterruptInfo {
  nodeId: string;
  namespace: string;
  /** 0 for the node's first interrupt in an execution, 1 for its second, ... */
  index: number;
  /** Data for the person: a question, a draft to approve. */
  payload: unknown;
  /** JSON Schema of the answer, when the node gave a schema. */
  schema?: Record<string, unknown>;
  /**
   * Which pause this is: the seq of the `run.waiting` event that recorded it. An answer that names it
   * (`ResumeRunOptions.answering`, `runs resume --answering`, the Studio's form) answers this pause and no later one.
   * Set where the pause is read from the log (listRuns, `runs show`, the Studio) and in runFlow's result; absent in
   * the event itself (it is its seq).
   */
  pause?: number;
}

/** The name and message of an error, as event payloads carry it (never the stack or the error object). */
export interface ErrorSummary {
  name: string;
  message: string;
}

/**
 * Payloads of the events the flow layer and the Backpack emit, by event type. Every node event also carries
 * `nodeId`, `nodeName` (class name), `namespace`, `spanId` (one per node execution) and `parentSpanId` (the span of
 * the enclosing composite node or of the flow run). A run's span is the root of its tree: the `run.started` event
 * carries a `spanId` that the top-level nodes use as their `parentSpanId`.
 *
 * | type | payload |
 * |---|---|
 * | `run.started` | `{ flowNamespace, entryNodeId, resumed?, forkedFrom? }` |
 * | `run.completed` | `{ durationMs, steps, action }` |
 * | `run.failed` | `{ durationMs, steps?, error: { name, message }, reported?, aborted? }` (`reported`: a node's `error` event already reported it; `aborted`: the run's own AbortSignal stopped it, so the run is `stopped` (resumable), not failed, and no error is counted) |
 * | `run.waiting` | `{ durationMs, steps, interrupt: { nodeId, namespace, index, payload, schema? } }` (paused for a person) |
 * | `node.interrupted` | `{ index, payload, schema?, refused? }` (`schema`: the answer's JSON Schema; `refused`: the recorded answer was refused by the node's own schema, `[{ path, message }]` with JSON pointers, and the run waits again) |
 * | `interrupt.answered` | `{ nodeId, namespace, index, answer, secret? }` (written by `resumeRun` before the node runs again; `secret`: the parts the answer's schema marks secret, `writeOnly` or `format: 'password'`, are blanked) |
 * | `node.started` | `{}` |
 * | `node.prep_completed` | `{ durationMs }` |
 * | `node.exec_completed` | `{ durationMs, attempts }` |
 * | `node.completed` | `{ action, durationMs }` |
 * | `node.retry` | `{ attempt, maxRetries, delayMs, error: { name, message } }` (attempt: the one that failed; maxRetries: total attempts) |
 * | `error` | `{ phase: 'prep' \| 'exec' \| 'post' \| 'contract', error: { name, message }, propagated? }` (`propagated`: reported first by a node inside this one) |
 * | `route.taken` | `{ action, from, to, mappings? }` (node ids; `mappings`: the keys the route copied, source → target) |
 * | `route.missing` | `{ action, from, available: string[] }` |
 * | `backpack.packed` | `{ key, version, valueSummary, tags? }` |
 * | `backpack.unpacked` | `{ key, found, sourceNodeId?, sourceNamespace? }` |
 * | `backpack.quarantined` | `{ key, reason, hidden? }` (`hidden`: the quarantining node may not read the item; its own event view drops the event) |
 * | `access.denied` | `{ key, operation: 'read' \| 'write', rule }` |
 * | `checkpoint.saved` | {@link CheckpointSavedPayload} (the durable runtime, at each step boundary) |
 *
 * Payloads never hold full backpack values, only short summaries (a checkpoint's delta is the state the run
 * changed, redacted like every payload). Types not listed here (memory, tool, model, custom) carry payloads defined
 * by the module that emits them.
 */
export interface EventPayloadMap {
  'run.started': { flowNamespace: string; entryNodeId: string | null; resumed?: boolean; forkedFrom?: { runId: string; step: number } };
  'run.completed': { durationMs: number; steps: number; action: string };
  'run.failed': { durationMs: number; steps?: number; error: ErrorSummary; reported?: boolean; aborted?: boolean };
  'run.waiting': { durationMs: number; steps: number; interrupt: InterruptInfo };
  'node.interrupted': { index: number; payload: unknown; schema?: Record<string, unknown>; refused?: { path: string; message: string }[] };
  'interrupt.answered': { nodeId: string; namespace: string; index: number; answer: unknown; secret?: true };
  'node.started': Record<string, never>;
  'node.prep_completed': { durationMs: number };
  'node.exec_completed': { durationMs: number; attempts: number };
  'node.completed': { action: string; durationMs: number };
  'node.retry': { attempt: number; maxRetries: number; delayMs: number; error: ErrorSummary };
  error: { phase: 'prep' | 'exec' | 'post' | 'contract'; error: ErrorSummary; propagated?: boolean };
  'route.taken': { action: string; from: string; to: string; mappings?: Record<string, string> };
  'route.missing': { action: string; from: string; available: string[] };
  'backpack.packed': { key: string; version: number; valueSummary: string; tags?: string[] };
  'backpack.unpacked': { key: string; found: boolean; sourceNodeId?: string; sourceNamespace?: string };
  'backpack.quarantined': { key: string; reason: string; hidden?: true };
  'access.denied': { key: string; operation: 'read' | 'write'; rule: string };
  'checkpoint.saved': CheckpointSavedPayload;
}

/**
 * Payload of a `checkpoint.saved` event: the durable runtime records one at every step boundary, as the last event
 * of the step's batch, and one at the start of a run (`start: true`, whose delta is the whole state). `Delta` is
 * the runtime's state delta (`StateDelta` in runtime/state-tracker.ts); this layer does not look inside it.
 */
export type CheckpointSavedPayload<Delta = unknown> = {
  step: number;
  /** Node ids from the outermost flow inwards where the run continues; empty once the flow ended. */
  position: string[];
  /** What changed in the Backpack since the previous checkpoint (absent when nothing did). */
  delta?: Delta;
  /** Whether a keyframe (the whole state, `checkpoint/<step>.json`) is written for this step. */
  keyframe: boolean;
  /** The start of the run's record: `delta` is the whole state. */
  start?: true;
  /** For a fork's start: the run and step it was forked from. */
  forkedFrom?: { runId: string; step: number };
  /**
   * In the checkpoint of the flow's last step (`position` empty): the action it ended with (`'default'` for none), as
   * `run.completed` records it. A resume of a run whose writer died before `run.completed` records the run's end from it.
   */
  action?: string;
  /**
   * In a start record: the BLAKE3 (hex) of the text of each document stored with the run before it started (`flow`:
   * its flow config, `recipe`: how its flow is built), so that readers tell a document changed since.
   */
  documents?: { flow?: string; recipe?: string };
};

/** An event whose `type` is `T`, with the payload that type carries (see {@link EventPayloadMap}). */
export type EventOf<T extends keyof EventPayloadMap> = Omit<StreamEvent, 'type' | 'payload'> & { type: T; payload: EventPayloadMap[T] };

/**
 * Whether `event` is of type `type`, narrowing its payload to what that type carries. The payload is not checked:
 * the events of this library carry these payloads; a reader that must survive a hand-made log checks the fields it
 * relies on.
 */
export function isEventOf<T extends keyof EventPayloadMap>(event: StreamEvent, type: T): event is StreamEvent & EventOf<T> {
  return event.type === type;
}
