/**
 * The OpenTelemetry bridge redacts what it puts on spans (DESIGN D15): a secret in an error, a retry, a quarantine
 * reason, a route or a name of an event must not reach a span's status, exceptions, attributes, events or name.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
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
import { REDACTED } from '../../src/redact/index.js';

/** Everything the bridge handed to the tracer, as one list of recorded calls. */
class RecordingTracer implements OtelTracer {
  readonly calls: unknown[] = [];
  startSpan(name: string, options?: { attributes?: OtelAttributes }): OtelSpan {
    this.calls.push(['startSpan', name, options?.attributes]);
    const calls = this.calls;
    return {
      setAttribute: (key, value) => calls.push(['setAttribute', key, value]),
      addEvent: (eventName, attributes) => calls.push(['addEvent', eventName, attributes]),
      setStatus: (status) => calls.push(['setStatus', status]),
      // As an SDK reads an exception: its name, message and stack, whether own properties or not.
      recordException: (exception: { name: string; message: string; stack?: string }) =>
        calls.push(['recordException', { name: exception.name, message: exception.message, ...(exception.stack === undefined ? {} : { stack: exception.stack }) }]),
      end: () => undefined,
    };
  }
  /** The recorded calls as text: what a span exporter would send. */
  text(): string {
    return JSON.stringify(this.calls);
  }
}

const api: OtelApi = {
  trace: { getTracer: () => new RecordingTracer(), setSpan: (context) => context },
  context: { active: () => ({}) },
  SpanStatusCode: { ERROR: 2 },
};

/** Secrets of the built-in catalogue, as test/redact uses them. */
const SECRETS = [
  'ghp_R8kL2mQ9xZ4vT7wN1bY5cH3jD6fG0aKsPeUi',
  'sk-proj-Q7vLx2Rk9TmWp4ZsN8bYc3HjD6fGa1Ke',
  'postgres://admin:Pg5ecretW0rdQx7@db/app',
  'AKIAIOSFODNN7EXAMPLE',
];

/** One run in which `secret` shows up in every free-text field an event carries that the bridge exports. */
function emitRunWith(streamer: EventStreamer, secret: string): void {
  const words = `upstream said: ${secret}`;
  const node = { runId: 'r1', nodeId: 'agent', nodeName: 'AgentNode', namespace: 'app.agent', spanId: 'sA', parentSpanId: 's0' };
  const other = { ...node, nodeId: 'search', namespace: 'app.search', spanId: 'sS' };
  streamer.emit({ runId: 'r1', type: T.RUN_START, spanId: 's0', payload: { flowNamespace: 'app' } });
  streamer.emit({ ...node, type: T.NODE_START });
  streamer.emit({ ...node, type: T.NODE_RETRY, payload: { attempt: 1, maxRetries: 2, delayMs: 0, error: { name: 'FetchError', message: words } } });
  streamer.emit({ ...node, type: T.MODEL_START, payload: { model: 'openai:gpt-4o', purpose: 'chat' } });
  streamer.emit({ ...node, type: T.MODEL_END, payload: { purpose: 'chat', attempt: 1, retryInMs: 5, error: { name: 'APICallError', message: words } } });
  streamer.emit({ ...node, type: T.MODEL_END, payload: { purpose: 'chat', attempt: 2, error: { name: 'APICallError', message: words } } });
  streamer.emit({ ...node, type: T.TOOL_CALL, payload: { toolCallId: 'c1', toolName: 'fail' } });
  streamer.emit({ ...node, type: T.TOOL_RESULT, payload: { toolCallId: 'c1', toolName: 'fail', error: `Tool 'fail' failed: ${words}` } });
  streamer.emit({ ...node, type: T.BACKPACK_QUARANTINE, payload: { key: 'answer', reason: `unserializable: ${words}` } });
  streamer.emit({ ...node, type: T.ACCESS_DENIED, payload: { key: 'answer', operation: 'read', rule: `deny ${secret}` } });
  streamer.emit({ ...node, type: T.ERROR, payload: { phase: 'exec', error: { name: 'NodeExecutionError', message: words } } });
  streamer.emit({ ...other, type: T.NODE_START });
  streamer.emit({ ...other, type: T.NODE_END, payload: { action: `retry ${secret}`, durationMs: 1 } });
  streamer.emit({ runId: 'r1', type: T.ROUTE, parentSpanId: 's0', payload: { action: secret, from: 'agent', to: 'search' } });
  streamer.emit({ runId: 'r1', type: T.ROUTE_MISSING, parentSpanId: 's0', payload: { action: secret, from: 'search', available: [secret] } });
  // An emitter outside the flow layer may put a whole error in the payload: its stack must not be exported either.
  const thrown = Object.assign(new Error(words), { name: 'RunError' });
  streamer.emit({ runId: 'r1', type: T.RUN_ERROR, spanId: 's0', payload: { durationMs: 1, error: thrown } });
}

describe('bridgeToOpenTelemetry redaction', () => {
  it('puts no secret of the catalogue on a span: status, exceptions, attributes, events', () => {
    fc.assert(
      fc.property(fc.constantFrom(...SECRETS), (secret) => {
        const streamer = new EventStreamer();
        const tracer = new RecordingTracer();
        const detach = bridgeToOpenTelemetry(streamer, api, tracer);
        emitRunWith(streamer, secret);
        detach();
        const recorded = tracer.text();
        expect(recorded).not.toContain(secret);
        expect(recorded).not.toContain('    at ');
        expect(recorded).toContain(REDACTED);
      }),
    );
  });

  it('keeps the error text around the secret, so that the span still says what failed', () => {
    const streamer = new EventStreamer();
    const tracer = new RecordingTracer();
    bridgeToOpenTelemetry(streamer, api, tracer);
    emitRunWith(streamer, SECRETS[0]!);
    expect(tracer.calls).toContainEqual(['setStatus', { code: 2, message: `ToolError: Tool 'fail' failed: upstream said: ${REDACTED}` }]);
    expect(tracer.calls).toContainEqual(['recordException', { name: 'NodeExecutionError', message: `upstream said: ${REDACTED}` }]);
    expect(tracer.calls).toContainEqual(['recordException', { name: 'RunError', message: `upstream said: ${REDACTED}` }]);
    expect(tracer.calls).toContainEqual([
      'addEvent',
      'retry',
      { attempt: 1, max_attempts: 2, delay_ms: 0, 'exception.type': 'FetchError', 'exception.message': `upstream said: ${REDACTED}` },
    ]);
  });

  it('redacts the secrets of the redaction option too, as runFlow does (attachOpenTelemetry passes it on)', async () => {
    const own = 'acme-internal-7Q2xK9';
    const streamer = new EventStreamer();
    const tracer = new RecordingTracer();
    const detach = await attachOpenTelemetry(streamer, { tracer, redaction: { patterns: [/acme-internal-\w+/] } });
    emitRunWith(streamer, own);
    detach();
    expect(tracer.text()).not.toContain(own);
    const unredacted = new RecordingTracer();
    bridgeToOpenTelemetry(streamer, api, unredacted);
    emitRunWith(streamer, own);
    expect(unredacted.text()).toContain(own);
  });
});
