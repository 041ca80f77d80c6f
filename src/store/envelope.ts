import { StreamEventSchema, StreamEventType, type StreamEvent } from '../events/types.js';
import type { Redactor } from '../redact/index.js';

/**
 * Validation of the event envelope (DESIGN D11) for the event log, on write and on read. It gives exactly the
 * answer of `StreamEventSchema.safeParse`, faster: a hand-written check accepts the common case (a plain envelope
 * with the schema's types, no `redaction`, a plain payload without symbol, `__proto__` or `constructor` keys) and
 * builds the value zod would (schema keys in schema order, unknown keys dropped; the payload is kept as it is,
 * which serializes as zod's copy of it does). Whatever it does not accept goes through zod, which decides and, when the event is invalid, names
 * the field. So every event is validated against the schema, and errors are zod's.
 *
 * For writing, {@link plainEnvelope} runs the same check without building that value: it returns the envelope's JSON
 * text from the fields it checked, the text `JSON.stringify` gives the value parseEvent returns (test/store/
 * event-encode.test.ts holds it to that, byte for byte).
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

/** The fields of a candidate envelope, each read once (as zod reads them). */
type Fields = Record<'v' | 'id' | 'seq' | 'timestamp' | 'runId' | 'sessionKey' | 'type' | 'namespace' | 'nodeId' | 'nodeName' | 'spanId' | 'parentSpanId' | 'payload' | 'redaction' | 'chain', unknown>;

function fieldsOf(value: unknown): Fields | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const { v, id, seq, timestamp, runId, sessionKey, type, namespace, nodeId, nodeName, spanId, parentSpanId, payload, redaction, chain } = value as Record<string, unknown>;
  return { v, id, seq, timestamp, runId, sessionKey, type, namespace, nodeId, nodeName, spanId, parentSpanId, payload, redaction, chain };
}

/** Whether the quick check accepts these fields (see the module comment). */
function acceptable(f: Fields): f is Fields & StreamEvent {
  if (f.v !== 1 || f.redaction !== undefined) return false;
  // A stored line's chain hash is checked by the log's readers, not part of the event: left out, as readers do.
  if (f.chain !== undefined && (typeof f.chain !== 'string' || !CHAIN.test(f.chain))) return false;
  if (typeof f.id !== 'string' || f.id === '' || typeof f.runId !== 'string' || f.runId === '') return false;
  if (!isCount(f.seq) || !isCount(f.timestamp) || !EVENT_TYPES.has(f.type)) return false;
  if (f.sessionKey !== undefined && (typeof f.sessionKey !== 'string' || f.sessionKey === '')) return false;
  if (!isOptionalString(f.namespace) || !isOptionalString(f.nodeId) || !isOptionalString(f.nodeName)) return false;
  return isOptionalString(f.spanId) && isOptionalString(f.parentSpanId) && isSimpleRecord(f.payload);
}

/** The envelope zod would return for `value`, or undefined when the quick check cannot tell (zod decides then). */
function quickEnvelope(value: unknown): StreamEvent | undefined {
  const f = fieldsOf(value);
  if (f === undefined || !acceptable(f)) return undefined;
  // Built in schema order; optional fields only when set (zod keeps a field set to undefined: the same JSON).
  const event = { v: f.v, id: f.id, seq: f.seq, timestamp: f.timestamp, runId: f.runId } as StreamEvent;
  if (f.sessionKey !== undefined) event.sessionKey = f.sessionKey;
  event.type = f.type;
  if (f.namespace !== undefined) event.namespace = f.namespace;
  if (f.nodeId !== undefined) event.nodeId = f.nodeId;
  if (f.nodeName !== undefined) event.nodeName = f.nodeName;
  if (f.spanId !== undefined) event.spanId = f.spanId;
  if (f.parentSpanId !== undefined) event.parentSpanId = f.parentSpanId;
  event.payload = f.payload;
  return event;
}

/**
 * The envelope's free-form text: names and ids written as they are. They are never redacted (they name nodes and
 * spans that checkpoints, projections and readers refer to), so an event whose text there holds a secret is refused.
 */
export const NAME_FIELDS = ['id', 'namespace', 'nodeId', 'nodeName', 'spanId', 'parentSpanId'] as const;

/** One of {@link NAME_FIELDS}. */
export type NameField = (typeof NAME_FIELDS)[number];

/** The first of {@link NAME_FIELDS} of `event` that holds a secret by `redactor`'s catalogue, or undefined. */
export function secretName(event: { readonly [F in NameField]?: string | undefined }, redactor: Redactor): NameField | undefined {
  for (const field of NAME_FIELDS) {
    const text = event[field];
    if (text !== undefined && redactor.holdsSecret(text)) return field;
  }
  return undefined;
}

