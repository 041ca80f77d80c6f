/**
 * A node that runs tools before any model call of its own learns the key its model would be resolved with (the
 * provider's env var) before it emits the first tool event: the tool.called event of a call whose input quotes that
 * key does not carry it (audit-s23b F6).
 */
import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { StreamEventType } from '../../../src/events/index.js';
import { Flow } from '../../../src/nodes/index.js';
import { defineTool, ProviderRegistry, ToolExecutionNode, toolExecutionParamsSchema } from '../../../src/nodes/llm/index.js';
import { recordingStreamer } from '../../llm/helpers.js';

const KEY = 'zq4711selfhostedkeyzq'; // no known shape: only the node knows it is a secret

const saved = process.env.AUDIT_TOOL_KEY;
afterEach(() => {
  if (saved === undefined) delete process.env.AUDIT_TOOL_KEY;
  else process.env.AUDIT_TOOL_KEY = saved;
});

describe('tool.called of a node that has not called its model yet', () => {
  it("does not carry the key the node's model is resolved with from its provider's env var", async () => {
    process.env.AUDIT_TOOL_KEY = KEY;
    const registry = new ProviderRegistry().register('acme', async () => () => new MockLanguageModelV3(), { apiKeyEnv: 'AUDIT_TOOL_KEY' });
    // A tool runner with a model of its own (for a later step), whose tools run first.
    class ModelToolRunner extends ToolExecutionNode {
      static override providers = registry;
      static override paramsSchema: z.ZodType = toolExecutionParamsSchema.extend({ model: z.string() });
    }
    const { streamer, events } = recordingStreamer();
    const flow = new Flow({ eventStreamer: streamer });
    flow.addNode(ModelToolRunner, { id: 'runner', model: 'acme:m1' }).registerTool('lookup', defineTool({ description: 'looks up', inputSchema: z.object({ q: z.string() }), execute: () => 'found' }));
    await flow.run({ toolCalls: [{ toolCallId: 'c1', toolName: 'lookup', input: { q: `the key is ${KEY}` } }] });
    const called = events.filter((e) => e.type === StreamEventType.TOOL_CALL);
    expect(called).toHaveLength(1);
    expect(called[0]!.payload.input).toEqual({ q: 'the key is ***' });
  });
});
