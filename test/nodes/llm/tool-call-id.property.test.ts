/**
 * The tool-call id is the model's choice: any id (dots, `..`, a trailing '.', `*`, a long one) is answered like any
 * other when its tool fails and is retried. Its failed attempt is packed under a key segment made safe from it
 * (`keySegment`), the raw id kept inside the packed value: no id can make a key invalid or add key segments.
 */
import { MockLanguageModelV3 } from 'ai/test';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Flow } from '../../../src/nodes/index.js';
import { AgentNode, type ToolResultRecord } from '../../../src/nodes/llm/index.js';
import { keySegment } from '../../../src/nodes/llm/llm-node.js';
import { depsOf } from '../../llm/helpers.js';
import { trials } from '../../support/soak.js';

const usage = {
  inputTokens: { total: 7, noCache: 7, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 3, text: 3, reasoning: undefined },
};

/** Runs an agent whose model calls tool `flaky` with `toolCallId`; the tool fails once, then works (2 attempts). */
async function runWithId(toolCallId: string) {
  let calls = 0;
  const model = new MockLanguageModelV3({
    doGenerate: async () =>
      calls++ === 0
        ? { content: [{ type: 'tool-call', toolCallId, toolName: 'flaky', input: '{}' }], finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [] }
        : { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] },
  });
  let runs = 0;
  const flow = new Flow({ deps: depsOf({ model }) });
  flow.addNode(AgentNode, { id: 'agent', promptFrom: 'q', toolAttempts: 2 }).registerTool('flaky', {
    description: 'fails once',
    inputSchema: z.object({}),
    execute: () => {
      if (++runs === 1) throw new Error('transient');
      return { ok: true };
    },
  });
  await flow.run({ q: 'go' });
  return { flow, runs };
}

const hostileId = fc.oneof(
  fc.constantFrom('call..1', 'call.', '.call', '.', '..', 'a.b.c', '*', '**', '__proto__', 'call 1', 'x'.repeat(5000)),
  fc.string({ unit: fc.constantFrom('.', 'a', '-', '_', '*', '/', ' ', '~', 'é'), minLength: 1, maxLength: 80 }),
  fc.string({ minLength: 1, maxLength: 100, unit: 'binary' }),
);

describe('model-chosen tool-call ids', () => {
  it('of any form are answered like any other: the retried tool runs twice, the failure is quarantined under a safe key (property)', async () => {
    await fc.assert(
      fc.asyncProperty(hostileId, async (toolCallId) => {
        const { flow, runs } = await runWithId(toolCallId);
        expect(runs).toBe(2);
        expect(flow.backpack.unpack('answer')).toBe('done');
        expect(flow.backpack.unpack<ToolResultRecord[]>('toolResults')).toEqual([{ toolCallId, toolName: 'flaky', output: { ok: true }, attempts: 2 }]);
        const key = `agent.failed.tool-flaky-${keySegment(toolCallId)}.1`;
        const failed = flow.backpack.getQuarantined().get(key);
        expect(failed?.value).toMatchObject({ attempt: 1, error: "Tool 'flaky' failed: transient", toolCallId });
        expect(key.split('.')).toHaveLength(4);
      }),
      { numRuns: trials(25, 300) },
    );
  });

  it('keep a plain id as it is, and make every other one a short hash, distinct per id (property)', () => {
    expect(keySegment('call_abc-123')).toBe('call_abc-123');
    fc.assert(
      fc.property(fc.string({ maxLength: 200, unit: 'binary' }), fc.string({ maxLength: 200, unit: 'binary' }), (a, b) => {
        const segment = keySegment(a);
        expect(segment).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
        if (a !== b) expect(keySegment(b)).not.toBe(segment);
      }),
    );
  });
});