/** The envelope fields a node's events share, their JSON, and the last redactor that found no secret in them. */
interface Shared {
  readonly namespace: string | undefined;
  readonly nodeId: string | undefined;
  readonly nodeName: string | undefined;
  readonly spanId: string | undefined;
  readonly parentSpanId: string | undefined;
  readonly text: string;
  clearFor: Redactor | undefined;
}

/** An event the quick check accepts, without a chain hash, as {@link plainEnvelope} returns it. */
export interface PlainEnvelope {
  seq: number;
  runId: string;
  sessionKey: string | undefined;
  id: string;
  payload: Record<string, unknown>;
  /**
   * The event's stored JSON up to its payload: `{"v":1,...,"payload":`. Followed by the payload's JSON and `}`, it
   * is byte for byte `JSON.stringify` of what {@link parseEvent} returns for the event.
   */
  head: string;
  /** Its namespace, nodeId, nodeName, spanId and parentSpanId (shared with the events of the same node execution). */
  shared: Shared;
}

const json = JSON.stringify;

/**
 * The envelope fields that a node's events share (namespace, nodeId, nodeName, spanId, parentSpanId) and their
 * JSON, for the last few combinations seen: a step's events come from one node execution, in three or four shapes.
 */
class SharedFields {
  private readonly entries: Shared[] = [];
  private next = 0;
  private static readonly SIZE = 4;

  get(namespace: string | undefined, nodeId: string | undefined, nodeName: string | undefined, spanId: string | undefined, parentSpanId: string | undefined): Shared {
    for (const e of this.entries) {
      if (e.namespace === namespace && e.nodeId === nodeId && e.nodeName === nodeName && e.spanId === spanId && e.parentSpanId === parentSpanId) return e;
    }
    let text = '';
    if (namespace !== undefined) text += `,"namespace":${json(namespace)}`;
    if (nodeId !== undefined) text += `,"nodeId":${json(nodeId)}`;
    if (nodeName !== undefined) text += `,"nodeName":${json(nodeName)}`;
    if (spanId !== undefined) text += `,"spanId":${json(spanId)}`;
    if (parentSpanId !== undefined) text += `,"parentSpanId":${json(parentSpanId)}`;
    const entry: Shared = { namespace, nodeId, nodeName, spanId, parentSpanId, text, clearFor: undefined };
    this.entries[this.next] = entry;
    this.next = (this.next + 1) % SharedFields.SIZE;
    return entry;
  }
}

const shared = new SharedFields();
/** `,"runId":...` and `,"sessionKey":...` of the last run seen. */
let lastRun: { runId: string; sessionKey: string | undefined; text: string } = { runId: '', sessionKey: undefined, text: '' };

/**
 * The fields and the JSON of the envelope of `value` when the quick check accepts it and it carries no chain hash
 * (what the runtime emits); undefined otherwise (then {@link parseEvent} decides). Every field is read once, so
 * the text is what was checked. A payload with a `toJSON` of its own is left to parseEvent (`JSON.stringify` would
 * call it with another key).
 */
export function plainEnvelope(value: unknown): PlainEnvelope | undefined {
  const f = fieldsOf(value);
  if (f === undefined || f.chain !== undefined || !acceptable(f) || f.payload['toJSON'] !== undefined) return undefined;
  // Schema order, optional fields only when set: as JSON.stringify writes quickEnvelope's object. Numbers are safe
  // integers >= 0 (JSON and String agree on them); the type is one of the vocabulary's (nothing to escape).
  if (lastRun.runId !== f.runId || lastRun.sessionKey !== f.sessionKey) {
    lastRun = { runId: f.runId, sessionKey: f.sessionKey, text: `,"runId":${json(f.runId)}${f.sessionKey === undefined ? '' : `,"sessionKey":${json(f.sessionKey)}`}` };
  }
  const names = shared.get(f.namespace, f.nodeId, f.nodeName, f.spanId, f.parentSpanId);
  const head = `{"v":1,"id":${json(f.id)},"seq":${f.seq},"timestamp":${f.timestamp}${lastRun.text},"type":"${f.type}"${names.text},"payload":`;
  return { seq: f.seq, runId: f.runId, sessionKey: f.sessionKey, id: f.id, payload: f.payload, head, shared: names };
}

/**
 * {@link secretName} of an event {@link plainEnvelope} accepted; the fields its node execution shares are checked
 * once per redactor.
 */
export function secretPlainName(plain: PlainEnvelope, redactor: Redactor): NameField | undefined {
  if (plain.shared.clearFor !== redactor) {
    const field = secretName(plain.shared, redactor);
    if (field !== undefined) return field;
    plain.shared.clearFor = redactor;
  }
  return redactor.holdsSecret(plain.id) ? 'id' : undefined;
}
