/**
 * A model's tool-call arguments nested very deep (`[[[...]]]`, `{"a":{"a":...}}`) are invalid input for that tool,
 * answered to the model as an error result naming the tool, the problem and the limit, as other invalid arguments
 * are: not a stack overflow failing the node.
 */
import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { MockLanguageModelV3 } from 'ai/test';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { StreamEventType } from '../../src/events/index.js';
import { Flow } from '../../src/nodes/index.js';
import {
  AgentNode,
  defineTool,
  MAX_TOOL_INPUT_NESTING,
  ToolExecutionNode,
  ToolParamGenerationNode,
  ToolUsingNode,
  TOOLS_ACTION,
  toModelTools,
  type ModelReply,
  type ToolCallRecord,
  type ToolResultRecord,
} from '../../src/nodes/llm/index.js';
import { depsOf, recordingStreamer } from './helpers.js';
import { trials } from '../support/soak.js';

const usage = {
  inputTokens: { total: 7, noCache: 7, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 3, text: 3, reasoning: undefined },
};

/** JSON text of `depth` levels around a 1: arrays `[[1]]`, or objects `{"a":{"a":1}}`. */
function nested(depth: number, shape: 'array' | 'object'): string {
  return shape === 'array' ? '['.repeat(depth) + '1' + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

/** A mock model that first calls tool `echo` once per arguments text, then answers 'done'; it records its prompts. */
function toolCallingModel(argumentTexts: string[]): { model: MockLanguageModelV3; prompts: string[] } {
  const prompts: string[] = [];
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => {
      prompts.push(JSON.stringify(options.prompt));
      if (prompts.length > 1) return { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
      return {
        content: argumentTexts.map((input, i) => ({ type: 'tool-call' as const, toolCallId: `call-${i}`, toolName: 'echo', input })),
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage,
        warnings: [],
      };
    },
  });
  return { model, prompts };
}

/** A tool that counts its calls. */
function echoTool() {
  const calls: unknown[] = [];
  const tool = defineTool({ description: 'echo', inputSchema: z.object({ v: z.unknown() }), execute: (input) => (calls.push(input), 'echoed') });
  return { tool, calls };
}

const LIMIT_MESSAGE = `nested more than ${MAX_TOOL_INPUT_NESTING} levels deep (the limit is ${MAX_TOOL_INPUT_NESTING} levels of arrays and objects)`;

