import * as otel from '@opentelemetry/api';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  attachOpenTelemetry,
  EventStreamer,
  StreamEventType as T,
  type OtelAttributes,
  type OtelSpan,
  type OtelTracer,
} from '../../src/events/index.js';

/** A span that records what the bridge did to it. */
class RecordingSpan implements OtelSpan {
  attributes: OtelAttributes;
  events: Array<{ name: string; attributes: OtelAttributes | undefined; time: number | undefined }> = [];
  exceptions: Array<{ name: string; message: string }> = [];
  status: { code: number; message?: string } | undefined;
  endTime: number | undefined;
  endCalls = 0;
  constructor(
    readonly name: string,
    readonly parent: RecordingSpan | undefined,
    readonly startTime: number | undefined,
    attributes: OtelAttributes | undefined,
  ) {
    this.attributes = { ...attributes };
  }
  setAttribute(key: string, value: string | number | boolean): this {
    this.attributes[key] = value;
    return this;
  }
  addEvent(name: string, attributes?: OtelAttributes, time?: number): this {
    this.events.push({ name, attributes, time });
    return this;
  }
  setStatus(status: { code: number; message?: string }): this {
    this.status = status;
    return this;
  }
  recordException(exception: { name: string; message: string }): void {
    this.exceptions.push(exception);
  }
  end(endTime?: number): void {
    this.endCalls++;
    this.endTime = endTime;
  }
}

/** A tracer that finds the parent span through the real @opentelemetry/api context, as an SDK tracer does. */
class RecordingTracer implements OtelTracer {
  spans: RecordingSpan[] = [];
  startSpan(name: string, options?: { attributes?: OtelAttributes; startTime?: number }, context?: unknown): RecordingSpan {
    const parent = context === undefined ? undefined : otel.trace.getSpan(context as otel.Context);
    const span = new RecordingSpan(name, parent as unknown as RecordingSpan | undefined, options?.startTime, options?.attributes);
    this.spans.push(span);
    return span;
  }
  byName(name: string): RecordingSpan {
    const span = this.spans.find((s) => s.name === name);
    if (!span) throw new Error(`no span named ${name}; have ${this.spans.map((s) => s.name).join(', ')}`);
    return span;
  }
}

const boom = { name: 'TypeError', message: 'no data' };
const node = (id: string, spanId: string, parentSpanId: string) => ({
  runId: 'r1',
  nodeId: id,
  nodeName: `${id[0]!.toUpperCase()}${id.slice(1)}Node`,
  namespace: `app.${id}`,
  spanId,
  parentSpanId,
});

afterEach(() => {
  vi.doUnmock('@opentelemetry/api');
  vi.resetModules();
});

