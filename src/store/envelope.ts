import { StreamEventSchema, StreamEventType, type StreamEvent } from '../events/types.js';

/**
 * Validation of the event envelope (DESIGN D11) for the event log, on write and on read. It gives exactly the
 * answer of `StreamEventSchema.safeParse`, faster: a hand-written check accepts the common case (a plain envelope
 * with the schema's types, no `redaction`, a plain payload without symbol, `__proto__` or `constructor` keys) and
 * builds the value zod would (schema keys in schema order, unknown keys dropped; the payload is kept as it is,
 * which serializes as zod's copy of it does). Whatever it does not accept goes through zod, which decides and, when the event is invalid, names
 * the field. So every event is validated against the schema, and errors are zod's.
 */

const EVENT_TYPES: ReadonlySet<unknown> = new Set(Object.values(StreamEventType));
const CHAIN = /^[0-9a-f]{64}$/;

/** Result of {@link parseEvent}: the same shape as zod's `safeParse`. */
export type ParsedEvent = ReturnType<typeof StreamEventSchema.safeParse>;

/** Validates `value` against the event envelope; see the module comment. */
export function parseEvent(value: unknown): ParsedEvent {
  const data = quickEnvelope(value);
  return data ? { success: true, data } : StreamEventSchema.safeParse(value);
}

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function isOptionalString(value: unknown): value is string | undefined {
  return value === undefined || typeof value === 'string';
}

/** A payload zod takes as it is: a plain object whose keys zod copies unchanged (no symbol, `__proto__` or `constructor` key). */
function isSimpleRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return false;
  return !Object.hasOwn(value, '__proto__') && !Object.hasOwn(value, 'constructor') && Object.getOwnPropertySymbols(value).length === 0;
}

/** The envelope zod would return for `value`, or undefined when the quick check cannot tell (zod decides then). */
function quickEnvelope(value: unknown): StreamEvent | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  // Each field is read once, as zod reads it.
  const { v, id, seq, timestamp, runId, sessionKey, type, namespace, nodeId, nodeName, spanId, parentSpanId, payload, redaction, chain } = value as Record<
    string,
    unknown
  >;
  if (v !== 1 || redaction !== undefined) return undefined;
  // A stored line's chain hash is checked by the log's readers, not part of the event: left out, as readers do.
  if (chain !== undefined && (typeof chain !== 'string' || !CHAIN.test(chain))) return undefined;
  if (typeof id !== 'string' || id === '' || typeof runId !== 'string' || runId === '') return undefined;
  if (!isCount(seq) || !isCount(timestamp) || !EVENT_TYPES.has(type)) return undefined;
  if (sessionKey !== undefined && (typeof sessionKey !== 'string' || sessionKey === '')) return undefined;
  if (!isOptionalString(namespace) || !isOptionalString(nodeId) || !isOptionalString(nodeName)) return undefined;
  if (!isOptionalString(spanId) || !isOptionalString(parentSpanId) || !isSimpleRecord(payload)) return undefined;
  // Built in schema order; optional fields only when set (zod keeps a field set to undefined: the same JSON).
  const event = { v, id, seq, timestamp, runId } as StreamEvent;
  if (sessionKey !== undefined) event.sessionKey = sessionKey;
  event.type = type as StreamEvent['type'];
  if (namespace !== undefined) event.namespace = namespace;
  if (nodeId !== undefined) event.nodeId = nodeId;
  if (nodeName !== undefined) event.nodeName = nodeName;
  if (spanId !== undefined) event.spanId = spanId;
  if (parentSpanId !== undefined) event.parentSpanId = parentSpanId;
  event.payload = payload;
  return event;
}
