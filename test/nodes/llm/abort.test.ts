/**
 * An abort, or a time limit, stops the node's wait for a tool or a model that ignores the signal: the step fails with
 * an error naming the tool or the model call, the run ends, and the call settling later is no unhandled rejection.
 */
import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Flow } from '../../../src/nodes/index.js';
import { AgentNode, CallAbortedError, ChatNode, ModelTimeoutError, type ToolResultRecord } from '../../../src/nodes/llm/index.js';
import { listRuns, runFlow } from '../../../src/runtime/durable.js';
import { makeTempDir } from '../../support/temp.js';
import { depsOf, failureOf, rootCause } from '../../llm/helpers.js';

const usage = {
  inputTokens: { total: 7, noCache: 7, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 3, text: 3, reasoning: undefined },
};

/** A model that calls tool `slow` once, then answers 'done'. */
function toolCallingModel(): MockLanguageModelV3 {
  let calls = 0;
  return new MockLanguageModelV3({
    doGenerate: async () =>
      calls++ === 0
        ? { content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'slow', input: '{}' }], finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [] }
        : { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] },
  });
}

/** A tool whose call is settled by hand (never, unless the test does), ignoring its signal; `started` when called. */
function stuckTool(timeoutMs?: number, started: () => void = () => undefined) {
  let reject: (error: Error) => void = () => undefined;
  const tool = {
    description: 'never answers',
    inputSchema: z.object({}),
    execute: () => (started(), new Promise<never>((_resolve, r) => (reject = r))),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  };
  return { tool, rejectLater: (error: Error) => reject(error) };
}

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
beforeEach(() => {
  unhandled.length = 0;
  process.on('unhandledRejection', onUnhandled);
});
afterEach(() => void process.off('unhandledRejection', onUnhandled));

describe('a tool that ignores the abort signal', () => {
  it('does not keep the run alive: the durable run fails with an error naming the tool, and its late rejection is handled', async () => {
    const dataDir = makeTempDir('bf-llm-abort-', 'test');
    const controller = new AbortController();
    const { tool, rejectLater } = stuckTool(undefined, () => setTimeout(() => controller.abort(new Error('user stop')), 20));
    const flow = new Flow({ deps: depsOf({ model: toolCallingModel() }) });
    flow.addNode(AgentNode, { id: 'agent', promptFrom: 'q' }).registerTool('slow', tool);
    const error = await failureOf(runFlow(flow, { dataDir, runId: 'run-abort', input: { q: 'go' }, signal: controller.signal }));
    expect(error.message).toMatch(/node 'agent': tool 'slow' \(call 'c1'\) was stopped: the run was aborted \(user stop\)/);
    expect(findCause(error, CallAbortedError)).toBeInstanceOf(CallAbortedError);
    expect(rootCause(error).message).toBe('user stop');
    // Stopped by its own signal, not failed: resumable, no error counted.
    expect((await listRuns({ dataDir }))[0]).toMatchObject({ status: 'stopped', errorCount: 0 });
    rejectLater(new Error('too late'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(unhandled).toEqual([]);
  });

  it('fails the attempt after the tool\'s timeoutMs: an error result the model sees, and the agent goes on', async () => {
    const { tool } = stuckTool(30);
    const flow = new Flow({ deps: depsOf({ model: toolCallingModel() }) });
    flow.addNode(AgentNode, { id: 'agent', promptFrom: 'q' }).registerTool('slow', tool);
    await flow.run({ q: 'go' });
    expect(flow.backpack.unpack('answer')).toBe('done');
    expect(flow.backpack.unpack<ToolResultRecord[]>('toolResults')).toEqual([{ toolCallId: 'c1', toolName: 'slow', error: "Tool 'slow' timed out after 30 ms", attempts: 1 }]);
  });

  it('refuses a timeoutMs that is not a positive integer, naming the node and the tool', () => {
    const flow = new Flow();
    expect(() => flow.addNode(AgentNode, { id: 'agent', promptFrom: 'q' }).registerTool('slow', stuckTool(-1).tool)).toThrow("Node 'agent': tool 'slow' has timeoutMs -1");
  });
});

describe('an injected model that ignores the abort signal', () => {
  /** A model whose calls never settle; `started` when called. */
  const hanging = (started: () => void = () => undefined) =>
    new MockLanguageModelV3({ doGenerate: () => (started(), new Promise(() => undefined)), doStream: () => (started(), new Promise(() => undefined)) });

  it.each([false, true])('does not keep the run alive (stream: %s): the error names the model call', async (stream) => {
    const controller = new AbortController();
    const flow = new Flow({ deps: depsOf({ model: hanging(() => setTimeout(() => controller.abort(new Error('user stop')), 20)) }) });
    flow.addNode(ChatNode, { id: 'chat', promptFrom: 'q', stream });
    const error = await failureOf(flow.run({ q: 'hi' }, { signal: controller.signal }));
    expect(error.message).toMatch(/node 'chat': model injected:model \(chat\) was stopped: the run was aborted \(user stop\)/);
    expect(rootCause(error).message).toBe('user stop');
  });

  it('is stopped by timeoutMs: a ModelTimeoutError naming the model call', async () => {
    const flow = new Flow({ deps: depsOf({ model: hanging() }) });
    flow.addNode(ChatNode, { id: 'chat', promptFrom: 'q', timeoutMs: 40 });
    const error = await failureOf(flow.run({ q: 'hi' }));
    const timeout = findCause(error, ModelTimeoutError);
    expect(timeout).toBeInstanceOf(ModelTimeoutError);
    expect(timeout!.message).toBe("node 'chat': model injected:model (chat) timed out after 40 ms");
  });
});

/** The first error of class `type` in `error`'s cause chain. */
function findCause<T extends Error>(error: unknown, type: new (...args: never[]) => T): T | undefined {
  for (let e = error; e instanceof Error; e = e.cause) if (e instanceof type) return e;
  return undefined;
}
