import { afterEach, describe, expect, it, vi } from 'vitest';
import { EventStreamer, newRunId, newSpanId, StreamEventSchema, StreamEventType, type StreamEvent } from '../../src/events/index.js';

const { NODE_START, NODE_END, ERROR, ROUTE } = StreamEventType;

function collect(streamer: EventStreamer, type: Parameters<EventStreamer['on']>[0] = '*'): StreamEvent[] {
  const seen: StreamEvent[] = [];
  streamer.on(type, (event) => void seen.push(event));
  return seen;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('EventStreamer.emit', () => {
  it('stamps the envelope: v, unique id, seq from 1, timestamp, default runId, sessionKey, empty payload', () => {
    const streamer = new EventStreamer({ runId: 'run-a', sessionKey: 'session-1' });
    const before = Date.now();
    const first = streamer.emit({ type: NODE_START, nodeId: 'chat', nodeName: 'ChatNode', namespace: 'sales.chat', spanId: 's1', parentSpanId: 's0' });
    const second = streamer.emit({ type: NODE_END, payload: { action: 'default', durationMs: 1 } });
    expect(first).toMatchObject({
      v: 1,
      seq: 1,
      runId: 'run-a',
      sessionKey: 'session-1',
      type: NODE_START,
      nodeId: 'chat',
      nodeName: 'ChatNode',
      namespace: 'sales.chat',
      spanId: 's1',
      parentSpanId: 's0',
      payload: {},
    });
    expect(first.timestamp).toBeGreaterThanOrEqual(before);
    expect(first.timestamp).toBeLessThanOrEqual(Date.now());
    expect(second.seq).toBe(2);
    expect(second.payload).toEqual({ action: 'default', durationMs: 1 });
    expect(first.id).not.toBe(second.id);
  });

  it('produces events that the envelope schema accepts, and that survive a JSON round trip', () => {
    const streamer = new EventStreamer({ sessionKey: 'k' });
    const event = streamer.emit({ type: ROUTE, namespace: 'a.b', payload: { action: 'default', from: 'a', to: 'b' } });
    expect(StreamEventSchema.safeParse(event).success).toBe(true);
    expect(StreamEventSchema.parse(JSON.parse(JSON.stringify(event)))).toEqual(event);
  });

  it('generates a default runId when none is given, different per streamer', () => {
    const a = new EventStreamer();
    const b = new EventStreamer();
    expect(a.runId).toMatch(/^run_[0-9a-z]{11}_[0-9a-z]{10}$/);
    expect(a.runId).not.toBe(b.runId);
    expect(a.emit({ type: NODE_START }).runId).toBe(a.runId);
  });

  it('numbers events per runId, each run starting at 1', () => {
    const streamer = new EventStreamer({ runId: 'default-run' });
    const seqs = [
      streamer.emit({ type: NODE_START, runId: 'r1' }),
      streamer.emit({ type: NODE_START, runId: 'r2' }),
      streamer.emit({ type: NODE_START, runId: 'r1' }),
      streamer.emit({ type: NODE_START }),
      streamer.emit({ type: NODE_START, runId: 'r2' }),
    ].map((e) => `${e.runId}:${e.seq}`);
    expect(seqs).toEqual(['r1:1', 'r2:1', 'r1:2', 'default-run:1', 'r2:2']);
  });

  it('setNextSeq continues a resumed run at the given number without affecting other runs', () => {
    const streamer = new EventStreamer();
    streamer.emit({ type: NODE_START, runId: 'other' });
    streamer.setNextSeq('resumed', 42);
    expect(streamer.emit({ type: NODE_START, runId: 'resumed' }).seq).toBe(42);
    expect(streamer.emit({ type: NODE_START, runId: 'resumed' }).seq).toBe(43);
    expect(streamer.emit({ type: NODE_START, runId: 'other' }).seq).toBe(2);
  });

  it('setNextSeq rejects a seq that is not an integer >= 1 and an empty runId, naming the run', () => {
    const streamer = new EventStreamer();
    expect(() => streamer.setNextSeq('r', 0)).toThrow(/seq of run 'r' must be an integer >= 1; got 0/);
    expect(() => streamer.setNextSeq('r', 1.5)).toThrow(/got 1.5/);
    expect(() => streamer.setNextSeq('', 3)).toThrow(/runId must be a non-empty string/);
  });

  it('emitting an error event with no subscriber does not throw', () => {
    const streamer = new EventStreamer();
    expect(() => streamer.emit({ type: ERROR, payload: { phase: 'exec', error: { name: 'Error', message: 'x' } } })).not.toThrow();
    expect(streamer.getHistory({ type: ERROR })).toHaveLength(1);
  });
});

describe('EventStreamer options', () => {
  it('rejects a bad historySize, runId, sessionKey or onHandlerError with a message naming the option', () => {
    expect(() => new EventStreamer({ historySize: -1 })).toThrow(/historySize must be an integer >= 0; got -1/);
    expect(() => new EventStreamer({ historySize: 2.5 })).toThrow(/historySize/);
    expect(() => new EventStreamer({ runId: '' })).toThrow(/runId must be a non-empty string/);
    expect(() => new EventStreamer({ sessionKey: '' })).toThrow(/sessionKey must be a non-empty string/);
    expect(() => new EventStreamer({ onHandlerError: 'log' as never })).toThrow(/onHandlerError must be a function/);
  });
});

describe('ids', () => {
  it('newRunId and newSpanId are unique and file-name safe', () => {
    const ids = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      ids.add(newRunId());
      ids.add(newSpanId());
    }
    expect(ids.size).toBe(2000);
    for (const id of ids) expect(id).toMatch(/^[a-z0-9_-]+$/);
  });
});

