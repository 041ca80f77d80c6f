/**
 * The stored line of an event is byte for byte what the encoder before the quick path wrote (issue 15): the event
 * validated by the zod schema, checked against its run, its payload redacted, and the whole stored event given to
 * `JSON.stringify`. The reference below is that encoder, with zod in place of the quick envelope check (which gives
 * zod's answer, see envelope.test.ts), so that neither the quick check nor the quick encoder is its own judge.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EventStreamer, StreamEventSchema, StreamEventType, type StreamEvent } from '../../src/events/index.js';
import { Redactor, redactorFor } from '../../src/redact/index.js';
import { encodeEvent, type EncodeTarget } from '../../src/store/event-encode.js';
import { trials } from '../support/soak.js';

/** The line the encoder before issue 15 stored for `event`, or `'refused'` where it threw. */
function referenceLine(target: EncodeTarget, event: unknown, previousSeq: number | undefined): string | 'refused' {
  const parsed = StreamEventSchema.safeParse(event);
  if (!parsed.success) return 'refused';
  let valid = parsed.data;
  if (valid.chain !== undefined) {
    const { chain: _chain, ...rest } = valid;
    valid = rest;
  }
  if (valid.runId !== target.runId) return 'refused';
  if (valid.sessionKey !== undefined && valid.sessionKey !== target.sessionKey) return 'refused';
  if (previousSeq !== undefined && valid.seq <= previousSeq) return 'refused';
  // Names and ids are refused, never redacted, when they hold secret-looking text.
  for (const field of ['id', 'namespace', 'nodeId', 'nodeName', 'spanId', 'parentSpanId'] as const) {
    const name = valid[field];
    if (typeof name === 'string' && target.redactor.redactText(name) !== name) return 'refused';
  }
  const { value: payload, redacted } = target.redactor.redact(valid.payload, 'payload');
  const stored: StreamEvent = redacted ? { ...valid, payload, redaction: { containsSecrets: true } } : valid;
  return JSON.stringify(stored);
}

function encoded(target: EncodeTarget, event: unknown, previousSeq: number | undefined): string | 'refused' {
  try {
    const { line } = encodeEvent(target, event as StreamEvent, previousSeq, '');
    return typeof line === 'string' ? line : Buffer.concat(line).toString('utf8');
  } catch {
    return 'refused';
  }
}

/** Secrets of several formats of the catalogue (see test/redact/matrix.test.ts). */
const SECRETS = [
  'sk-proj-Q7vLx2Rk9TmWp4ZsN8bYc3HjD6fGa1Ke',
  'Bearer Zt5Yq8Rw2Lk7Mn4Bx9Vc',
  'ghp_R8kL2mQ9xZ4vT7wN1bY5cH3jD6fG0aKsPeUi',
  'AKIAQ3X7R2L9Z4T8W5N1',
  'postgres://admin:Pg5ecretW0rdQx7@db.internal:5432/app',
];
const TYPES = Object.values(StreamEventType);

/** Text as users and nodes produce it: plain words, ids, JSON's special characters, unicode, and secrets. */
const text = fc.oneof(
  fc.constantFrom('', 'n', 'bench.n', 'Count', 'sp-1', 'again', 'default', 'password', 'apiKey', 'key', 'value', 'durationMs', '__proto__', 'toJSON'),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc.constantFrom('quote " and \\ backslash', 'line\nbreak\ttab\u0000nul', 'lone \ud800 surrogate', 'emoji 🎒', 'ümlaut'),
  fc.constantFrom(...SECRETS),
  fc.constantFrom(...SECRETS).map((s) => `the config says ${s} and more`),
);

const leaf = fc.oneof(text, fc.integer(), fc.double(), fc.boolean(), fc.constant(null));
/** Payload values: JSON-like trees, with secret-named keys, entries naming their key, and pairs lists. */
const value = fc.letrec<{ tree: unknown }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.array(tie('tree'), { maxLength: 4 }),
    fc.dictionary(text, tie('tree'), { maxKeys: 4 }),
    fc.tuple(text, tie('tree')).map((pair) => [pair]),
    fc.record({ key: text, valueSummary: text, version: fc.nat() }),
  ),
})).tree;
const payload = fc.dictionary(text, value, { maxKeys: 5 });

/** The payloads of the lifecycle events as the flow layer makes them (see EventPayloadMap), with user text in them. */
const lifecyclePayload = fc.oneof(
  fc.constant({}),
  fc.record({ durationMs: fc.double({ min: 0, max: 1e6, noNaN: true }) }),
  fc.record({ durationMs: fc.double({ min: 0, max: 1e6, noNaN: true }), attempts: fc.nat(5) }),
  fc.record({ action: text, durationMs: fc.double({ min: 0, max: 1e6, noNaN: true }) }),
  fc.record({ action: text, from: text, to: text }),
  fc.record({ key: text, found: fc.boolean() }),
  fc.record({ key: text, found: fc.constant(true), sourceNodeId: text, sourceNamespace: text }),
  fc.record({ key: text, version: fc.nat(), valueSummary: text }, { requiredKeys: ['key', 'version', 'valueSummary'] }),
  fc.record({ phase: fc.constantFrom('prep', 'exec', 'post'), error: fc.record({ name: text, message: text }) }),
);

const optional = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });

/** Envelopes: mostly valid ones of run `r`, sometimes with a wrong or odd field. */
const event = fc
  .record({
    v: fc.oneof({ weight: 9, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.constantFrom(2, '1', undefined) }),
    id: fc.oneof({ weight: 5, arbitrary: fc.constantFrom('ev-24b9dd00901d-a', 'ev-1') }, { weight: 2, arbitrary: text }),
    seq: fc.oneof({ weight: 9, arbitrary: fc.nat(1000) }, { weight: 1, arbitrary: fc.constantFrom(-1, 1.5, 2 ** 53, Number.NaN) }),
    timestamp: fc.oneof({ weight: 9, arbitrary: fc.nat() }, { weight: 1, arbitrary: fc.constantFrom(-0, -1, 0.5) }),
    runId: fc.oneof({ weight: 9, arbitrary: fc.constant('r') }, { weight: 1, arbitrary: fc.constantFrom('other', '') }),
    sessionKey: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 4, arbitrary: fc.constant('s') }, { weight: 1, arbitrary: fc.constantFrom('t', '') }),
    type: fc.oneof({ weight: 19, arbitrary: fc.constantFrom(...TYPES) }, { weight: 1, arbitrary: fc.constant('no.such.type') }),
    // Mostly from a few values, as a step's events share them: combinations that differ in one field only.
    namespace: optional(fc.oneof({ weight: 4, arbitrary: fc.constantFrom('bench.n', 'bench') }, { weight: 1, arbitrary: text })),
    nodeId: optional(fc.oneof({ weight: 4, arbitrary: fc.constant('n') }, { weight: 1, arbitrary: text })),
    nodeName: optional(fc.oneof({ weight: 4, arbitrary: fc.constant('Count') }, { weight: 1, arbitrary: text })),
    spanId: optional(fc.oneof({ weight: 4, arbitrary: fc.constantFrom('sp-1', 'sp-2') }, { weight: 1, arbitrary: text })),
    parentSpanId: optional(fc.oneof({ weight: 4, arbitrary: fc.constantFrom('sp-0', 'sp-1') }, { weight: 1, arbitrary: text })),
    payload: fc.oneof(lifecyclePayload, payload, fc.record({ step: fc.nat(), position: fc.array(text, { maxLength: 2 }), keyframe: fc.boolean(), delta: fc.option(value) })),
    extra: optional(fc.oneof(fc.record({ chain: fc.constantFrom('a'.repeat(64), 'not hex') }), fc.record({ redaction: fc.constant({ containsSecrets: false }) }), fc.record({ other: text }))),
  })
  .map(({ extra, ...fields }) => ({ ...fields, ...(extra ?? {}) }));

const targets: [string, EncodeTarget][] = [
  ['the built-in catalogue', { sessionKey: 's', runId: 'r', redactor: redactorFor(), where: 'log' }],
  [
    // Options that reach the fixed names of the envelope and the lifecycle payloads.
    "a user's patterns and secret key names",
    { sessionKey: 's', runId: 'r', redactor: new Redactor({ patterns: [/durationMs|again/], secretKeys: ['action', 'found', 'n'] }), where: 'log' },
  ],
];

describe('encodeEvent: stored lines byte for byte as before', () => {
  it.each(targets)('writes what the reference encoder writes, and refuses what it refused (%s)', (_name, target) => {
    fc.assert(
      fc.property(fc.array(event, { minLength: 1, maxLength: 8 }), fc.option(fc.nat(1000), { nil: undefined }), (events, previousSeq) => {
        // Several events in a row: the envelope texts the encoder keeps between events must never leak into the next.
        for (const e of events) expect(encoded(target, e, previousSeq)).toBe(referenceLine(target, e, previousSeq));
      }),
      { numRuns: trials(400, 20_000) },
    );
  });

  it('writes the events a streamer stamps (with fields left undefined) as before, secrets in payloads redacted, and refuses only names that hold one', () => {
    const target = targets[0]![1];
    const streamer = new EventStreamer({ runId: 'r', sessionKey: 's' });
    fc.assert(
      fc.property(fc.constantFrom(...TYPES), optional(text), optional(text), lifecyclePayload, (type, nodeId, namespace, body) => {
        const e = streamer.emit({ type, nodeId, namespace, nodeName: 'Count', spanId: 'sp-1', payload: body as Record<string, unknown> });
        const line = encoded(target, e, undefined);
        expect(line).toBe(referenceLine(target, e, undefined));
        const secretName = [nodeId, namespace].some((name) => name !== undefined && target.redactor.redactText(name) !== name);
        expect(line === 'refused').toBe(secretName);
      }),
      { numRuns: trials(300, 10_000) },
    );
  });

  it('gives a payload with a toJSON of its own the key JSON.stringify gave it before', () => {
    const target = targets[0]![1];
    const keys: string[] = [];
    const e = { v: 1, id: 'e', seq: 1, timestamp: 1, runId: 'r', type: 'custom', payload: { toJSON: (key: string) => (keys.push(key), { key }) } };
    expect(encoded(target, e, undefined)).toBe(referenceLine(target, e, undefined));
    // Redaction reads the payload as JSON.stringify writes it too: toJSON is called with the same key each time.
    expect(keys).toEqual(['payload', 'payload', 'payload', 'payload']);
  });

  it('writes a large payload in pieces that join to the same text', () => {
    const target = targets[0]![1];
    const big = { v: 1, id: 'e', seq: 1, timestamp: 1, runId: 'r', type: 'custom', payload: { list: Array.from({ length: 30_000 }, (_, i) => `item ${i}`) } };
    const { line } = encodeEvent(target, big as StreamEvent, undefined, '');
    expect(Array.isArray(line)).toBe(true);
    expect(encoded(target, big, undefined)).toBe(referenceLine(target, big, undefined));
  });
});
