/**
 * Model and tool spans in the OpenTelemetry GenAI conventions, recorded by the OpenTelemetry SDK itself
 * (BasicTracerProvider with its in-memory exporter) from a durable run of an AgentNode on the AI SDK's mock model.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { GENAI_SEMCONV_VERSION, attachOpenTelemetry, providerName } from '../../src/events/index.js';
import { BackpackNode, Flow } from '../../src/nodes/index.js';
import { AgentNode, defineTool } from '../../src/nodes/llm/index.js';
import { runFlow } from '../../src/runtime/index.js';

const dataDir = mkdtempSync(join(tmpdir(), 'bpf-otel-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const usage = { inputTokens: { total: 11, noCache: 11, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 4, text: 4, reasoning: undefined } };

function model(): MockLanguageModelV3 {
  let turn = 0;
  return new MockLanguageModelV3({
    provider: 'openai.chat',
    modelId: 'gpt-4o',
    doGenerate: async () =>
      turn++ === 0
        ? {
            content: [
              { type: 'tool-call', toolCallId: 'call-1', toolName: 'weather', input: '{"city":"Oslo"}' },
              { type: 'tool-call', toolCallId: 'call-2', toolName: 'broken', input: '{}' },
            ],
            finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
            usage,
            warnings: [],
            response: { id: 'resp-1', modelId: 'gpt-4o-2024-08-06', timestamp: new Date(0) },
          }
        : { content: [{ type: 'text', text: 'It is 4 degrees.' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [], response: { id: 'resp-2', modelId: 'gpt-4o-2024-08-06', timestamp: new Date(0) } },
  });
}

class Ask extends BackpackNode {
  override post(backpack: Parameters<BackpackNode['post']>[0]) {
    backpack.pack('question', 'How warm is Oslo?');
    return undefined;
  }
}

let runs = 0;
async function tracedRun(): Promise<ReadableSpan[]> {
  const runId = `otel-run-${++runs}`;
  const mock = model();
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const flow = new Flow({ namespace: 'weather', deps: { has: (k) => k === 'model', get: () => mock as never } });
  const ask = flow.addNode(Ask, { id: 'ask' });
  const agent = flow.addNode(AgentNode, { id: 'agent', promptFrom: 'question', temperature: 0.2 });
  agent.registerTool('weather', defineTool({ description: 'temperature', inputSchema: z.object({ city: z.string() }), execute: () => ({ celsius: 4 }) }));
  agent.registerTool('broken', defineTool({ description: 'fails', inputSchema: z.object({}), execute: () => { throw new Error('no sensor'); } }));
  ask.next(agent);
  const detach = await attachOpenTelemetry(flow.eventStreamer, { tracer: provider.getTracer('backpackflow') });
  await runFlow(flow, { dataDir, runId });
  detach();
  return exporter.getFinishedSpans();
}

describe('OpenTelemetry GenAI spans', () => {
  it('pins the conventions version it follows', () => {
    expect(GENAI_SEMCONV_VERSION).toMatch(/^1\.\d+\.\d+$/);
  });

  it('a model call is a CLIENT span "chat <model>" with gen_ai.* attributes and backpackflow.* attributes, under its node', async () => {
    const spans = await tracedRun();
    const byName = (name: string) => spans.filter((s) => s.name === name);
    const chats = byName('chat gpt-4o');
    expect(chats).toHaveLength(2);
    const [first] = chats;
    const agentSpan = byName('weather.agent')[0]!;
    expect(first!.kind).toBe(SpanKind.CLIENT);
    expect(first!.parentSpanContext?.spanId).toBe(agentSpan.spanContext().spanId);
    expect(first!.attributes['gen_ai.operation.name']).toBe('chat');
    expect(first!.attributes['gen_ai.provider.name']).toBe('openai');
    expect(first!.attributes['gen_ai.request.model']).toBe('gpt-4o');
    expect(first!.attributes['gen_ai.request.temperature']).toBe(0.2);
    expect(first!.attributes['gen_ai.response.model']).toBe('gpt-4o-2024-08-06');
    expect(first!.attributes['gen_ai.response.id']).toBe('resp-1');
    expect(first!.attributes['gen_ai.response.finish_reasons']).toEqual(['tool-calls']);
    expect(first!.attributes['gen_ai.usage.input_tokens']).toBe(11);
    expect(first!.attributes['gen_ai.usage.output_tokens']).toBe(4);
    expect(first!.attributes['backpackflow.run_id']).toBe('otel-run-1');
    expect(first!.attributes['backpackflow.namespace']).toBe('weather.agent');
    // The agent is the run's second step (ask is the first).
    expect(first!.attributes['backpackflow.step']).toBe(2);
    expect(byName('weather.ask')[0]!.attributes['backpackflow.step']).toBe(1);
  });

  it('a tool call is a span "execute_tool <tool>" with the tool name and call id; a failed one has an error status', async () => {
    const spans = await tracedRun();
    const agentSpan = spans.find((s) => s.name === 'weather.agent')!;
    const weather = spans.find((s) => s.name === 'execute_tool weather')!;
    expect(weather.parentSpanContext?.spanId).toBe(agentSpan.spanContext().spanId);
    expect(weather.attributes['gen_ai.operation.name']).toBe('execute_tool');
    expect(weather.attributes['gen_ai.tool.name']).toBe('weather');
    expect(weather.attributes['gen_ai.tool.call.id']).toBe('call-1');
    expect(weather.attributes['gen_ai.tool.type']).toBe('function');
    expect(weather.attributes['backpackflow.step']).toBe(2);
    expect(weather.status.code).not.toBe(SpanStatusCode.ERROR);
    const broken = spans.find((s) => s.name === 'execute_tool broken')!;
    expect(broken.attributes['gen_ai.tool.call.id']).toBe('call-2');
    expect(broken.status.code).toBe(SpanStatusCode.ERROR);
    expect(broken.attributes['error.type']).toBe('ToolError');
  });

  it('names providers as the conventions do', () => {
    expect(providerName('anthropic.messages', undefined)).toBe('anthropic');
    expect(providerName('mistral.chat', undefined)).toBe('mistral_ai');
    expect(providerName(undefined, 'openai-compatible:llama')).toBe('openai-compatible');
    expect(providerName(undefined, undefined)).toBe('unknown');
  });
});