describe('subscriptions', () => {
  it("on(type) receives only that type; on('*') receives every type", () => {
    const streamer = new EventStreamer();
    const starts = collect(streamer, NODE_START);
    const all = collect(streamer);
    streamer.emit({ type: NODE_START });
    streamer.emit({ type: NODE_END });
    streamer.emit({ type: ERROR });
    expect(starts.map((e) => e.type)).toEqual([NODE_START]);
    expect(all.map((e) => e.type)).toEqual([NODE_START, NODE_END, ERROR]);
  });

  it('dispatches synchronously, in subscription order', () => {
    const streamer = new EventStreamer();
    const order: string[] = [];
    streamer.on('*', () => void order.push('first'));
    streamer.onNamespace('**', () => void order.push('second'));
    streamer.on(NODE_START, () => void order.push('third'));
    streamer.emit({ type: NODE_START, namespace: 'a' });
    order.push('after emit');
    expect(order).toEqual(['first', 'second', 'third', 'after emit']);
  });

  it("onNamespace('sales.*') receives sales.chat but not sales nor sales.chat.x; 'sales.**' receives all three", () => {
    const streamer = new EventStreamer();
    const oneLevel: string[] = [];
    const anyDepth: string[] = [];
    streamer.onNamespace('sales.*', (e) => void oneLevel.push(e.namespace!));
    streamer.onNamespace('sales.**', (e) => void anyDepth.push(e.namespace!));
    for (const namespace of ['sales', 'sales.chat', 'sales.chat.x', 'salesforce', 'support.chat']) {
      streamer.emit({ type: NODE_START, namespace });
    }
    expect(oneLevel).toEqual(['sales.chat']);
    expect(anyDepth).toEqual(['sales', 'sales.chat', 'sales.chat.x']);
  });

  it('onNamespace never matches events without a namespace, even with **', () => {
    const streamer = new EventStreamer();
    const seen: StreamEvent[] = [];
    streamer.onNamespace('**', (e) => void seen.push(e));
    streamer.emit({ type: NODE_START });
    expect(seen).toEqual([]);
  });

  it('once fires for the first matching event only', () => {
    const streamer = new EventStreamer();
    const handler = vi.fn();
    streamer.once(NODE_END, handler);
    streamer.emit({ type: NODE_START });
    streamer.emit({ type: NODE_END, nodeId: 'a' });
    streamer.emit({ type: NODE_END, nodeId: 'b' });
    expect(handler).toHaveBeenCalledTimes(1);
    expect(handler.mock.calls[0]![0].nodeId).toBe('a');
  });

  it('once does not fire again for an event its own handler emits', () => {
    const streamer = new EventStreamer();
    let calls = 0;
    streamer.once('*', () => {
      calls++;
      streamer.emit({ type: NODE_END });
    });
    streamer.emit({ type: NODE_START });
    expect(calls).toBe(1);
    expect(streamer.getHistory().map((e) => e.type)).toEqual([NODE_START, NODE_END]);
  });

  it('the function returned by on, once and onNamespace unsubscribes', () => {
    const streamer = new EventStreamer();
    const handler = vi.fn();
    const stops = [streamer.on(NODE_START, handler), streamer.once('*', handler), streamer.onNamespace('a.**', handler)];
    for (const stop of stops) stop();
    stops[0]!(); // a second call is harmless
    streamer.emit({ type: NODE_START, namespace: 'a.b' });
    expect(handler).not.toHaveBeenCalled();
  });

  it('off removes the handler for that type (including a pending once) and reports whether it did', () => {
    const streamer = new EventStreamer();
    const handler = vi.fn();
    const other = vi.fn();
    streamer.on(NODE_START, handler);
    streamer.once(NODE_START, handler);
    streamer.on('*', handler);
    streamer.on(NODE_START, other);
    expect(streamer.off(NODE_START, handler)).toBe(true);
    expect(streamer.off(NODE_START, handler)).toBe(false);
    streamer.emit({ type: NODE_START });
    expect(handler).toHaveBeenCalledTimes(1); // only the '*' subscription is left
    expect(other).toHaveBeenCalledTimes(1);
    expect(streamer.off('*', handler)).toBe(true);
    streamer.emit({ type: NODE_START });
    expect(handler).toHaveBeenCalledTimes(1);
  });

  it('a handler that unsubscribes a later handler during dispatch stops it for that same event', () => {
    const streamer = new EventStreamer();
    const later = vi.fn();
    let stopLater = (): void => {};
    streamer.on('*', () => stopLater());
    stopLater = streamer.on('*', later);
    streamer.emit({ type: NODE_START });
    expect(later).not.toHaveBeenCalled();
  });

  it('a handler that unsubscribes itself during dispatch does not disturb the others', () => {
    const streamer = new EventStreamer();
    const seen: string[] = [];
    const stopSelf = streamer.on('*', () => {
      seen.push('self');
      stopSelf();
    });
    streamer.on('*', () => void seen.push('next'));
    streamer.emit({ type: NODE_START });
    streamer.emit({ type: NODE_START });
    expect(seen).toEqual(['self', 'next', 'next']);
  });

  it('a handler subscribed during dispatch receives the next event, not the current one', () => {
    const streamer = new EventStreamer();
    const added = vi.fn();
    streamer.once('*', () => void streamer.on('*', added));
    streamer.emit({ type: NODE_START });
    expect(added).not.toHaveBeenCalled();
    streamer.emit({ type: NODE_END });
    expect(added).toHaveBeenCalledTimes(1);
  });

  it('rejects an unknown event type, pointing a namespace pattern to onNamespace', () => {
    const streamer = new EventStreamer();
    expect(() => streamer.on('node.start' as never, () => {})).toThrow(/unknown event type 'node.start'/);
    expect(() => streamer.on('youtube.research.*' as never, () => {})).toThrow(/use onNamespace\('youtube.research.\*', handler\)/);
    expect(() => streamer.once('nope' as never, () => {})).toThrow(/EventStreamer.once: unknown event type 'nope'/);
    expect(() => streamer.off('nope' as never, () => {})).toThrow(/EventStreamer.off/);
  });

  it('rejects a handler that is not a function and an empty namespace pattern', () => {
    const streamer = new EventStreamer();
    expect(() => streamer.on('*', undefined as never)).toThrow(/handler must be a function/);
    expect(() => streamer.onNamespace('', () => {})).toThrow(/pattern must be a non-empty string/);
  });
});

