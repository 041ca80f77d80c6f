import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CheckpointSchema, parseCheckpoint } from '../../src/store/types.js';

const base = { v: 1, runId: 'r', sessionKey: 's', step: 3, createdAt: 5, position: ['a'] };

/** States zod's z.json() takes or refuses: JSON, and things that are not (or not plainly) JSON, at any depth. */
const awkward = fc.constantFrom<unknown>(
  undefined,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  -0,
  10n,
  () => 1,
  Symbol('s'),
  new Date(0),
  new Map([['a', 1]]),
  Object.create(null) as unknown,
  JSON.parse('{"__proto__":{"x":1},"y":2}') as unknown,
  { [Symbol('k')]: 1, a: 1 },
  Object.defineProperty({ a: 1 }, 'hidden', { value: 2, enumerable: false }),
  [1, , 3], // eslint-disable-line no-sparse-arrays
  Object.assign(Object.create({ inherited: 1 }) as object, { own: 1 }),
  new (class Point { x = 1; })(),
);
const state = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, fc.jsonValue({ maxDepth: 2 }), awkward, fc.array(tie('value'), { maxLength: 4 }), fc.dictionary(fc.string(), tie('value'), { maxKeys: 4 })),
})).value;

describe('parseCheckpoint', () => {
  it('gives what CheckpointSchema.safeParse gives: the same verdict, the same issues, data that serializes alike', () => {
    fc.assert(
      fc.property(state, fc.boolean(), (value, badHead) => {
        const input = { ...base, ...(badHead ? { step: -1 } : {}), state: value };
        const fast = parseCheckpoint(input);
        const zod = CheckpointSchema.safeParse(input);
        expect(fast.success).toBe(zod.success);
        if (fast.success && zod.success) expect(JSON.stringify(fast.data)).toBe(JSON.stringify(zod.data));
        else expect(fast.error?.issues).toEqual(zod.error?.issues);
      }),
      { numRuns: 400 },
    );
  });

  it('keeps a plain JSON state as it is (no copy of a large keyframe)', () => {
    const big = { kind: 'keyframe', items: Array.from({ length: 1000 }, (_, i) => `${i} ${'x'.repeat(100)}`) };
    const parsed = parseCheckpoint({ ...base, state: big });
    expect(parsed.success && parsed.data.state).toBe(big);
  });
});
