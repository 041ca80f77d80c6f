import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { StreamEventType } from '../../src/events/index.js';
import type { BackpackHandle } from '../../src/backpack/index.js';
import { BackpackNode, Flow } from '../../src/nodes/index.js';
import {
  AgentNode,
  ANSWER_ACTION,
  defineTool,
  FinalAnswerNode,
  flowTool,
  TOOLS_ACTION,
  ToolExecutionNode,
  ToolParamGenerationNode,
  type ToolResultRecord,
} from '../../src/nodes/llm/index.js';
import { promptText, startOpenAIServer, type OpenAIServer } from './fixtures/openai-server.js';
import { depsOf, recordingStreamer } from './helpers.js';

let server: OpenAIServer;
beforeAll(async () => (server = await startOpenAIServer()));
afterAll(() => server.close());
beforeEach(() => {
  server.requests.length = 0;
  server.respondWith(() => ({ kind: 'error', status: 500, message: 'no reply scripted' }));
});

const connection = () => ({ model: 'openai-compatible:test-model', baseURL: server.baseURL, apiKey: 'sk-agent-0123456789', retry: { baseDelayMs: 1 } });

const weather = defineTool({
  description: 'Current temperature of a city',
  inputSchema: z.object({ city: z.string() }),
  execute: ({ city }) => ({ city, celsius: city === 'Oslo' ? 4 : 21 }),
});

