import { describe, expect, it } from 'vitest';
import { EventStreamer } from '../../src/events/index.js';
import { StreamEventSchema } from '../../src/events/types.js';
import { parseEvent } from '../../src/store/envelope.js';
import { makeEvent } from './helpers.js';

const full = makeEvent('run-1', 3, {
  sessionKey: 'sess',
  namespace: 'a.b',
  nodeId: 'n',
  nodeName: 'N',
  spanId: 's1',
  parentSpanId: 's0',
  payload: { key: 'k', nested: { list: [1, 'two', null] } },
});
const FIELDS = [...Object.keys(full), 'redaction', 'extra'];
const VALUES: unknown[] = [undefined, null, '', 'x', 'custom', 0, -0, 1, -1, 1.5, 2 ** 53, NaN, Infinity, true, {}, [], { containsSecrets: true }];

class Klass {
  a = 1;
}
function payloads(): unknown[] {
  const nullProto = Object.assign(Object.create(null) as object, { a: 1 });
  const hidden = Object.defineProperty({ a: 1 }, 'hidden', { value: 2, enumerable: false });
  return [
    {},
    { a: 1, 'b c': [true] },
    nullProto,
    hidden,
    { 1: 'one', z: 'z' },
    new Klass(),
    [],
    new Map(),
    new Date(0),
    { [Symbol('s')]: 1 },
    JSON.parse('{"__proto__": {"x": 1}, "a": 1}'),
    { constructor: 'c' },
    { constructor: Klass },
  ];
}

/** Every variant: each field removed or set to each value, each payload, and envelopes that are not plain objects. */
function variants(): unknown[] {
  const out: unknown[] = [full, makeEvent('run-1', 0), null, undefined, 'event', [], [full], Object.assign(new Klass(), full)];
  out.push(Object.assign(Object.create(null) as object, full));
  for (const field of FIELDS) {
    const without: Record<string, unknown> = { ...full };
    delete without[field];
    out.push(without);
    for (const value of VALUES) out.push({ ...full, [field]: value });
  }
  for (const payload of payloads()) out.push({ ...full, payload });
  return out;
}

describe('parseEvent (the event log envelope check)', () => {
  it('gives exactly the answer and the value of the zod schema, for valid and invalid events alike', () => {
    let accepted = 0;
    for (const value of variants()) {
      const quick = parseEvent(value);
      const zod = StreamEventSchema.safeParse(value);
      const label = String(JSON.stringify(value));
      expect(quick.success, label).toBe(zod.success);
      if (quick.success && zod.success) {
        accepted++;
        expect(JSON.stringify(quick.data), label).toBe(JSON.stringify(zod.data));
        expect(quick.data, label).toEqual(zod.data);
      } else {
        expect(quick.error?.issues, label).toEqual(zod.error?.issues);
      }
    }
    expect(accepted).toBeGreaterThan(20);
  });

  it('reads JSON the way zod does (the read path)', () => {
    for (const text of [JSON.stringify(full), '{"v":1,"id":"e","seq":0,"timestamp":0,"runId":"r","type":"custom","payload":{"__proto__":1,"a":2}}']) {
      const parsed = parseEvent(JSON.parse(text));
      expect(parsed.success).toBe(true);
      expect(parsed.data).toStrictEqual(StreamEventSchema.parse(JSON.parse(text)));
    }
  });

  it('takes the quick path for the events a streamer stamps (no copy of the payload)', () => {
    const event = new EventStreamer({ runId: 'run-1' }).emit({ type: 'node.started', nodeId: 'n', payload: { a: 1 } });
    const parsed = parseEvent(event);
    expect(parsed.success).toBe(true);
    expect(parsed.data!.payload).toBe(event.payload);
    expect(StreamEventSchema.parse(event).payload).not.toBe(event.payload);
  });
});
