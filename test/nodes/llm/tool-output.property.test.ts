/**
 * A tool's result is checked right after its execute: JSON data passes as it is; anything JSON would turn into
 * something else or cannot encode (a Date, Map, Set, BigInt, NaN, a class instance, a function, a cycle, nesting past
 * MAX_TOOL_OUTPUT_NESTING) is an error result naming the tool and where (a JSON pointer), never a crash of the next
 * model call blamed on the model, nor a stack overflow that loses the run's record.
 */
import { MockLanguageModelV3 } from 'ai/test';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { StreamEventType } from '../../../src/events/index.js';
import { Flow } from '../../../src/nodes/index.js';
import { AgentNode, MAX_TOOL_OUTPUT_NESTING, ToolExecutionNode, type ToolResultRecord } from '../../../src/nodes/llm/index.js';
import { listRuns, runFlow } from '../../../src/runtime/durable.js';
import { makeTempDir } from '../../support/temp.js';
import { depsOf, recordingStreamer } from '../../llm/helpers.js';
import { trials } from '../../support/soak.js';

const usage = {
  inputTokens: { total: 7, noCache: 7, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 3, text: 3, reasoning: undefined },
};

/** A model that calls tool `t` once, then answers 'done'; it records the tool messages it was sent. */
function callingModel(): { model: MockLanguageModelV3; toolMessages: unknown[] } {
  const toolMessages: unknown[] = [];
  let calls = 0;
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => {
      if (calls++ === 0) {
        return { content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 't', input: '{}' }], finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [] };
      }
      toolMessages.push(...options.prompt.filter((m) => m.role === 'tool'));
      return { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
    },
  });
  return { model, toolMessages };
}

/** Runs an AgentNode whose tool `t` returns `output`; the tool results and the tool messages the model saw. */
async function agentWithResult(output: () => unknown) {
  const { model, toolMessages } = callingModel();
  const { streamer, events } = recordingStreamer();
  const flow = new Flow({ deps: depsOf({ model }), eventStreamer: streamer });
  flow.addNode(AgentNode, { id: 'agent', promptFrom: 'q' }).registerTool('t', { description: 't', inputSchema: z.object({}), execute: output });
  await flow.run({ q: 'go' });
  return { flow, results: flow.backpack.unpack<ToolResultRecord[]>('toolResults')!, toolMessages, events };
}

class Point {
  constructor(readonly x = 1) {}
}

