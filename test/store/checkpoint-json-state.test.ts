/**
 * A checkpoint's `state` is checked where it is, not rebuilt by zod: an own `"__proto__"` key (which `JSON.parse`
 * makes, and a tool's output may hold) stays a key on save and on load, and what is not JSON is refused with its path.
 */
import fc from 'fast-check';
import { z } from 'zod';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointStore, CheckpointStoreError, type Checkpoint } from '../../src/store/index.js';
import { CheckpointSchema, parseCheckpoint } from '../../src/store/types.js';
import { tempDir } from './helpers.js';

const head = { v: 1 as const, runId: 'run-1', sessionKey: 'sess', step: 3, createdAt: 5, position: ['a'] };
const PROTO_STATE = '{"kind":"keyframe","items":{"tool":{"value":{"__proto__":{"isAdmin":true},"x":[{"__proto__":1}]}}}}';

describe('checkpoint state with own __proto__ keys', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => {
    tmp = tempDir();
  });
  afterEach(() => tmp.cleanup());

  it('parseCheckpoint keeps the state as given, own __proto__ keys included', () => {
    const state = JSON.parse(PROTO_STATE) as Checkpoint['state'];
    const parsed = parseCheckpoint({ ...head, state });
    expect(parsed.success).toBe(true);
    expect(parsed.data!.state).toBe(state);
    expect(JSON.stringify(parsed.data!.state)).toBe(PROTO_STATE);
  });

  it('a keyframe saved and loaded keeps them, as keys and not as prototypes', async () => {
    const store = new CheckpointStore({ dataDir: tmp.dir, sessionKey: 'sess', runId: 'run-1' });
    await store.saveHistorical({ ...head, state: JSON.parse(PROTO_STATE) as Checkpoint['state'] }, 3);
    const loaded = await store.loadHistorical(3);
    expect(JSON.stringify(loaded!.state)).toBe(PROTO_STATE);
    const value = (loaded!.state as { items: { tool: { value: object } } }).items.tool.value;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.hasOwn(value, '__proto__')).toBe(true);
  });

  it('JSON read back from text keeps every own __proto__ key (property)', () => {
    const key = fc.constantFrom('__proto__', 'a', 'b', 'constructor');
    const json = fc.letrec((tie) => ({
      v: fc.oneof({ depthSize: 'small' }, fc.jsonValue({ maxDepth: 1 }), fc.array(tie('v'), { maxLength: 3 }), fc.dictionary(key, tie('v'), { maxKeys: 3 })),
    })).v;
    fc.assert(
      fc.property(json, (value) => {
        const text = JSON.stringify(value);
        const parsed = parseCheckpoint({ ...head, state: JSON.parse(text) });
        return parsed.success && JSON.stringify(parsed.data.state) === text;
      }),
      { numRuns: 300 },
    );
  });
});

describe('checkpoint state that is not JSON', () => {
  it('is refused with the path and what was found, an own __proto__ key checked like any other', async () => {
    const cases: [unknown, string][] = [
      [{ a: [1, Number.NaN] }, 'state.a.1: expected JSON data (a string, finite number, boolean, null, array or plain object), got NaN'],
      [Object.defineProperty({}, '__proto__', { value: { d: new Date(0) }, enumerable: true }), 'state.__proto__.d: expected JSON data (a string, finite number, boolean, null, array or plain object), got an instance of Date'],
      [{ u: undefined }, 'got undefined'],
      [{ m: new Map() }, 'got an instance of Map'],
      [{ n: 1n }, 'got a bigint'],
    ];
    const tmp = tempDir();
    try {
      const store = new CheckpointStore({ dataDir: tmp.dir, sessionKey: 'sess', runId: 'run-1' });
      for (const [state, message] of cases) {
        expect(parseCheckpoint({ ...head, state }).success).toBe(false);
        const saving = store.saveHistorical({ ...head, state: state as Checkpoint['state'] }, 3);
        await expect(saving).rejects.toThrow(CheckpointStoreError);
        await expect(saving).rejects.toThrow(message);
      }
    } finally {
      tmp.cleanup();
    }
  });

  it('gets the verdict z.json() gives, for states without an own __proto__ key (property)', () => {
    const zodJson = CheckpointSchema.extend({ state: z.json() });
    const awkward = fc.constantFrom<unknown>(
      undefined,
      Number.NaN,
      Number.NEGATIVE_INFINITY,
      -0,
      10n,
      () => 1,
      new Date(0),
      new Map([['a', 1]]),
      Object.create(null) as unknown,
      [1, , 3], // eslint-disable-line no-sparse-arrays
      new (class Point {
        x = 1;
      })(),
    );
    /** Whether `value` holds an own `__proto__` key at any depth (fc.jsonValue draws them too). */
    const ownProto = (value: unknown): boolean =>
      value !== null && typeof value === 'object' && (Object.hasOwn(value, '__proto__') || Object.values(value as Record<string, unknown>).some(ownProto));
    const state = fc
      .letrec((tie) => ({
        v: fc.oneof({ depthSize: 'small' }, fc.jsonValue({ maxDepth: 2 }), awkward, fc.array(tie('v'), { maxLength: 4 }), fc.dictionary(fc.string().filter((key) => key !== '__proto__'), tie('v'), { maxKeys: 4 })),
      }))
      .v.filter((value) => !ownProto(value));
    fc.assert(
      fc.property(state, (value) => {
        const ours = parseCheckpoint({ ...head, state: value });
        const zod = zodJson.safeParse({ ...head, state: value });
        expect(ours.success).toBe(zod.success);
        if (ours.success && zod.success) expect(JSON.stringify(ours.data)).toBe(JSON.stringify(zod.data));
      }),
      { numRuns: 400 },
    );
  });
});
