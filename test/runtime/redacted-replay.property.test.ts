/**
 * Property: the state read back at every step of a run is the live state as redacted, the same wherever the
 * keyframes fall (keyframeInterval 1 and 1000), and decodes, for random values under random keys (secret-named ones,
 * sibling-naming ones, the item shape's, the codec's and the delta's own field names), deeper nesting, arrays of
 * item-shaped objects, values that switch shape, deletes, appends, Maps keyed by secret names, several items and
 * quarantine. Written by reviews s34, s35 and s36; it found the delta and the keyframe of an object that changed shape
 * under a secret-named key disagreeing.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, encodeValue, loadRunPoint, runFlow, type BackpackHandle } from '../../src/index.js';
import { redact } from '../../src/redact/index.js';
import { decodeValue } from '../../src/backpack/index.js';
import { makeTempDir } from '../support/temp.js';
import { trials } from '../support/soak.js';

const RUNS = trials(40, 400);
const KEYS = ['password', 'pin', 'secrets', 'credentials', 'value', 'metadata', 'accessControl', 'r', 'a', 'o', 'd', '$bp', 'v', 't', 'name', 'key', 'label', 'auth', 'args', 'headers', 'list', 'n', 'timestamp', 'version', 'tags', 'quarantine', 'reason', 'sourceNodeId', 'read', 'header'];
const leaf = fc.oneof(
  fc.integer({ min: -5, max: 99999999 }),
  fc.constantFrom(
    'alpha', 'DB_PASSWORD', 'password', '--password', '--api-key', 'Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b', 'Authorization',
    'ghp_abcdefghijklmnopqrstuvwxyz0123456789', 'Basic dXNlcjpwYXNz', 'bigint', 'number', 'map', 'object', 'typed', 'date',
    'https://u:hunter22@h.example/x', true, false, null, 0, -0, '', 'Date of service', '7f3a9c2b1d4e5f60718293a4b5c6d7e8',
  ),
);
const { value } = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, tie('object'), tie('array'), tie('codec'), tie('shaped')),
  codec: fc.oneof(
    fc.array(fc.tuple(fc.constantFrom('password', 'pin', 'DB_PASSWORD', 'value', 'x', 7, '--password'), tie('value')), { maxLength: 3 }).map((e) => new Map(e as [unknown, unknown][])),
    fc.array(tie('value'), { maxLength: 3 }).map((e) => new Set(e)),
    fc.constantFrom(new Date(1700000000000), new Date(Number.NaN), 12345678901234n, -5n, undefined, Number.NaN, -Infinity, new Uint8Array([104, 117, 110, 116, 101, 114, 50]), new Float64Array([1.5]), new Uint16Array([1, 2])),
    fc.dictionary(fc.constantFrom('$bp', 'password', 'v', 't', 'key', 'bytes'), tie('value'), { maxKeys: 3 }),
  ),
  shaped: fc.oneof(
    fc.record({ metadata: tie('value'), value: tie('value') }),
    fc.record({ name: fc.constantFrom('DB_PASSWORD', 'host', 'pin'), value: tie('value') }),
    fc.record({ key: fc.constantFrom('password', 'user'), value: tie('value') }),
    fc.record({ r: tie('value') }),
    fc.array(fc.record({ metadata: tie('value'), value: tie('value') }), { maxLength: 3 }),
    fc.tuple(fc.constantFrom('Authorization', '--password', 'x'), tie('value')),
    // s36: item-shaped values (an item's fields, an item's metadata), as the stores write one
    fc.record(
      {
        value: tie('value'),
        metadata: fc.record({ timestamp: fc.constantFrom(0, 1700000000000, 5), version: fc.constantFrom(1, 2, 9), tags: fc.array(fc.constantFrom('a', 'hunter2', 'password', 'DB_PASSWORD'), { maxLength: 2 }), sourceNodeName: fc.constantFrom('n', 'secret-node', 'hunter22') }, { requiredKeys: ['timestamp', 'version', 'tags'] }),
        accessControl: fc.record({ read: fc.array(fc.constantFrom('*', 'n', 'hunter2'), { maxLength: 2 }), note: fc.constantFrom('plain', 'hunter2') }, { requiredKeys: [] }),
        quarantine: fc.record({ reason: fc.constantFrom('x', 'hunter2'), timestamp: fc.constant(3) }),
      },
      { requiredKeys: ['metadata'] },
    ),
    // s36: a secret manager's answer, a value field with siblings
    fc.record({ value: tie('value'), version: fc.constantFrom('v1', 3, 'hunter2'), tags: fc.array(tie('value'), { maxLength: 2 }) }, { requiredKeys: ['value'] }),
    fc.record({ value: tie('value') }),
    fc.record({ metadata: fc.record({ timestamp: tie('value'), version: tie('value'), tags: tie('value') }), value: tie('value') }),
  ),
  object: fc.dictionary(fc.constantFrom(...KEYS), tie('value'), { maxKeys: 5 }),
  array: fc.array(tie('value'), { maxLength: 4 }),
}));

type Op =
  | { item: string; path: string[]; v: unknown }
  | { item: string; del: string[] }
  | { item: string; push: unknown }
  | { item: string; replace: unknown }
  | { item: string; quarantine: true }
  | { item: string; remove: true };
const ITEMS = ['cfg', 'credentials', 'password', 'secrets', 'value'];
const itemKey = fc.constantFrom(...ITEMS);
const path = fc.array(fc.constantFrom(...KEYS), { minLength: 1, maxLength: 4 });
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ item: itemKey, path, v: value }) },
  { weight: 2, arbitrary: fc.record({ item: itemKey, del: path }) },
  { weight: 2, arbitrary: fc.record({ item: itemKey, push: value }) },
  { weight: 2, arbitrary: fc.record({ item: itemKey, replace: value }) },
  { weight: 1, arbitrary: fc.record({ item: itemKey, quarantine: fc.constant(true as const) }) },
  { weight: 1, arbitrary: fc.record({ item: itemKey, remove: fc.constant(true as const) }) },
);

function isRec(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;
}
function setAt(root: unknown, p: string[], v: unknown): unknown {
  const base = isRec(root) ? { ...root } : {};
  if (p.length === 1) base[p[0]!] = v;
  else base[p[0]!] = setAt(base[p[0]!], p.slice(1), v);
  return base;
}
function delAt(root: unknown, p: string[]): unknown {
  if (!isRec(root)) return root;
  const base = { ...root };
  if (p.length === 1) delete base[p[0]!];
  else if (Object.hasOwn(base, p[0]!)) base[p[0]!] = delAt(base[p[0]!], p.slice(1));
  return base;
}
function pushAt(root: unknown, v: unknown): unknown {
  if (Array.isArray(root)) return [...root, v];
  if (isRec(root)) {
    for (const k of Object.keys(root)) if (Array.isArray(root[k])) return { ...root, [k]: [...(root[k] as unknown[]), v] };
  }
  return [root, v];
}

describe('recorded state at every step', () => {
  it('property: equal for keyframeInterval 1 and 1000, to the live state redacted, and decodes', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.dictionary(itemKey, value, { minKeys: 1, maxKeys: 3 }), fc.array(op, { minLength: 1, maxLength: 8 }), async (start, ops) => {
        const live: Record<string, unknown>[] = [];
        const states: Record<number, unknown[]> = {};
        const quar: Record<number, unknown[]> = {};
        for (const keyframeInterval of [1, 1000]) {
          const dataDir = makeTempDir('bf-replay36-', 'test');
          class Stepper extends BackpackNode {
            override post(b: BackpackHandle): string {
              const i = (b.peek('__i') as number | undefined) ?? 0;
              if (i === 0) for (const [k, v] of Object.entries(start)) b.pack(k, v);
              else {
                const o = ops[i - 1]!;
                const cur = b.peek(o.item);
                if ('quarantine' in o) {
                  if (cur !== undefined) b.quarantine(o.item, { reason: 'contradicted' });
                } else if ('remove' in o) {
                  if (cur !== undefined) b.delete(o.item);
                } else {
                  const next = 'replace' in o ? o.replace : 'path' in o ? setAt(cur, o.path, o.v) : 'del' in o ? delAt(cur, o.del) : pushAt(cur, o.push);
                  b.pack(o.item, next);
                }
              }
              b.pack('__i', i + 1);
              const snap: Record<string, unknown> = {};
              for (const k of ITEMS) {
                const v = b.peek(k);
                if (v !== undefined || false) snap[k] = redact({ [k]: encodeValue(v) }).value[k];
              }
              live[i + 1] = snap;
              return i < ops.length ? 'again' : 'done';
            }
          }
          const flow = new Flow({ namespace: 'p' });
          const node = flow.addNode(Stepper, { id: 's' });
          node.on('again', node);
          const runId = `r${n++}`;
          await runFlow(flow, { dataDir, runId, durability: 'never', keyframeInterval });
          states[keyframeInterval] = [];
          quar[keyframeInterval] = [];
          for (let step = 1; step <= ops.length + 1; step++) {
            const point = await loadRunPoint({ dataDir, runId, step });
            const snap: Record<string, unknown> = {};
            for (const k of ITEMS) if (point.state.items[k] !== undefined) snap[k] = point.state.items[k]!.value;
            states[keyframeInterval]![step] = snap;
            quar[keyframeInterval]![step] = Object.fromEntries(Object.entries(point.state.quarantined).map(([k, q]) => [k, (q as { value: unknown }).value]));
          }
        }
        for (let step = 1; step <= ops.length + 1; step++) {
          expect(states[1000]![step], `step ${step}: keyframe 1000 vs 1`).toStrictEqual(states[1]![step]);
          expect(quar[1000]![step], `step ${step}: quarantined, keyframe 1000 vs 1`).toStrictEqual(quar[1]![step]);
          const got = states[1]![step] as Record<string, unknown>;
          const want = live[step]!;
          // undefined-valued items: peek gives undefined for both a missing and an undefined item; compare present keys
          for (const k of Object.keys(want)) expect(got[k], `step ${step} item ${k}: recorded vs live redacted`).toStrictEqual(want[k]);
          for (const k of Object.keys(got)) expect(() => decodeValue(got[k] as never), `step ${step} ${k}: decodes`).not.toThrow();
        }
      }),
      { numRuns: RUNS },
    );
  }, 1_800_000);
});