describe('AgentNode', () => {
  it('runs the tool loop: tool calls, results back to the model, answer; TOOL_CALL and TOOL_RESULT events', async () => {
    const { streamer, events } = recordingStreamer();
    const flow = new Flow({ eventStreamer: streamer });
    const agent = flow.addNode(AgentNode, { id: 'agent', promptFrom: 'question', ...connection() });
    agent.registerTool('weather', weather);
    server.enqueue({ kind: 'tool_calls', calls: [{ id: 'call_1', name: 'weather', arguments: { city: 'Oslo' } }] }, { kind: 'text', text: 'It is 4 degrees in Oslo.' });
    await flow.run({ question: 'How warm is Oslo?' });

    expect(flow.backpack.unpack('answer')).toBe('It is 4 degrees in Oslo.');
    expect(server.requests[0]!.body.tools?.map((t) => t.function.name)).toEqual(['weather']);
    const second = server.requests[1]!.body.messages;
    expect(second.at(-2)).toMatchObject({ role: 'assistant', tool_calls: [{ id: 'call_1', function: { name: 'weather' } }] });
    expect(second.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_1' });
    expect(JSON.parse(String(second.at(-1)!.content))).toEqual({ city: 'Oslo', celsius: 4 });
    const toolEvents = events.filter((e) => e.type === StreamEventType.TOOL_CALL || e.type === StreamEventType.TOOL_RESULT);
    expect(toolEvents.map((e) => [e.type, e.payload.toolName])).toEqual([
      [StreamEventType.TOOL_CALL, 'weather'],
      [StreamEventType.TOOL_RESULT, 'weather'],
    ]);
    expect(toolEvents[1]!.payload.output).toEqual({ city: 'Oslo', celsius: 4 });
    expect(flow.backpack.unpack<ToolResultRecord[]>('toolResults')).toEqual([{ toolCallId: 'call_1', toolName: 'weather', output: { city: 'Oslo', celsius: 4 }, attempts: 1 }]);
  });

  it('shows a failing tool, an unknown tool and invalid input to the model as error results', async () => {
    const flow = new Flow({
      deps: depsOf({ tools: { broken: defineTool({ description: 'fails', inputSchema: z.object({}), execute: () => Promise.reject(new Error('index offline')) }), weather } }),
    });
    flow.addNode(AgentNode, { id: 'agent', promptFrom: 'question', tools: ['broken', 'weather'], ...connection() });
    server.enqueue(
      {
        kind: 'tool_calls',
        calls: [
          { id: 'c1', name: 'broken', arguments: {} },
          { id: 'c2', name: 'nonexistent', arguments: {} },
          { id: 'c3', name: 'weather', arguments: { town: 'Oslo' } },
        ],
      },
      { kind: 'text', text: 'Sorry, the search index is offline.' },
    );
    await flow.run({ question: 'q' });
    const tools = server.requests[1]!.body.messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
    expect(tools).toHaveLength(3);
    expect(tools[0]).toContain("Tool 'broken' failed: index offline");
    expect(tools[1]).toContain("Unknown tool 'nonexistent'");
    expect(tools[2]).toMatch(/Invalid input for tool 'weather': city: /);
    expect(flow.backpack.unpack('answer')).toBe('Sorry, the search index is offline.');
  });

  it('stops calling tools after maxSteps and asks for an answer without tools', async () => {
    const flow = new Flow();
    flow.addNode(AgentNode, { id: 'agent', promptFrom: 'question', maxSteps: 2, ...connection() }).registerTool('weather', weather);
    let n = 0;
    server.respondWith((req) => (req.body.tools ? { kind: 'tool_calls', calls: [{ id: `c${++n}`, name: 'weather', arguments: { city: 'Rome' } }] } : { kind: 'text', text: 'forced answer' }));
    await flow.run({ question: 'loop forever' });
    expect(server.requests).toHaveLength(3);
    expect(server.requests[2]!.body.tools).toBeUndefined();
    expect(flow.backpack.unpack('answer')).toBe('forced answer');
  });

  it('takes a tool made of nodes: the flow runs in the tool namespace with the validated input', async () => {
    class Doubler extends BackpackNode {
      override post(backpack: BackpackHandle): undefined {
        const { n } = backpack.unpackRequired<{ n: number }>('toolInput');
        backpack.pack('toolOutput', { doubled: n * 2 });
        return undefined;
      }
    }
    const { streamer, events } = recordingStreamer();
    const flow = new Flow({ eventStreamer: streamer });
    const agent = flow.addNode(AgentNode, { id: 'agent', promptFrom: 'question', ...connection() });
    agent.registerTool(
      'double',
      flowTool({ description: 'Doubles n', inputSchema: z.object({ n: z.number() }), inputTo: 'toolInput', outputFrom: 'toolOutput', build: (f) => void f.addNode(Doubler, { id: 'doubler' }) }),
    );
    server.enqueue({ kind: 'tool_calls', calls: [{ id: 'c1', name: 'double', arguments: { n: 21 } }] }, { kind: 'text', text: '42' });
    await flow.run({ question: 'double 21' });
    expect(JSON.parse(String(server.requests[1]!.body.messages.at(-1)!.content))).toEqual({ doubled: 42 });
    expect(flow.backpack.getItem('toolOutput')?.metadata.sourceNamespace).toBe('agent.tools.double.doubler');
    const agentSpan = events.find((e) => e.type === StreamEventType.NODE_START && e.nodeId === 'agent')!.spanId;
    expect(events.find((e) => e.type === StreamEventType.NODE_START && e.nodeId === 'doubler')!.parentSpanId).toBe(agentSpan);
  });

  it('names a tool that is neither registered nor in the toolbox', async () => {
    const flow = new Flow();
    flow.addNode(AgentNode, { id: 'agent', promptFrom: 'question', tools: ['ghost'], ...connection() });
    await expect(flow.run({ question: 'q' })).rejects.toThrow(/Node 'agent': tool 'ghost' is neither registered on the node nor in the 'tools' dependency/);
    expect(server.requests).toHaveLength(0);
  });
});

describe('tool loop as separate nodes (state hygiene, PRD-001 SC-1)', () => {
  function handBuiltFlow(lookup: ReturnType<typeof defineTool>) {
    const flow = new Flow({ deps: depsOf({ tools: { lookup } }) });
    const plan = flow.addNode(ToolParamGenerationNode, { id: 'plan', promptFrom: 'question', conversation: 'messages', tools: ['lookup'], ...connection() });
    const run = flow.addNode(ToolExecutionNode, { id: 'run-tools', tools: ['lookup'], conversation: 'messages', toolAttempts: 2 });
    const final = flow.addNode(FinalAnswerNode, { id: 'final', conversation: 'messages', contextNamespace: '**', ...connection() });
    plan.on(TOOLS_ACTION, run);
    run.next(plan);
    plan.on(ANSWER_ACTION, final);
    return flow;
  }

  it('a tool failure that a retry fixed is quarantined and never reaches a downstream prompt', async () => {
    let calls = 0;
    const lookup = defineTool({
      description: 'Looks up an order',
      inputSchema: z.object({ order: z.string() }),
      execute: ({ order }) => {
        if (++calls === 1) throw new Error('connection reset (debug token ERR-7731-POISON)');
        return { order, status: 'shipped' };
      },
    });
    const flow = handBuiltFlow(lookup);
    server.enqueue(
      { kind: 'tool_calls', calls: [{ id: 'call_9', name: 'lookup', arguments: { order: 'A-1' } }] },
      { kind: 'text', text: 'done looking' },
      { kind: 'text', text: 'Order A-1 has shipped.' },
    );
    await flow.run({ question: 'Where is order A-1?' });

    expect(flow.backpack.unpack('answer')).toBe('Order A-1 has shipped.');
    expect(server.requests).toHaveLength(3);
    for (const request of server.requests) expect(request.raw).not.toContain('ERR-7731-POISON');
    const finalPrompt = promptText(server.requests[2]!);
    expect(finalPrompt).toContain('shipped');
    expect(finalPrompt).toContain('Context:');
    const failed = flow.backpack.getQuarantined().get('run-tools.failed.tool-lookup-call_9.1');
    expect(failed?.value).toMatchObject({ error: expect.stringContaining('ERR-7731-POISON') });
    expect(failed?.quarantine.reason).toMatch(/attempt 1 failed/);
  });

  it('a tool that keeps failing is shown to the model as its error result', async () => {
    const lookup = defineTool({ description: 'Looks up an order', inputSchema: z.object({ order: z.string() }), execute: () => Promise.reject(new Error('order service down')) });
    const flow = handBuiltFlow(lookup);
    server.enqueue(
      { kind: 'tool_calls', calls: [{ id: 'call_1', name: 'lookup', arguments: { order: 'A-1' } }] },
      { kind: 'text', text: 'The order service is down.' },
      { kind: 'text', text: 'Sorry, I cannot check orders right now.' },
    );
    await flow.run({ question: 'Where is order A-1?' });
    expect(promptText(server.requests[1]!)).toContain("Tool 'lookup' failed: order service down");
    expect(flow.backpack.unpack<ToolResultRecord[]>('toolResults')).toEqual([
      { toolCallId: 'call_1', toolName: 'lookup', error: "Tool 'lookup' failed: order service down", attempts: 2 },
    ]);
    expect(flow.backpack.unpack('answer')).toBe('Sorry, I cannot check orders right now.');
  });
});
