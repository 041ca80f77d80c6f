/**
 * Property: the node's own API key (README "MCP tools", last paragraph: removed from "model text and
 * streamed tokens, tool-call arguments, response ids and model names, tool results, errors"), wherever a model or a
 * tool puts it, and whether it came from the `apiKey` param or the provider's env var, is in no file the run writes.
 * Found by the adversarial review of 2026-11-28 (tool errors, env-var keys in tool results, a decision's invalid answer).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Flow } from '../../../src/nodes/index.js';
import { AgentNode, ProviderRegistry, defineTool } from '../../../src/nodes/llm/index.js';
import { runFlow } from '../../../src/runtime/index.js';
import { filesUnder } from '../../support/files.js';

const usage = { inputTokens: { total: 5, noCache: 5, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 2, text: 2, reasoning: undefined } };
type Where = 'model-text' | 'tool-args' | 'tool-output' | 'tool-error' | 'response-id';

const saved = process.env.AUDIT_PROP_KEY;
afterAll(() => {
  if (saved === undefined) delete process.env.AUDIT_PROP_KEY;
  else process.env.AUDIT_PROP_KEY = saved;
});

describe('the node API key never reaches disk', () => {
  it('holds for every place a model or tool can echo it, key from param or env', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.stringMatching(/^[a-z0-9]{12,24}$/),
        fc.constantFrom<Where>('model-text', 'tool-args', 'tool-output', 'tool-error', 'response-id'),
        fc.constantFrom('param', 'env'),
        fc.integer({ min: 1, max: 2 }),
        async (key, where, source, toolAttempts) => {
          let turn = 0;
          const model = new MockLanguageModelV3({
            doGenerate: async () => {
              if (turn++ === 0) {
                const q = where === 'tool-args' ? `use ${key}` : 'x';
                return { content: [{ type: 'tool-call' as const, toolCallId: 'c1', toolName: 'echo', input: JSON.stringify({ q }) }], finishReason: { unified: 'tool-calls' as const, raw: 'tool_calls' }, usage, warnings: [], ...(where === 'response-id' ? { response: { id: `resp-${key}` } } : {}) };
              }
              return { content: [{ type: 'text' as const, text: where === 'model-text' ? `the key is ${key}` : 'ok' }], finishReason: { unified: 'stop' as const, raw: 'stop' }, usage, warnings: [] };
            },
          });
          const registry = new ProviderRegistry().register('acme', async () => () => model, { apiKeyEnv: 'AUDIT_PROP_KEY' });
          class Agent extends AgentNode {
            static override providers = registry;
          }
          process.env.AUDIT_PROP_KEY = key;
          const flow = new Flow({});
          const agent = flow.addNode(Agent, { id: 'agent', promptFrom: 'question', model: 'acme:m', toolAttempts, ...(source === 'param' ? { apiKey: key } : {}) });
          agent.registerTool(
            'echo',
            defineTool({
              description: 'echo',
              inputSchema: z.object({ q: z.string() }),
              execute: ({ q }) => {
                if (where === 'tool-error') throw new Error(`denied for ${key}`);
                return { q, seen: where === 'tool-output' ? key : 'nothing' };
              },
            }),
          );
          const dataDir = mkdtempSync(join(tmpdir(), 'audit-s21b-prop-'));
          await runFlow(flow, { dataDir, runId: `p${n++}`, input: { question: 'hi' } });
          const leaking = filesUnder(dataDir).filter((f) => readFileSync(f, 'latin1').includes(key));
          expect(leaking.map((f) => f.slice(dataDir.length))).toEqual([]);
        },
      ),
      { numRuns: 40, seed: 2121 },
    );
  }, 120_000);
});
