import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createResearchFlow, researchDependencies, researchLoader } from '../../examples/research-agent/research-agent.js';
import { defineTool, llmNodeTypes, TOOLS_ACTION } from '../../src/nodes/llm/index.js';
import { DependencyContainer, FlowConfigError, FlowLoader, normalizeFlowConfig } from '../../src/serialization/index.js';
import { startOpenAIServer, type OpenAIServer } from './fixtures/openai-server.js';
import { researchResponder } from './fixtures/research-responder.js';

let server: OpenAIServer;
beforeAll(async () => (server = await startOpenAIServer()));
afterAll(() => server.close());
beforeEach(() => {
  server.requests.length = 0;
});

const KEY = 'sk-roundtrip-SECRET-42';

function loader(): FlowLoader {
  const l = new FlowLoader();
  for (const [type, NodeClass] of Object.entries(llmNodeTypes)) l.register(type, NodeClass);
  return l;
}

function configWith(baseURL: string) {
  const connection = { model: 'openai-compatible:m', baseURL, apiKey: '${TEST_LLM_KEY}' };
  return {
    version: '2.0.0',
    namespace: 'support',
    nodes: [
      { type: 'DecisionNode', id: 'route', params: { ...connection, promptFrom: 'ticket', actions: { lookup: 'order questions', chat: 'anything else' } } },
      { type: 'ToolParamGenerationNode', id: 'plan', params: { ...connection, promptFrom: 'ticket', conversation: 'messages', tools: ['orders'] } },
      { type: 'ToolExecutionNode', id: 'run-tools', params: { tools: ['orders'], conversation: 'messages', toolAttempts: 2 } },
      { type: 'FinalAnswerNode', id: 'final', params: { ...connection, conversation: 'messages', systemPrompt: 'Be brief.' } },
      { type: 'ChatNode', id: 'chat', params: { ...connection, promptFrom: 'ticket', temperature: 0.3, stream: true, timeoutMs: 5000, retry: { maxAttempts: 2 } } },
      { type: 'AgentNode', id: 'agent', params: { ...connection, promptFrom: 'ticket', tools: ['orders'], maxSteps: 2 }, maxRetries: 2 },
    ],
    edges: [
      { from: 'route', to: 'plan', condition: 'lookup' },
      { from: 'route', to: 'chat', condition: 'chat' },
      { from: 'plan', to: 'run-tools', condition: TOOLS_ACTION },
      { from: 'run-tools', to: 'final', condition: 'default' },
    ],
  };
}

const orders = defineTool({ description: 'Order status', inputSchema: z.object({ id: z.string() }), execute: ({ id }) => ({ id, status: 'shipped' }) });

describe('LLM nodes through the FlowLoader', () => {
  it('load and export round-trip; the API key is masked on export and resolved from ${ENV} for calls', async () => {
    const config = configWith(server.baseURL);
    const l = loader();
    const flow = await l.loadFlow(config, new DependencyContainer().register('tools', { orders }), { env: { TEST_LLM_KEY: KEY } });
    expect(l.exportFlow(flow, { includeSensitive: true })).toEqual(normalizeFlowConfig(config));
    const exported = l.exportFlow(flow);
    expect(JSON.stringify(exported)).not.toContain(KEY);
    expect(exported.nodes.find((n) => n.id === 'chat')!.params.apiKey).toBe('***');

    server.enqueue(
      { kind: 'text', text: '{"action":"lookup"}' },
      { kind: 'tool_calls', calls: [{ id: 'c1', name: 'orders', arguments: { id: 'A-1' } }] },
      { kind: 'text', text: 'Order A-1 has shipped.' },
    );
    await flow.run({ ticket: 'Where is A-1?' });
    expect(flow.backpack.unpack('answer')).toBe('Order A-1 has shipped.');
    expect(server.requests.map((r) => r.headers.authorization)).toEqual([`Bearer ${KEY}`, `Bearer ${KEY}`, `Bearer ${KEY}`]);
    for (const r of server.requests) expect(r.raw).not.toContain(KEY);
  });

  it('refuses bad LLM params with the node and path', async () => {
    const config = configWith(server.baseURL);
    const nodes: Array<{ params: Record<string, unknown> }> = config.nodes;
    nodes[4]!.params = { ...nodes[4]!.params, temperature: 9 };
    const error = await loader().loadFlow(config, undefined, { env: { TEST_LLM_KEY: KEY } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FlowConfigError);
    expect((error as Error).message).toContain('/nodes/4/params/temperature: Too big');
  });

  it('the research agent composite exports with its internal flow, loads back and runs', async () => {
    server.respondWith(researchResponder);
    const l = researchLoader();
    const built = createResearchFlow({ model: 'openai-compatible:scripted', baseURL: server.baseURL });
    const exported = l.exportFlow(built);
    expect(exported.nodes[0]!.internalFlow?.nodes.map((n) => [n.type, n.id])).toEqual([
      ['AgentNode', 'search'],
      ['ChatNode', 'analysis'],
      ['ChatNode', 'summary'],
    ]);
    const loaded = await l.loadFlow(exported, researchDependencies());
    expect(l.exportFlow(loaded)).toEqual(exported);
    await loaded.run({ query: 'hydrogen seasonal storage' });
    expect(loaded.backpack.unpack('summary')).toContain('Hydrogen for seasonal storage [h2-1]');
  });
});
