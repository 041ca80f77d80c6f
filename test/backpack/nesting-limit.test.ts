/**
 * How deep a packed value may nest: MAX_JSON_NESTING levels (arrays, objects, Maps, Sets), the bound of configs,
 * inputs and answers, so that every later walk of a stored value (redaction at each persistence boundary, the value
 * codec, readers) stays far from the stack limit. Past it, pack refuses with a BackpackError naming the key and a
 * JSON pointer, also when the depth comes from values packed before (shared, not walked again). Before, a value
 * 4,000 levels deep failed its run with "Maximum call stack size exceeded".
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Backpack, BackpackError, BackpackNode, decodeValue, Flow, MAX_JSON_NESTING, loadRunPoint, runFlow } from '../../src/index.js';
import { makeTempDir } from '../support/temp.js';

/** A value of `levels` levels of nesting: objects `{ a: … }` around `{ leaf: 1 }`. */
function nested(levels: number, inner: unknown = { leaf: 1 }): unknown {
  let v = inner;
  for (let i = 1; i < levels; i++) v = { a: v };
  return v;
}

describe('packing a deeply nested value', () => {
  it(`packs ${MAX_JSON_NESTING} levels, refuses one more, naming the key and where`, () => {
    const bp = new Backpack();
    bp.pack('ok', nested(MAX_JSON_NESTING), { nodeId: 'n' });
    expect(() => bp.pack('deep', nested(MAX_JSON_NESTING + 1), { nodeId: 'n' })).toThrow(BackpackError);
    expect(() => bp.pack('deep', nested(MAX_JSON_NESTING + 1), { nodeId: 'n' })).toThrow(
      /^Cannot pack key 'deep': the value at \/a\/a\/a\/a\/a\/a\/a\/a\/…\(\d+ more\)…\/a is nested more than 512 levels deep/,
    );
    expect(bp.has('deep')).toBe(false);
  });

  it('refuses a value that passes the limit by holding values packed before (which are shared, not walked again)', () => {
    const bp = new Backpack();
    let v: unknown = { leaf: 1 };
    let packed = 1;
    for (let round = 0; round < 5; round++) {
      const next = nested(200, v);
      const levels = packed + 199;
      if (levels <= MAX_JSON_NESTING) {
        bp.pack('grown', next, { nodeId: 'n' });
        v = bp.unpack('grown');
        packed = levels;
      } else {
        expect(() => bp.pack('grown', next, { nodeId: 'n' }), `${levels} levels`).toThrow(/is nested more than 512 levels deep/);
        // A list of such values, and a Map holding one, count their levels too.
        expect(() => bp.pack('list', [[v]], { nodeId: 'n' })).not.toThrow();
        expect(() => bp.pack('list', nested(MAX_JSON_NESTING - packed + 1, [v]), { nodeId: 'n' })).toThrow(/nested more than/);
        expect(() => bp.pack('map', new Map([['k', nested(MAX_JSON_NESTING - packed + 1, v)]]), { nodeId: 'n' })).toThrow(/nested more than/);
        return;
      }
    }
    throw new Error('the limit was never reached');
  });

  it('a list grown by sharing its stored elements keeps their depth: growing past the limit by wrapping is refused (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: MAX_JSON_NESTING + 40 }), fc.integer({ min: 1, max: 60 }), (inner, wraps) => {
        const bp = new Backpack();
        const element = nested(Math.min(inner, MAX_JSON_NESTING - 1));
        const innerLevels = Math.min(inner, MAX_JSON_NESTING - 1);
        bp.pack('list', [element], { nodeId: 'n' });
        const list = bp.unpack('list') as unknown[];
        bp.pack('list', [...list, { leaf: 2 }], { nodeId: 'n' });
        const grown = bp.unpack('list');
        const levels = wraps + 1 + innerLevels;
        const pack = () => bp.pack('wrapped', nested(wraps + 1, grown), { nodeId: 'n' });
        if (levels <= MAX_JSON_NESTING) expect(pack).not.toThrow();
        else expect(pack).toThrow(/nested more than 512 levels deep/);
      }),
      { numRuns: 60 },
    );
  });

  it('a node that packs a value past the limit fails its durable run with that error; one at the limit is recorded and read back', async () => {
    const dataDir = makeTempDir('bpf-nesting-', 'file');
    class Deep extends BackpackNode {
      override post(backpack: Parameters<BackpackNode['post']>[0]): undefined {
        backpack.pack('deep', nested(this.config['levels'] as number));
        return undefined;
      }
    }
    const run = (levels: number, runId: string) => {
      const flow = new Flow({ namespace: 'd' });
      flow.addNode(Deep, { id: 'deep', levels });
      return runFlow(flow, { dataDir, runId });
    };
    expect((await run(MAX_JSON_NESTING, 'at-limit')).status).toBe('completed');
    const point = await loadRunPoint({ dataDir, runId: 'at-limit', step: 1 });
    expect(decodeValue(point.state.items['deep']!.value)).toEqual(nested(MAX_JSON_NESTING));
    await expect(run(4_000, 'past-limit')).rejects.toThrow(/Cannot pack key 'deep': .* nested more than 512 levels deep/);
  });
});
