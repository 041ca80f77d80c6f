/**
 * Property: the state read back at every step of a run is the live state as redacted, the same wherever the
 * keyframes fall (keyframeInterval 1 and 1000), and decodes, for random values under random keys (secret-named ones,
 * the item shape's `value`/`metadata`/`accessControl`, the delta's own `r`/`a`/`o`/`d`, a sibling-named
 * `name`/`value`, codec values: Maps, Sets, Dates, BigInts, typed arrays, `$bp` objects). Written by review s34; it
 * found the delta and the keyframe of an object that changed shape under a secret-named key disagreeing.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, encodeValue, loadRunPoint, runFlow, type BackpackHandle } from '../../src/index.js';
import { redact } from '../../src/redact/index.js';
import { decodeValue } from '../../src/backpack/index.js';
import { makeTempDir } from '../support/temp.js';
import { trials } from '../support/soak.js';

const KEYS = ['password', 'credentials', 'value', 'metadata', 'r', 'a', 'o', 'd', 'name', 'key', 'label', 'accessControl', 'auth', 'apiKeys', 'n'];
const leaf = fc.oneof(
  fc.integer({ min: -5, max: 99999999 }),
  fc.constantFrom('alpha', 'DB_PASSWORD', 'password', '--password', 'Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b', 'Authorization', true, null, 0, -0),
);
const { value } = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, tie('object'), tie('array'), tie('codec')),
  codec: fc.oneof(
    fc.array(fc.tuple(fc.constantFrom('password', 'pin', 'value', 'x', 7), tie('value')), { maxLength: 3 }).map((e) => new Map(e as [unknown, unknown][])),
    fc.array(tie('value'), { maxLength: 3 }).map((e) => new Set(e)),
    fc.constantFrom(new Date(1700000000000), 12345678901234n, undefined, Number.NaN, Infinity, new Uint8Array([104, 117, 110, 116, 101, 114, 50]), new Float64Array([1.5])),
    fc.dictionary(fc.constantFrom('$bp', 'password', 'v'), tie('value'), { maxKeys: 3 }),
  ),
  object: fc.dictionary(fc.constantFrom(...KEYS), tie('value'), { maxKeys: 4 }),
  array: fc.array(tie('value'), { maxLength: 3 }),
}));

type Op = { path: string[]; v: unknown } | { replace: unknown };
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ path: fc.array(fc.constantFrom(...KEYS), { minLength: 1, maxLength: 3 }), v: value }),
  fc.record({ replace: value }),
);

function setAt(root: unknown, path: string[], v: unknown): unknown {
  const base = root !== null && typeof root === 'object' && !Array.isArray(root) ? { ...(root as Record<string, unknown>) } : {};
  if (path.length === 1) base[path[0]!] = v;
  else base[path[0]!] = setAt(base[path[0]!], path.slice(1), v);
  return base;
}

describe('recorded state at every step', () => {
  it('property: equal for keyframeInterval 1 and 1000, and to the live state redacted', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('cfg', 'credentials', 'password'), value, fc.array(op, { minLength: 1, maxLength: 6 }), async (item, start, ops) => {
        const live: unknown[] = [];
        const states: Record<number, unknown[]> = {};
        for (const keyframeInterval of [1, 1000]) {
          const dataDir = makeTempDir('bf-replay-', 'test');
          class Stepper extends BackpackNode {
            override post(b: BackpackHandle): string {
              const i = (b.peek('__i') as number | undefined) ?? 0;
              const cur = i === 0 ? start : b.peek(item);
              const o = ops[i]!;
              const next = 'replace' in o ? o.replace : setAt(cur, o.path, o.v);
              b.pack(item, next);
              b.pack('__i', i + 1);
              live[i + 1] = redact({ [item]: encodeValue(next) }).value[item];
              return i + 1 < ops.length ? 'again' : 'done';
            }
          }
          const flow = new Flow({ namespace: 'p' });
          const node = flow.addNode(Stepper, { id: 's' });
          node.on('again', node);
          await runFlow(flow, { dataDir, runId: `r${n++}`, durability: 'never', keyframeInterval });
          states[keyframeInterval] = [];
          for (let step = 1; step <= ops.length; step++) {
            const point = await loadRunPoint({ dataDir, runId: `r${n - 1}`, step });
            states[keyframeInterval]![step] = point.state.items[item]?.value;
          }
        }
        for (let step = 1; step <= ops.length; step++) {
          expect(states[1000]![step], `step ${step}: keyframe 1000 vs 1`).toStrictEqual(states[1]![step]);
          expect(states[1]![step], `step ${step}: recorded vs live redacted`).toStrictEqual(live[step]);
          expect(() => decodeValue(states[1]![step] as never), `step ${step}: decodes`).not.toThrow();
        }
      }),
      { numRuns: trials(60, 600) },
    );
  }, 300_000);
});
