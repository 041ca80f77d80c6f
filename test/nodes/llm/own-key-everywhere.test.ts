/**
 * The node's own API key (README: "removed (***) from everything the node emits or packs: ... tool results,
 * errors") may be a self-hosted endpoint's key that the run's redaction cannot recognise: a tool (or an MCP server)
 * that echoes it in an error, a tool result quoting the key the provider's env var gave, and a decision model's
 * invalid answer quoting it never reach the events, the Backpack or the files on disk (adversarial review, 2026-11-28).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { StreamEventType, type StreamEvent } from '../../../src/events/index.js';
import { Flow } from '../../../src/nodes/index.js';
import { AgentNode, DecisionNode, ProviderRegistry, defineTool } from '../../../src/nodes/llm/index.js';
import { scriptedModel } from '../../llm/helpers.js';
import { runFlow } from '../../../src/runtime/index.js';
import { depsOf } from '../../llm/helpers.js';
import { filesUnder } from '../../support/files.js';

const KEY = 'zq4711selfhostedkeyzq'; // lower-case, no known shape: only the node knows it is a secret

const usage = { inputTokens: { total: 5, noCache: 5, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 2, text: 2, reasoning: undefined } };
function callingModel(toolName: string): MockLanguageModelV3 {
  let turn = 0;
  return new MockLanguageModelV3({
    doGenerate: async () =>
      turn++ === 0
        ? { content: [{ type: 'tool-call' as const, toolCallId: 'c1', toolName, input: '{"q":"x"}' }], finishReason: { unified: 'tool-calls' as const, raw: 'tool_calls' }, usage, warnings: [] }
        : { content: [{ type: 'text' as const, text: 'ok' }], finishReason: { unified: 'stop' as const, raw: 'stop' }, usage, warnings: [] },
  });
}

const saved = process.env.AUDIT_LLM_KEY;
afterEach(() => {
  if (saved === undefined) delete process.env.AUDIT_LLM_KEY;
  else process.env.AUDIT_LLM_KEY = saved;
});

describe('the node API key in tool errors and results', () => {
  it("a tool's error that quotes the node's apiKey param is removed from tool.result, the packed toolResults and the files on disk", async () => {
    const echoingTool = defineTool({
      description: 'calls the endpoint',
      inputSchema: z.object({ q: z.string() }),
      execute: () => {
        throw new Error(`401 from upstream: key ${KEY} is not allowed`);
      },
    });
    const events: StreamEvent[] = [];
    const flow = new Flow({ deps: depsOf({ model: callingModel('lookup') }) });
    flow.eventStreamer.on('*', (e) => void events.push(e));
    const agent = flow.addNode(AgentNode, { id: 'agent', promptFrom: 'question', apiKey: KEY, toolAttempts: 2 });
    agent.registerTool('lookup', echoingTool);
    const dataDir = mkdtempSync(join(tmpdir(), 'audit-s21b-'));
    await runFlow(flow, { dataDir, runId: 'r1', input: { question: 'hi' } });

    const leaking = filesUnder(dataDir).filter((f) => readFileSync(f, 'latin1').includes(KEY));
    expect(leaking.map((f) => f.slice(dataDir.length))).toEqual([]);
    const resultEvents = events.filter((e) => e.type === StreamEventType.TOOL_RESULT);
    expect(resultEvents.length).toBe(1);
    expect(JSON.stringify(resultEvents)).not.toContain(KEY);
    expect(JSON.stringify(flow.backpack.unpack('toolResults'))).not.toContain(KEY);
    // the retried attempt is packed (quarantined) with the error text too
    expect(JSON.stringify(flow.backpack.getHistory())).not.toContain(KEY);
  });

  it("a tool's result that quotes the key the node read from its provider's env var is removed (README: 'its apiKey param, or the provider's env var')", async () => {
    process.env.AUDIT_LLM_KEY = KEY;
    const model = callingModel('whoami');
    const registry = new ProviderRegistry().register('acme', async () => () => model, { apiKeyEnv: 'AUDIT_LLM_KEY' });
    class AcmeAgent extends AgentNode {
      static override providers = registry;
    }
    const events: StreamEvent[] = [];
    const flow = new Flow({});
    flow.eventStreamer.on('*', (e) => void events.push(e));
    const agent = flow.addNode(AcmeAgent, { id: 'agent', promptFrom: 'question', model: 'acme:m1' });
    agent.registerTool('whoami', defineTool({ description: 'who', inputSchema: z.object({ q: z.string() }), execute: () => ({ headerSent: `Authorization: Token ${KEY}` }) }));
    const dataDir = mkdtempSync(join(tmpdir(), 'audit-s21b-'));
    await runFlow(flow, { dataDir, runId: 'r2', input: { question: 'hi' } });
    const leaking = filesUnder(dataDir).filter((f) => readFileSync(f, 'latin1').includes(KEY));
    expect(leaking.map((f) => f.slice(dataDir.length))).toEqual([]);
    expect(JSON.stringify(events.filter((e) => e.type === StreamEventType.TOOL_RESULT))).not.toContain(KEY);
    expect(JSON.stringify(flow.backpack.unpack('toolResults'))).not.toContain(KEY);
  });

  it("a decision model's invalid answer that echoes the node's apiKey is not packed or stored with the key (README: removed from model text)", async () => {
    const { model } = scriptedModel([`{"action":"launch","reason":"my key is ${KEY}"}`, '{"action":"stop"}']);
    const flow = new Flow({ deps: depsOf({ model }) });
    flow.addNode(DecisionNode, { id: 'decide', promptFrom: 'question', apiKey: KEY, actions: ['go', 'stop'] });
    const dataDir = mkdtempSync(join(tmpdir(), 'audit-s21b-'));
    await runFlow(flow, { dataDir, runId: 'r3', input: { question: 'hi' } });
    const leaking = filesUnder(dataDir).filter((f) => readFileSync(f, 'latin1').includes(KEY));
    expect(leaking.map((f) => f.slice(dataDir.length))).toEqual([]);
    expect(JSON.stringify(flow.backpack.getHistory())).not.toContain(KEY);
  });
});