describe('attachOpenTelemetry', () => {
  it('a real @opentelemetry/api tracer fits the bridge', async () => {
    const streamer = new EventStreamer();
    const detach = await attachOpenTelemetry(streamer, { tracer: otel.trace.getTracer('test') });
    expect(() => streamer.emit({ type: T.RUN_START, spanId: 's', payload: { flowNamespace: 'f' } })).not.toThrow();
    detach();
  });

  it('maps runs and node executions to spans nested by parentSpanId, timed by the events', async () => {
    const streamer = new EventStreamer({ sessionKey: 'sess' });
    const tracer = new RecordingTracer();
    await attachOpenTelemetry(streamer, { tracer });
    const agent = node('agent', 'sA', 's0');
    const search = node('search', 'sS', 'sA');
    const started = streamer.emit({ runId: 'r1', type: T.RUN_START, spanId: 's0', payload: { flowNamespace: 'app', entryNodeId: 'agent' } });
    streamer.emit({ ...agent, type: T.NODE_START });
    const searchStart = streamer.emit({ ...search, type: T.NODE_START });
    streamer.emit({ ...search, type: T.EXEC_COMPLETE, payload: { durationMs: 1, attempts: 2 } });
    const searchEnd = streamer.emit({ ...search, type: T.NODE_END, payload: { action: 'default', durationMs: 1 } });
    streamer.emit({ ...agent, type: T.NODE_END, payload: { action: 'done', durationMs: 2 } });
    const ended = streamer.emit({ runId: 'r1', type: T.RUN_END, spanId: 's0', payload: { durationMs: 3, steps: 1, action: 'done' } });

    const run = tracer.byName('run app');
    const agentSpan = tracer.byName('app.agent');
    const searchSpan = tracer.byName('app.search');
    expect(run.parent).toBeUndefined();
    expect(agentSpan.parent).toBe(run);
    expect(searchSpan.parent).toBe(agentSpan);
    expect(run.startTime).toBe(started.timestamp);
    expect(run.endTime).toBe(ended.timestamp);
    expect([searchSpan.startTime, searchSpan.endTime]).toEqual([searchStart.timestamp, searchEnd.timestamp]);
    expect(searchSpan.attributes).toEqual({
      'backpackflow.run_id': 'r1',
      'backpackflow.session_key': 'sess',
      'backpackflow.span_id': 'sS',
      'backpackflow.namespace': 'app.search',
      'backpackflow.node.id': 'search',
      'backpackflow.node.name': 'SearchNode',
      'backpackflow.step': 1,
      'backpackflow.attempts': 2,
      'backpackflow.action': 'default',
    });
    expect(run.attributes).toMatchObject({ 'backpackflow.steps': 1, 'backpackflow.action': 'done' });
    for (const span of tracer.spans) {
      expect(span.endCalls).toBe(1);
      expect(span.status).toBeUndefined();
    }
  });

  it('records errors as exceptions with an error status on the node and the run', async () => {
    const streamer = new EventStreamer();
    const tracer = new RecordingTracer();
    await attachOpenTelemetry(streamer, { tracer });
    const search = node('search', 'sS', 's0');
    streamer.emit({ runId: 'r1', type: T.RUN_START, spanId: 's0', payload: { flowNamespace: 'app' } });
    streamer.emit({ ...search, type: T.NODE_START });
    streamer.emit({ ...search, type: T.ERROR, payload: { phase: 'exec', error: boom } });
    streamer.emit({ runId: 'r1', type: T.RUN_ERROR, spanId: 's0', payload: { durationMs: 1, error: boom } });
    for (const span of [tracer.byName('app.search'), tracer.byName('run app')]) {
      expect(span.status).toEqual({ code: otel.SpanStatusCode.ERROR, message: 'TypeError: no data' });
      expect(span.exceptions).toEqual([boom]);
      expect(span.endCalls).toBe(1);
    }
    expect(tracer.byName('app.search').attributes['backpackflow.error.phase']).toBe('exec');
  });

  it('adds retries, denials and quarantines to the node span, and routes to the span they happened in', async () => {
    const streamer = new EventStreamer();
    const tracer = new RecordingTracer();
    await attachOpenTelemetry(streamer, { tracer });
    const search = node('search', 'sS', 's0');
    streamer.emit({ runId: 'r1', type: T.RUN_START, spanId: 's0', payload: { flowNamespace: 'app' } });
    streamer.emit({ ...search, type: T.NODE_START });
    const retry = streamer.emit({ ...search, type: T.NODE_RETRY, payload: { attempt: 1, maxRetries: 3, delayMs: 5, error: boom } });
    streamer.emit({ ...search, type: T.ACCESS_DENIED, payload: { key: 'secret', operation: 'read', rule: 'deny' } });
    streamer.emit({ ...search, type: T.BACKPACK_QUARANTINE, payload: { key: 'k', reason: 'bad' } });
    streamer.emit({ ...search, type: T.NODE_END, payload: { action: 'default', durationMs: 1 } });
    streamer.emit({ runId: 'r1', type: T.ROUTE, parentSpanId: 's0', payload: { action: 'default', from: 'search', to: 'next' } });
    streamer.emit({ runId: 'r1', type: T.ROUTE_MISSING, parentSpanId: 's0', payload: { action: 'x', from: 'next', available: ['a', 'b'] } });
    const span = tracer.byName('app.search');
    expect(span.events).toEqual([
      {
        name: 'retry',
        attributes: { attempt: 1, max_attempts: 3, delay_ms: 5, 'exception.type': 'TypeError', 'exception.message': 'no data' },
        time: retry.timestamp,
      },
      { name: 'access.denied', attributes: { key: 'secret', operation: 'read', rule: 'deny' }, time: expect.any(Number) },
      { name: 'backpack.quarantined', attributes: { key: 'k', reason: 'bad' }, time: expect.any(Number) },
    ]);
    expect(tracer.byName('run app').events.map((e) => [e.name, e.attributes])).toEqual([
      ['route', { action: 'default', from: 'search', to: 'next' }],
      ['route.missing', { action: 'x', from: 'next', available: 'a,b' }],
    ]);
  });

  it('ends spans left open when their run ends, and the rest on detach; then stops listening', async () => {
    const streamer = new EventStreamer();
    const tracer = new RecordingTracer();
    const detach = await attachOpenTelemetry(streamer, { tracer });
    streamer.emit({ runId: 'r1', type: T.RUN_START, spanId: 's0', payload: { flowNamespace: 'one' } });
    streamer.emit({ ...node('lost', 'sL', 's0'), type: T.NODE_START });
    streamer.emit({ runId: 'r2', type: T.RUN_START, spanId: 't0', payload: { flowNamespace: 'two' } });
    streamer.emit({ runId: 'r1', type: T.RUN_END, spanId: 's0', payload: { steps: 1 } });
    expect(tracer.byName('app.lost').endCalls).toBe(1);
    expect(tracer.byName('run two').endCalls).toBe(0);
    detach();
    expect(tracer.byName('run two').endCalls).toBe(1);
    streamer.emit({ runId: 'r3', type: T.RUN_START, spanId: 'u0', payload: { flowNamespace: 'three' } });
    expect(tracer.spans.map((s) => s.name)).not.toContain('run three');
  });

  it('without a tracer, uses the global provider’s tracer named backpackflow', async () => {
    const getTracer = vi.spyOn(otel.trace, 'getTracer');
    const detach = await attachOpenTelemetry(new EventStreamer());
    expect(getTracer).toHaveBeenCalledWith('backpackflow');
    detach();
    getTracer.mockRestore();
  });

  it('rejects with an error naming the package when @opentelemetry/api cannot be loaded', async () => {
    vi.doMock('@opentelemetry/api', () => {
      throw new Error("Cannot find package '@opentelemetry/api'");
    });
    const { attachOpenTelemetry: attach } = await import('../../src/events/otel.js');
    await expect(attach(new EventStreamer())).rejects.toThrow(/optional peer dependency; install it with `npm install @opentelemetry\/api`/);
  });
});