/** Values JSON has no place for, each with what the error names and where below the value itself (a pointer suffix). */
const nonJson: Array<[string, () => unknown, RegExp, string?]> = [
  ['Date', () => new Date(0), /is a Date \(not a plain object/],
  ['Map', () => new Map([[1, 2]]), /is a Map \(not a plain object/],
  ['Set', () => new Set([1]), /is a Set \(not a plain object/],
  ['BigInt', () => 5n, /is a BigInt \(5n/],
  ['NaN', () => NaN, /is NaN \(not a JSON number/],
  ['Infinity', () => -Infinity, /is -Infinity \(not a JSON number/],
  ['class instance', () => new Point(), /is a Point \(not a plain object/],
  ['function', () => () => 1, /is a function/],
  ['symbol', () => Symbol('s'), /is a symbol/],
  ['undefined in an array', () => [1, undefined], /is undefined \(JSON.stringify would write null\)/, '/1'],
  ['hole in an array', () => Object.assign(new Array<number>(3), { 0: 1, 2: 2 }), /is a hole in an array/, '/1'],
  ['typed array', () => new Uint8Array(2), /is a Uint8Array \(not a plain object/],
  ['symbol-keyed property', () => ({ [Symbol('k')]: 1 }), /symbol-keyed/],
];

/** `leaf` wrapped in `path` (object keys and array indexes), and the JSON pointer of where it is. */
function wrap(leaf: unknown, path: Array<string | number>): { value: unknown; pointer: string } {
  let value = leaf;
  for (const step of [...path].reverse()) value = typeof step === 'number' ? [...Array<null>(step).fill(null), value] : { ok: 1, [step]: value };
  const pointer = path.map((p) => `/${String(p).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
  return { value, pointer };
}

describe('tool results that are not JSON data', () => {
  it('are error results naming the tool, the JSON pointer and what was found, at any depth (property)', async () => {
    const step = fc.oneof(fc.string({ minLength: 1, maxLength: 6 }).filter((k) => k !== 'ok' && k !== '__proto__'), fc.nat({ max: 3 }));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...nonJson), fc.array(step, { maxLength: 12 }), async ([, make, expected, below = ''], path) => {
        const { value, pointer: above } = wrap(make(), path);
        const pointer = above + below;
        const { results, toolMessages, events } = await agentWithResult(() => value);
        expect(results).toHaveLength(1);
        const where = pointer === '' ? 'the result' : `the value at '${pointer.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}'`;
        expect(results[0]!.error).toMatch(new RegExp(`^Tool 't' returned a result that is not JSON data: ${where} is `));
        expect(results[0]!.error).toMatch(expected);
        expect(results[0]!.output).toBeUndefined();
        // The model was answered (an error result), and the event says the same.
        expect(JSON.stringify(toolMessages)).toContain('error-text');
        expect(events.find((e) => e.type === StreamEventType.TOOL_RESULT)!.payload.error).toBe(results[0]!.error);
      }),
      { numRuns: trials(25, 300) },
    );
  });

  it('names a cycle and where it points back to', async () => {
    const { results } = await agentWithResult(() => {
      const a: Record<string, unknown> = { list: [{}] };
      (a.list as Array<Record<string, unknown>>)[0]!.back = a;
      return { a };
    });
    expect(results[0]!.error).toBe("Tool 't' returned a result that is not JSON data: the value at '/a/list/0/back' is a reference back to the value at '/a', which contains it (a cycle)");
  });

  it('passes JSON data as it is (property), with undefined object properties and an undefined result as JSON has them', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 6 }), async (value) => {
        const { results, toolMessages } = await agentWithResult(() => value);
        expect(results[0]!.error).toBeUndefined();
        expect(results[0]!.output).toEqual(value);
        expect(toolMessages).toHaveLength(1);
      }),
      { numRuns: trials(15, 200) },
    );
    expect((await agentWithResult(() => ({ a: 1, b: undefined }))).results[0]!.output).toEqual({ a: 1 });
    expect((await agentWithResult(() => undefined)).results[0]!.output).toBeNull();
  });
});

describe('tool results nested too deep', () => {
  const deep = (depth: number): unknown => JSON.parse('['.repeat(depth) + ']'.repeat(depth));

  it(`are error results at MAX_TOOL_OUTPUT_NESTING + 1 levels (${MAX_TOOL_OUTPUT_NESTING}), fine at the limit`, async () => {
    const atLimit = await agentWithResult(() => ({ doc: deep(MAX_TOOL_OUTPUT_NESTING - 1) }));
    expect(atLimit.results[0]!.error).toBeUndefined();
    const over = await agentWithResult(() => ({ doc: deep(MAX_TOOL_OUTPUT_NESTING) }));
    expect(over.results[0]!.error).toMatch(/^Tool 't' returned a result that is not JSON data: the value at '\/doc\/0\/0\/0\/0\/0\/0\/0\/…\(\d+ more\)…\/0' is nested more than (\d+) levels deep/);
    expect(over.results[0]!.error).toContain(`nested more than ${MAX_TOOL_OUTPUT_NESTING} levels deep`);
  });

  it('in a durable run: an error result the model sees, the run completes and its record is whole (20,000 levels)', async () => {
    const dataDir = makeTempDir('bf-tool-deep-', 'test');
    const tools = { fetchdoc: { description: 'd', inputSchema: z.object({}), execute: () => ({ doc: deep(20_000) }) } };
    const flow = new Flow({ deps: depsOf({ tools }) });
    flow.addNode(ToolExecutionNode, { id: 'exec', tools: ['fetchdoc'] });
    const result = await runFlow(flow, { dataDir, input: { toolCalls: [{ toolCallId: 'c1', toolName: 'fetchdoc', input: {} }] } });
    expect(result.status).toBe('completed');
    const results = flow.backpack.unpack<ToolResultRecord[]>('toolResults')!;
    expect(results[0]!.error).toMatch(/^Tool 'fetchdoc' returned a result that is not JSON data: the value at '\/doc\/0\/0\/.*' is nested more than \d+ levels deep/);
    expect(results[0]!.error).toContain(`nested more than ${MAX_TOOL_OUTPUT_NESTING} levels deep`);
    const [run] = await listRuns({ dataDir });
    expect(run).toMatchObject({ status: 'completed', toolCallCount: 1 });
  });

  it('in a durable AgentNode run: the model is answered with the error and the run completes', async () => {
    const dataDir = makeTempDir('bf-tool-deep-', 'test');
    const { model, toolMessages } = callingModel();
    const flow = new Flow({ deps: depsOf({ model }) });
    flow.addNode(AgentNode, { id: 'agent', promptFrom: 'q' }).registerTool('t', { description: 't', inputSchema: z.object({}), execute: () => deep(20_000) });
    const result = await runFlow(flow, { dataDir, input: { q: 'go' } });
    expect(result.status).toBe('completed');
    expect(JSON.stringify(toolMessages)).toContain(`nested more than ${MAX_TOOL_OUTPUT_NESTING} levels deep`);
    expect((await listRuns({ dataDir }))[0]).toMatchObject({ status: 'completed' });
  });
});