describe('handler isolation', () => {
  it('a throwing handler is reported and neither breaks emit nor the handlers after it', () => {
    const reported: Array<{ error: unknown; event: StreamEvent }> = [];
    const streamer = new EventStreamer({ onHandlerError: (error, event) => void reported.push({ error, event }) });
    const boom = new Error('boom');
    streamer.on('*', () => {
      throw boom;
    });
    const after = collect(streamer);
    const event = streamer.emit({ type: NODE_START });
    expect(after).toEqual([event]);
    expect(reported).toEqual([{ error: boom, event }]);
  });

  it('a rejecting handler is reported and does not surface as an unhandled rejection', async () => {
    const reported: unknown[] = [];
    const streamer = new EventStreamer({ onHandlerError: (error) => void reported.push(error) });
    const after = vi.fn();
    streamer.on(NODE_START, async () => {
      throw new Error('async boom');
    });
    streamer.on(NODE_START, after);
    expect(() => streamer.emit({ type: NODE_START })).not.toThrow();
    expect(after).toHaveBeenCalledTimes(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(reported).toHaveLength(1);
    expect((reported[0] as Error).message).toBe('async boom');
  });

  it('without onHandlerError, writes exactly one line to stderr naming the event type and the error', () => {
    const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const streamer = new EventStreamer();
    streamer.on('*', () => {
      throw new TypeError('bad\nthing');
    });
    const event = streamer.emit({ type: ERROR });
    expect(write).toHaveBeenCalledTimes(1);
    const line = String(write.mock.calls[0]![0]);
    expect(line).toBe(`backpackflow: a handler of 'error' event ${event.id} failed: TypeError: bad thing\n`);
  });

  it('a reporter that throws falls back to stderr and still does not break emit', () => {
    const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const streamer = new EventStreamer({
      onHandlerError: () => {
        throw new Error('reporter broke');
      },
    });
    streamer.on('*', () => {
      throw new Error('handler broke');
    });
    const after = vi.fn();
    streamer.on('*', after);
    expect(() => streamer.emit({ type: NODE_START })).not.toThrow();
    expect(after).toHaveBeenCalledTimes(1);
    expect(String(write.mock.calls[0]![0])).toContain('reporter broke');
  });
});

describe('history', () => {
  it('keeps events oldest first and drops the oldest beyond historySize', () => {
    const streamer = new EventStreamer({ historySize: 3 });
    for (let i = 1; i <= 7; i++) streamer.emit({ type: NODE_START, nodeId: `n${i}` });
    expect(streamer.getHistory().map((e) => e.nodeId)).toEqual(['n5', 'n6', 'n7']);
  });

  it('historySize 0 keeps nothing but still dispatches', () => {
    const streamer = new EventStreamer({ historySize: 0 });
    const seen = collect(streamer);
    streamer.emit({ type: NODE_START });
    expect(seen).toHaveLength(1);
    expect(streamer.getHistory()).toEqual([]);
  });

  it('filters by type, namespace pattern, nodeId and runId together', () => {
    const streamer = new EventStreamer({ runId: 'r1' });
    streamer.emit({ type: NODE_START, nodeId: 'chat', namespace: 'sales.chat' });
    streamer.emit({ type: NODE_END, nodeId: 'chat', namespace: 'sales.chat' });
    streamer.emit({ type: NODE_START, nodeId: 'chat', namespace: 'sales.chat', runId: 'r2' });
    streamer.emit({ type: NODE_START, nodeId: 'x', namespace: 'sales.chat.x' });
    streamer.emit({ type: NODE_START, nodeId: 'bare' });
    const ids = (filter: Parameters<EventStreamer['getHistory']>[0]): string[] =>
      streamer.getHistory(filter).map((e) => `${e.runId}/${e.nodeId}/${e.type}`);
    expect(ids({ type: NODE_END })).toEqual(['r1/chat/node.completed']);
    expect(ids({ namespace: 'sales.*' })).toEqual(['r1/chat/node.started', 'r1/chat/node.completed', 'r2/chat/node.started']);
    expect(ids({ namespace: 'sales.**', type: NODE_START, runId: 'r1' })).toEqual(['r1/chat/node.started', 'r1/x/node.started']);
    expect(ids({ nodeId: 'chat', runId: 'r2' })).toEqual(['r2/chat/node.started']);
    expect(ids({ namespace: '**' })).not.toContain('r1/bare/node.started');
    expect(ids({})).toHaveLength(5);
  });

  it('returns a copy: changing it does not change the history', () => {
    const streamer = new EventStreamer();
    streamer.emit({ type: NODE_START });
    streamer.getHistory().pop();
    expect(streamer.getHistory()).toHaveLength(1);
  });

  it('clearHistory empties the history; seq numbering continues and the ring refills in order', () => {
    const streamer = new EventStreamer({ historySize: 2, runId: 'r' });
    for (let i = 0; i < 3; i++) streamer.emit({ type: NODE_START });
    streamer.clearHistory();
    expect(streamer.getHistory()).toEqual([]);
    for (let i = 0; i < 3; i++) streamer.emit({ type: NODE_START });
    expect(streamer.getHistory().map((e) => e.seq)).toEqual([5, 6]);
  });
});
