/** Issue 13: hostile flow configs and inputs get clear errors, and what validates also runs. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BackpackNode, FlowConfigError, FlowLoader, parseFlowConfig, runFlow, type BackpackHandle } from '../../src/index.js';
import { MAX_JSON_NESTING, nestingProblem } from '../../src/serialization/index.js';

/** `depth` levels of containers: objects under key `k` and arrays alternating (the outermost is level 1). */
function nested(depth: number, leaf: unknown = 'leaf'): unknown {
  let value: unknown = leaf;
  for (let level = depth; level >= 1; level--) value = level % 2 === 0 ? [value] : { k: value };
  return value;
}

class Put extends BackpackNode {
  override post(backpack: BackpackHandle): undefined {
    backpack.pack(this.config.key as string, this.config.value);
    return undefined;
  }
}

/** A flow whose one node packs `value`: its config nests `value` 4 levels down (flow, nodes, node, params). */
function flowWith(value: unknown): Record<string, unknown> {
  return { version: '2.0.0', namespace: 'limits', nodes: [{ type: 'Put', id: 'put', params: { key: 'deep', value } }] };
}

describe('nestingProblem', () => {
  it('accepts exactly the limit and refuses one level more, naming the path and the limit (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 40 }), (depth, limit) => {
        const problem = nestingProblem(nested(depth), limit);
        if (depth <= limit) expect(problem).toBeUndefined();
        else {
          expect(problem?.message).toBe(`nested more than ${limit} levels deep (the limit is ${limit} levels of arrays and objects)`);
          // The path leads to the first container past the limit: `limit` segments, shortened beyond 12.
          if (limit <= 12) expect(problem!.path.split('/').slice(1)).toHaveLength(limit);
          else expect(problem!.path).toContain(`…(${limit - 9} more)…`);
        }
      }),
    );
    expect(nestingProblem(nested(3), 2)).toEqual({ path: '/k/0', message: 'nested more than 2 levels deep (the limit is 2 levels of arrays and objects)' });
  });

  it('checks 100,000 levels without exhausting the stack, with a shortened path', () => {
    const problem = nestingProblem(nested(100_000));
    expect(problem?.path).toBe(`/k/0/k/0/k/0/k/0/…(${MAX_JSON_NESTING - 9} more)…/0`);
    expect(problem?.message).toContain(`the limit is ${MAX_JSON_NESTING} levels`);
  });

  it('does not follow a value that contains itself', () => {
    const loop: Record<string, unknown> = { a: 1 };
    loop.self = loop;
    expect(nestingProblem(loop)).toBeUndefined();
  });
});

describe('parseFlowConfig', () => {
  it('accepts a UTF-8 byte order mark', () => {
    expect(parseFlowConfig('\uFEFF{"version":"2.0.0","nodes":[]}')).toEqual({ version: '2.0.0', nodes: [] });
  });

  it('refuses 100,000 levels of nesting, naming the path and the limit', () => {
    const text = '{"version":"2.0.0","nodes":' + '['.repeat(100_000) + ']'.repeat(100_000) + '}';
    const error = (() => {
      try {
        parseFlowConfig(text, 'deep.json');
      } catch (e) {
        return e as FlowConfigError;
      }
    })();
    expect(error).toBeInstanceOf(FlowConfigError);
    expect(error!.errors).toEqual([{ path: `/nodes/0/0/0/0/0/0/0/…(${MAX_JSON_NESTING - 9} more)…/0`, message: expect.stringContaining(`the limit is ${MAX_JSON_NESTING} levels`) }]);
    expect(error!.message).toContain('deep.json is nested too deeply');
  });

  it('malformed text nested 100,000 levels deep is a syntax error with its position, not a stack overflow', () => {
    expect(() => parseFlowConfig('['.repeat(100_000), 'open.json')).toThrow(/open\.json is not valid JSON at line 1, column \d+/);
  });

  it('refuses text over maxBytes (default 16 MiB), naming the size, the limit and how to raise it', () => {
    const text = JSON.stringify({ version: '2.0.0', nodes: [], padding: 'é'.repeat(60) });
    const bytes = Buffer.byteLength(text);
    expect(() => parseFlowConfig(text, 'big.json', { maxBytes: bytes - 1 })).toThrow(
      `big.json is ${bytes} bytes, over the limit of ${bytes - 1} bytes; raise the limit (option maxBytes, or --max-flow-bytes)`,
    );
    expect(parseFlowConfig(text, 'big.json', { maxBytes: bytes })).toMatchObject({ version: '2.0.0' });
    expect(() => parseFlowConfig(' '.repeat(16 * 1024 * 1024 + 1))).toThrow(/over the limit of 16777216 bytes/);
  });
});

describe('FlowLoader: validate and load agree at the nesting limit', () => {
  const loader = new FlowLoader().register('Put', Put);

  it('a config at the limit validates, loads and runs durably; one level more is refused by both with the same problem', async () => {
    const atLimit = flowWith(nested(MAX_JSON_NESTING - 4));
    expect(loader.validateConfig(atLimit)).toEqual({ valid: true, errors: [] });
    const dataDir = mkdtempSync(join(tmpdir(), 'bpf-limits-'));
    try {
      const flow = await loader.loadFlow(atLimit);
      await runFlow(flow, { dataDir, runId: 'deep', durability: 'never' });
      expect(flow.backpack.unpack('deep')).toEqual(nested(MAX_JSON_NESTING - 4));
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }

    const over = flowWith(nested(MAX_JSON_NESTING - 3));
    const report = loader.validateConfig(over);
    expect(report.valid).toBe(false);
    expect(report.errors).toEqual([{ path: expect.stringMatching(/^\/nodes\/0\/params\/value\/k\/0\/k\/0\/…/), message: expect.stringContaining(`the limit is ${MAX_JSON_NESTING} levels`) }]);
    await expect(loader.loadFlow(over)).rejects.toMatchObject({ errors: report.errors });
    await expect(loader.loadFlow(JSON.stringify(over))).rejects.toMatchObject({ errors: report.errors });
  });

  it('100,000 levels in params: validate and load both refuse it without a stack overflow', async () => {
    const config = flowWith(nested(100_000));
    expect(loader.validateConfig(config).errors[0]?.message).toContain(`the limit is ${MAX_JSON_NESTING} levels`);
    await expect(loader.loadFlow(config)).rejects.toBeInstanceOf(FlowConfigError);
  });

  it('maxBytes applies to config text in validateConfig and loadFlow', async () => {
    const text = JSON.stringify(flowWith('x'));
    expect(loader.validateConfig(text, { maxBytes: 10 }).errors[0]?.message).toMatch(/flow config is \d+ bytes, over the limit of 10 bytes/);
    await expect(loader.loadFlow(text, undefined, { maxBytes: 10 })).rejects.toThrow(/over the limit of 10 bytes/);
    await expect(loader.loadFlow(text, undefined, { maxBytes: text.length })).resolves.toBeDefined();
  });
});