describe('tool-call arguments nested too deep', () => {
  it('are answered to the model as invalid input naming the tool and the limit (100,000 levels of arrays and of objects)', async () => {
    const { model, prompts } = toolCallingModel([`{"v":${nested(100_000, 'array')}}`, `{"v":${nested(100_000, 'object')}}`, '{"v":[1]}']);
    const { tool, calls } = echoTool();
    const { streamer, events } = recordingStreamer();
    const flow = new Flow({ deps: depsOf({ model }), eventStreamer: streamer });
    flow.addNode(AgentNode, { id: 'agent', promptFrom: 'question', conversation: 'chat' }).registerTool('echo', tool);
    await flow.run({ question: 'q' });

    expect(flow.backpack.unpack('answer')).toBe('done');
    const results = flow.backpack.unpack<ToolResultRecord[]>('toolResults')!;
    expect(results.map((r) => r.error)).toEqual([
      expect.stringMatching(new RegExp(`^Invalid input for tool 'echo': the arguments at /v/0/0/0/0/0/0/0/…\\(\\d+ more\\)…/0 are ${escape(LIMIT_MESSAGE)}$`)),
      expect.stringMatching(new RegExp(`^Invalid input for tool 'echo': the arguments at /v/a/a/a/a/a/a/a/…\\(\\d+ more\\)…/a are ${escape(LIMIT_MESSAGE)}$`)),
      undefined,
    ]);
    expect(results.map((r) => r.attempts)).toEqual([0, 0, 1]);
    expect(calls).toEqual([{ v: [1] }]);
    // The model is shown the error as the result of its call.
    expect(prompts[1]).toContain(`Invalid input for tool 'echo': the arguments at /v/0/0`);
    expect(events.filter((e) => e.type === StreamEventType.TOOL_RESULT).map((e) => e.payload.error)).toEqual(results.map((r) => r.error));
  });

  it('are accepted up to the limit and refused past it, arrays and objects alike', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.integer({ min: 1, max: 2 * MAX_TOOL_INPUT_NESTING }), fc.integer({ min: MAX_TOOL_INPUT_NESTING - 3, max: MAX_TOOL_INPUT_NESTING + 3 })),
        fc.constantFrom('array' as const, 'object' as const),
        async (depth, shape) => {
          // The arguments object is level 1, `v` holds the rest.
          const { model } = toolCallingModel([`{"v":${nested(depth - 1, shape)}}`]);
          const { tool, calls } = echoTool();
          const flow = new Flow({ deps: depsOf({ model }) });
          flow.addNode(AgentNode, { id: 'agent', promptFrom: 'question' }).registerTool('echo', tool);
          await flow.run({ question: 'q' });
          const [result] = flow.backpack.unpack<ToolResultRecord[]>('toolResults')!;
          if (depth <= MAX_TOOL_INPUT_NESTING) {
            expect(result).toMatchObject({ output: 'echoed', attempts: 1 });
            expect(calls).toHaveLength(1);
          } else {
            expect(result!.error).toContain(`Invalid input for tool 'echo': the arguments at /v/`);
            expect(result!.error).toContain(LIMIT_MESSAGE);
            expect(calls).toHaveLength(0);
          }
        },
      ),
      { numRuns: trials(16, 200), examples: [[1, 'array'], [MAX_TOOL_INPUT_NESTING, 'array'], [MAX_TOOL_INPUT_NESTING + 1, 'array'], [MAX_TOOL_INPUT_NESTING + 1, 'object']] },
    );
  });

  it('reach a ToolExecutionNode through the backpack as invalid input', async () => {
    const { model } = toolCallingModel([nested(100_000, 'array')]);
    const { tool, calls } = echoTool();
    const flow = new Flow({ deps: depsOf({ model, tools: { echo: tool } }) });
    const step = flow.addNode(ToolParamGenerationNode, { id: 'step', promptFrom: 'question', conversation: 'chat', tools: ['echo'] });
    step.on(TOOLS_ACTION, flow.addNode(ToolExecutionNode, { id: 'run-tools', tools: ['echo'], conversation: 'chat' }));
    await flow.run({ question: 'q' });
    const [result] = flow.backpack.unpack<ToolResultRecord[]>('toolResults')!;
    expect(result!.error).toMatch(new RegExp(`^Invalid input for tool 'echo': the arguments at /0/0/0/0/0/0/0/0/…\\(\\d+ more\\)…/0 are ${escape(LIMIT_MESSAGE)}$`));
    expect(calls).toHaveLength(0);
  });

  it('in a streamed answer are invalid input too', async () => {
    const deep = `{"v":${nested(100_000, 'object')}}`;
    const parts: LanguageModelV3StreamPart[] = [
      { type: 'stream-start', warnings: [] },
      { type: 'tool-input-start', id: 'call-0', toolName: 'echo' },
      { type: 'tool-input-delta', id: 'call-0', delta: deep },
      { type: 'tool-input-end', id: 'call-0' },
      { type: 'tool-call', toolCallId: 'call-0', toolName: 'echo', input: deep },
      { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage },
    ];
    const model = new MockLanguageModelV3({
      doStream: async () => ({ stream: new ReadableStream({ start: (c) => (parts.forEach((p) => c.enqueue(p)), c.close()) }) }),
    });
    const { tool, calls } = echoTool();
    class StreamingToolStep extends ToolUsingNode<unknown, ToolResultRecord> {
      override async exec(): Promise<ToolResultRecord> {
        const reply: ModelReply = await this.callModel({ messages: [{ role: 'user', content: 'q' }], tools: await toModelTools(this.tools), stream: true, purpose: 'stream' });
        const call: ToolCallRecord = reply.toolCalls[0]!;
        return this.runTool(call, this.tools.get(call.toolName), { attempts: 1, backpack: this.backpack });
      }
      override post(backpack: Parameters<ToolUsingNode['post']>[0], _prep: unknown, result: ToolResultRecord): undefined {
        backpack.pack('result', result);
        return undefined;
      }
    }
    const flow = new Flow({ deps: depsOf({ model }) });
    flow.addNode(StreamingToolStep, { id: 'streamer' }).registerTool('echo', tool);
    await flow.run({});
    expect(flow.backpack.unpack<ToolResultRecord>('result')!.error).toMatch(new RegExp(`^Invalid input for tool 'echo': the arguments at /v/a/a/.* are ${escape(LIMIT_MESSAGE)}$`));
    expect(calls).toHaveLength(0);
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
