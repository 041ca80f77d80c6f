/**
 * The OpenTelemetry bridge as an export boundary (adversarial review of 2026-11-28): two model calls of one node
 * with one purpose at once are two ended spans, each ended by its own call's end (LlmNode numbers its calls); a value a node emits where text was expected reaches no tracer as it is (its text, redacted); and span names,
 * attributes, statuses and events are bounded (MAX_ATTRIBUTE_LENGTH). Real SDK (BasicTracerProvider and an in-memory
 * exporter) where the behaviour shows there; a recording tracer where the bridge's own contract is what is checked.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as otelApi from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, describe, expect, it } from 'vitest';
import {
  attachOpenTelemetry,
  bridgeToOpenTelemetry,
  EventStreamer,
  StreamEventType as T,
  type OtelApi,
  type OtelAttributes,
  type OtelSpan,
  type OtelTracer,
} from '../../src/events/index.js';
import { Flow } from '../../src/nodes/index.js';
import { LlmNode } from '../../src/nodes/llm/index.js';
import { runFlow } from '../../src/runtime/index.js';

const dataDir = mkdtempSync(join(tmpdir(), 'audit-s21e-otel-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const usage = { inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 2, text: 2, reasoning: undefined } };
/** A mock model whose n-th call answers `resp-n` after `delays[n - 1]` ms (default: 5 ms × n, the first call ends first). */
function model(delays?: number[]): MockLanguageModelV3 {
  let n = 0;
  return new MockLanguageModelV3({
    provider: 'openai.chat',
    modelId: 'gpt-4o',
    doGenerate: async () => {
      const i = ++n;
      await new Promise((r) => setTimeout(r, delays?.[i - 1] ?? 5 * i));
      return { content: [{ type: 'text', text: `part ${i}` }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [], response: { id: `resp-${i}`, modelId: 'gpt-4o', timestamp: new Date(0) } };
    },
  });
}

/** A map-reduce node: summarizes two chunks with two concurrent model calls of the same purpose. */
class MapSummarize extends LlmNode {
  override async exec(): Promise<unknown> {
    const ask = (text: string) => this.callModel({ purpose: 'summarize', messages: [{ role: 'user', content: text }] });
    return Promise.all([ask('chunk one'), ask('chunk two')]);
  }
}

/** Two model calls of one purpose, the second started 40 ms after the first, both awaited together. */
class StaggeredSummarize extends LlmNode {
  override async exec(): Promise<unknown> {
    const ask = (text: string) => this.callModel({ purpose: 'summarize', messages: [{ role: 'user', content: text }] });
    const first = ask('chunk one');
    await new Promise((r) => setTimeout(r, 40));
    return Promise.all([first, ask('chunk two')]);
  }
}

describe('OpenTelemetry bridge', () => {
  it('two concurrent model calls of one node (same purpose) are two ended, exported chat spans', async () => {
    const mock = model();
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const flow = new Flow({ namespace: 'mr', deps: { has: (k) => k === 'model', get: () => mock as never } });
    flow.addNode(MapSummarize, { id: 'map', model: 'openai:gpt-4o' });
    const detach = await attachOpenTelemetry(flow.eventStreamer, { tracer: provider.getTracer('backpackflow') });
    await runFlow(flow, { dataDir, runId: 'otel-concurrent-1' });
    detach(); // "a function that detaches the bridge and ends the spans still open"
    expect(mock.doGenerateCalls).toHaveLength(2);
    const chats = exporter.getFinishedSpans().filter((s) => s.name === 'chat gpt-4o');
    // Today the first call's span is replaced in the bridge's map by the second's (same key: node span + purpose):
    // it is never ended, not even by detach, so it is never exported.
    expect(chats).toHaveLength(2);
    expect(chats.map((s) => s.attributes['gen_ai.response.id']).sort()).toEqual(['resp-1', 'resp-2']);
  });

  it('when the first of two concurrent calls ends last, each chat span holds its own call: its response and its end', async () => {
    // The first call starts at once and answers after 250 ms; the second starts 40 ms later and answers after 5 ms
    // (margins for a loaded machine: the test is about which span each end closes, not about timing).
    const mock = model([250, 5]);
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const flow = new Flow({ namespace: 'mr', deps: { has: (k) => k === 'model', get: () => mock as never } });
    flow.addNode(StaggeredSummarize, { id: 'map', model: 'openai:gpt-4o' });
    const detach = await attachOpenTelemetry(flow.eventStreamer, { tracer: provider.getTracer('backpackflow') });
    await runFlow(flow, { dataDir, runId: 'otel-concurrent-2' });
    detach();
    const chats = exporter.getFinishedSpans().filter((s) => s.name === 'chat gpt-4o');
    const ms = (t: [number, number]) => t[0] * 1e3 + t[1] / 1e6;
    const [first, second] = [...chats].sort((a, b) => ms(a.startTime) - ms(b.startTime));
    expect(ms(second!.startTime) - ms(first!.startTime)).toBeGreaterThanOrEqual(20);
    // The span started first is the first call's: it ends last, holding resp-1.
    expect(first!.attributes['gen_ai.response.id']).toBe('resp-1');
    expect(second!.attributes['gen_ai.response.id']).toBe('resp-2');
    expect(ms(first!.endTime)).toBeGreaterThan(ms(second!.endTime));
  });

  it('no secret reaches a span through a non-string attribute value a node emits (purpose as an object)', () => {
    const secret = 'ghp_R8kL2mQ9xZ4vT7wN1bY5cH3jD6fG0aKsPeUi';
    const seen: unknown[] = [];
    const tracer: OtelTracer = {
      startSpan(name: string, options?: { attributes?: OtelAttributes }): OtelSpan {
        seen.push(name, options?.attributes);
        return { setAttribute: (k, v) => seen.push(k, v), addEvent: (n, a) => seen.push(n, a), setStatus: (s) => seen.push(s), recordException: (e) => seen.push(e), end: () => undefined };
      },
    };
    const api: OtelApi = { trace: { getTracer: () => tracer, setSpan: (c) => c }, context: { active: () => ({}) }, SpanStatusCode: { ERROR: 2 } };
    const streamer = new EventStreamer();
    const detach = bridgeToOpenTelemetry(streamer, api, tracer);
    const node = { runId: 'r1', nodeId: 'n', nodeName: 'N', namespace: 'app.n', spanId: 'sA', parentSpanId: 's0' };
    streamer.emit({ runId: 'r1', type: T.RUN_START, spanId: 's0', payload: { flowNamespace: 'app' } });
    streamer.emit({ ...node, type: T.NODE_START });
    // model.* events are what a node may emit itself (README, threat model): their payload is the node's.
    streamer.emit({ ...node, type: T.MODEL_START, payload: { model: 'openai:gpt-4o', purpose: { auth: `token ${secret}` } } as never });
    streamer.emit({ ...node, type: T.MODEL_END, payload: { purpose: { auth: `token ${secret}` }, error: { name: { why: secret }, message: 'x' } } as never });
    streamer.emit({ runId: 'r1', type: T.RUN_END, spanId: 's0', payload: { steps: 1 } });
    detach();
    expect(JSON.stringify(seen)).not.toContain(secret);
  });

  it('span names and attribute values are bounded (a node can emit a tool name of any length)', () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const tracer = provider.getTracer('t') as unknown as OtelTracer;
    const streamer = new EventStreamer();
    const detach = bridgeToOpenTelemetry(streamer, otelApi as unknown as OtelApi, tracer);
    const node = { runId: 'r1', nodeId: 'n', nodeName: 'N', namespace: 'app.n', spanId: 'sA', parentSpanId: 's0' };
    streamer.emit({ runId: 'r1', type: T.RUN_START, spanId: 's0', payload: { flowNamespace: 'app' } });
    streamer.emit({ ...node, type: T.NODE_START });
    streamer.emit({ ...node, type: T.TOOL_CALL, payload: { toolCallId: 'c1', toolName: 'x'.repeat(2_000_000) } });
    streamer.emit({ ...node, type: T.TOOL_RESULT, payload: { toolCallId: 'c1', error: 'e'.repeat(2_000_000) } });
    streamer.emit({ ...node, type: T.ERROR, payload: { phase: 'exec', error: { name: 'E', message: 'm'.repeat(2_000_000) } } });
    streamer.emit({ runId: 'r1', type: T.RUN_END, spanId: 's0', payload: { steps: 1 } });
    detach();
    const bytes = JSON.stringify(exporter.getFinishedSpans().map((s) => [s.name, s.attributes, s.status, s.events])).length;
    // 6 MB of text from a node ends up in three spans today; no limit is documented or applied.
    expect(bytes).toBeLessThan(64 * 1024);
  });
});
