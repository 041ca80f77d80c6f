/**
 * The node's own API key, when a server echoes it in a successful reply (text, response id, model name, tool-call
 * arguments, streamed text split across deltas), is removed before the node emits or packs anything: it reaches
 * neither the events nor the Backpack nor the run's files. The run's redaction does not know such a key (a self-hosted
 * or proxy endpoint's key has no vendor shape); the node does.
 */

import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { MockLanguageModelV3, simulateReadableStream } from 'ai/test';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Flow } from '../../../src/nodes/index.js';
import { AgentNode, ChatNode, type ToolResultRecord } from '../../../src/nodes/llm/index.js';
import { StreamScrubber } from '../../../src/nodes/llm/secrets.js';
import { runFlow } from '../../../src/runtime/durable.js';
import { makeTempDir } from '../../support/temp.js';
import { depsOf, recordingStreamer } from '../../llm/helpers.js';
import { filesHolding } from '../../support/files.js';

/** A key no redaction pattern knows. */
const KEY = 'local-proxy-key-93f1c0ffee';

const usage = {
  inputTokens: { total: 7, noCache: 7, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 3, text: 3, reasoning: undefined },
};

describe("the node's own API key echoed by the server", () => {
  it('reaches no event, Backpack key or file of a durable agent run (text, response id and model, tool arguments, tool result)', async () => {
    let calls = 0;
    const model = new MockLanguageModelV3({
      doGenerate: async () =>
        calls++ === 0
          ? {
              content: [{ type: 'tool-call', toolCallId: `c-${KEY}`, toolName: 'lookup', input: JSON.stringify({ query: `key ${KEY}` }) }],
              finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
              usage,
              warnings: [],
              response: { id: `resp-${KEY}`, modelId: `m-${KEY}` },
            }
          : { content: [{ type: 'text', text: `debug: your key is ${KEY}` }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [], response: { id: `resp-${KEY}`, modelId: `m-${KEY}` } },
    });
    const dataDir = makeTempDir('bf-own-key-', 'test');
    const { streamer, events } = recordingStreamer();
    const seen: unknown[] = [];
    const flow = new Flow({ deps: depsOf({ model }), eventStreamer: streamer });
    flow.addNode(AgentNode, { id: 'agent', promptFrom: 'q', apiKey: KEY, conversation: 'chat' }).registerTool('lookup', {
      description: 'echoes',
      inputSchema: z.object({ query: z.string() }),
      execute: (input) => (seen.push(input), { echoed: `the server said ${KEY}` }),
    });
    const result = await runFlow(flow, { dataDir, input: { q: 'go' } });
    expect(result.status).toBe('completed');

    expect(flow.backpack.unpack('answer')).toBe('debug: your key is ***');
    expect(seen).toEqual([{ query: 'key ***' }]);
    expect(flow.backpack.unpack<ToolResultRecord[]>('toolResults')).toEqual([{ toolCallId: 'c-***', toolName: 'lookup', output: { echoed: 'the server said ***' }, attempts: 1 }]);
    expect(JSON.stringify(events)).not.toContain(KEY);
    expect(JSON.stringify(flow.backpack.exportState())).not.toContain(KEY);
    expect(filesHolding(dataDir, KEY)).toEqual([]);
  });

  it('is removed from streamed text, also when split across deltas', async () => {
    const text = `a ${KEY} b ${KEY}`;
    const pieces = [text.slice(0, 5), text.slice(5, 20), text.slice(20, 31), text.slice(31)];
    const model = new MockLanguageModelV3({
      doStream: async () => ({
        stream: simulateReadableStream<LanguageModelV3StreamPart>({
          chunks: [
            { type: 'text-start', id: 't' },
            ...pieces.map((delta) => ({ type: 'text-delta' as const, id: 't', delta })),
            { type: 'text-end', id: 't' },
            { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
          ],
        }),
      }),
    });
    const { streamer, events } = recordingStreamer();
    const flow = new Flow({ deps: depsOf({ model }), eventStreamer: streamer });
    flow.addNode(ChatNode, { id: 'chat', promptFrom: 'q', apiKey: KEY, stream: true });
    await flow.run({ q: 'go' });
    expect(flow.backpack.unpack('response')).toBe('a *** b ***');
    const deltas = events.filter((e) => e.type === 'model.delta').map((e) => e.payload.delta as string);
    expect(deltas.join('')).toBe('a *** b ***');
    expect(JSON.stringify(events)).not.toContain(KEY);
  });

  it('StreamScrubber passes on all the text but the secret, however it is split (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.constant(KEY), fc.string({ unit: fc.constantFrom('l', 'o', 'c', 'a', '-', 'k', 'e', 'y', ' ') })), { maxLength: 8 }), fc.array(fc.nat(), { maxLength: 10 }), (parts, cuts) => {
        const text = parts.join('');
        const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
        const deltas = [0, ...at, text.length].slice(1).map((end, i, ends) => text.slice(i === 0 ? 0 : ends[i - 1], end));
        const scrubber = new StreamScrubber([KEY]);
        const out = deltas.map((d) => scrubber.push(d));
        out.push(scrubber.flush());
        for (const piece of out) expect(piece).not.toContain(KEY);
        expect(out.join('')).toBe(text.split(KEY).join('***'));
      }),
      { numRuns: 300 },
    );
  });
});
