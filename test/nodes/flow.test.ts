import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  Backpack,
  BackpackNode,
  EventStreamer,
  Flow,
  FlowError,
  StreamEventType,
  type BackpackHandle,
  type StreamEvent,
} from '../../src/index.js';

afterEach(() => vi.restoreAllMocks());

class Noop extends BackpackNode {}

class SummaryNode extends BackpackNode {
  static override namespaceSegment = 'summary';
}

class ReportNode extends BackpackNode {}

class RootNode extends BackpackNode {
  static override namespaceSegment = 'root';
}

/** Packs `params.value` under `params.key` and returns `params.action`. */
class Writer extends BackpackNode {
  override post(backpack: BackpackHandle): string | undefined {
    backpack.pack(this.config.key as string, this.config.value);
    return this.config.action as string | undefined;
  }
}

describe('namespace composition (tech spec decision 5, DESIGN D4)', () => {
  it('holds the examples of decision 5 literally', () => {
    const sales = new Flow({ namespace: 'sales' });
    expect(sales.addNode(SummaryNode, { id: 'node-123' }).namespace).toBe('sales.summary');
    expect(sales.addNode(Noop, { id: 'node-123b', namespaceSegment: 'node-123' }).namespace).toBe('sales.node-123');
    const reports = sales.addSubflow({ namespace: 'reports' });
    expect(reports.namespace).toBe('sales.reports');
    expect(reports.addNode(ReportNode, { id: 'daily' }).namespace).toBe('sales.reports.daily');
    expect(new Flow().addNode(RootNode, { id: 'node-1' }).namespace).toBe('root');
    expect(new Flow({ namespace: 'sales' }).addNode(Noop, { id: 'node-123' }).namespace).toBe('sales.node-123');
  });

  it("the config's namespaceSegment wins over the class's, which wins over the id", () => {
    const flow = new Flow({ namespace: 'a' });
    expect(flow.addNode(SummaryNode, { id: 'x', namespaceSegment: 'custom' }).namespace).toBe('a.custom');
    expect(flow.addNode(SummaryNode, { id: 'y' }).namespace).toBe('a.summary');
    expect(flow.addNode(Noop, { id: 'z' }).namespace).toBe('a.z');
  });

  it('refuses two nodes with one namespace, naming both and the fix', () => {
    const flow = new Flow({ namespace: 'sales', id: 'sales-flow' });
    flow.addNode(SummaryNode, { id: 'first' });
    expect(() => flow.addNode(SummaryNode, { id: 'second' })).toThrow(
      `Nodes 'first' and 'second' of flow 'sales-flow' would share namespace 'sales.summary': give one of them its own segment with config.namespaceSegment`,
    );
  });

  it('refuses a duplicate id, a missing id, a non-node class and a malformed segment', () => {
    const flow = new Flow({ id: 'f' });
    flow.addNode(Noop, { id: 'a' });
    expect(() => flow.addNode(Noop, { id: 'a', namespaceSegment: 'other' })).toThrow(/already has a node with id 'a'/);
    expect(() => flow.addNode(Noop, {} as { id: string })).toThrow(/needs config.id, a non-empty string/);
    expect(() => flow.addNode(Object as never, { id: 'b' })).toThrow(/addNode takes a BackpackNode class/);
    expect(() => flow.addNode(Noop, { id: 'c', namespaceSegment: 'x.' })).toThrow(/Namespace segment of node 'c' must be one segment/);
    expect(() => new Flow({ namespace: '.sales' })).toThrow(/Flow namespace must be dot-separated parts/);
    expect(() => new Flow({ namespace: 'sales.*' })).toThrow(/no '\*'/);
  });

  it('a node cannot be constructed outside a flow', () => {
    expect(() => new Noop({ id: 'loose' }, undefined as never)).toThrow(/a BackpackNode is created by its flow: use flow.addNode\(Noop/);
  });
});

describe('Flow API', () => {
  it('addNode returns the node; getNode, getAllNodes; the first node added is the entry', async () => {
    const flow = new Flow({ namespace: 'app' });
    const a = flow.addNode(Writer, { id: 'a', key: 'k', value: 1 });
    const b = flow.addNode(Writer, { id: 'b', key: 'k', value: 2 });
    expect(flow.getNode('a')).toBe(a);
    expect(flow.getNode('missing')).toBeUndefined();
    expect(flow.getAllNodes()).toEqual([a, b]);
    expect(flow.entryNode).toBe(a);
    await flow.run();
    expect(flow.backpack.peek('k')).toBe(1);
  });

  it('setEntryNode picks another entry and refuses a node of another flow', async () => {
    const flow = new Flow({ id: 'f' });
    flow.addNode(Writer, { id: 'a', key: 'k', value: 1 });
    const b = flow.addNode(Writer, { id: 'b', key: 'k', value: 2 });
    flow.setEntryNode(b);
    await flow.run();
    expect(flow.backpack.peek('k')).toBe(2);
    const other = new Flow().addNode(Noop, { id: 'x' });
    expect(() => new Flow({ id: 'g' }).setEntryNode(other)).toThrow(`Flow 'g': entry node 'x' was not added to this flow (use flow.addNode)`);
  });

  it('run(input) packs the input first, attributed to no node', async () => {
    class Echo extends BackpackNode {
      override post(backpack: BackpackHandle) {
        backpack.pack('answer', `got ${backpack.unpack('question') as string}`);
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'qa' });
    flow.addNode(Echo, { id: 'echo' });
    await flow.run({ question: 'why?' });
    expect(flow.backpack.peek('answer')).toBe('got why?');
    expect(flow.backpack.getItem('question')?.metadata.sourceNodeId).toBeUndefined();
    expect(flow.backpack.getItem('answer')?.metadata.sourceNodeId).toBe('echo');
    await expect(flow.run('text' as never)).rejects.toThrow(/run\(input\) takes an object of backpack keys to values/);
  });

  it('shares a given Backpack, or a node handle\'s Backpack', () => {
    const backpack = new Backpack();
    const flow = new Flow({ backpack });
    expect(flow.backpack).toBe(backpack);
    const node = flow.addNode(Noop, { id: 'n' });
    // A node's backpack exists only inside its execution; a flow on a node's handle runs inside that node.
    expect(() => node.backpack).toThrow(/available only while it runs/);
    const inner = node.createNestedFlow({ namespace: 'inner' });
    expect(inner.namespace).toBe('n.inner');
    expect(() => inner.backpack).toThrow(/runs inside node 'n'/);
  });

  it("a nested flow runs only inside its node's execution: escaped from it, it cannot announce a run under any id", async () => {
    // Work queued from inside exec and run by a timer made outside any execution: the way node code could leave its run.
    const outside: (() => void)[] = [];
    const timer = setInterval(() => outside.shift()?.(), 1);
    let escaped: Promise<unknown> | undefined;
    class Escaper extends BackpackNode {
      override async exec(): Promise<void> {
        const nested = this.createNestedFlow({ namespace: 'inner' });
        nested.addNode(Noop, { id: 'x' });
        escaped = new Promise((resolve) => outside.push(() => resolve(nested.run(undefined, { runId: 'forged' }).catch((error: unknown) => error))));
        await escaped;
      }
    }
    try {
      const flow = new Flow({ namespace: 'app' });
      flow.addNode(Escaper, { id: 'esc' });
      const events: StreamEvent[] = [];
      flow.eventStreamer.on('*', (event) => void events.push(event));
      await flow.run(undefined, { runId: 'real' });
      const error = await escaped;
      expect(error).toBeInstanceOf(FlowError);
      expect((error as Error).message).toMatch(/runs inside node 'esc': run it from that node's prep, exec or post/);
      expect(events.filter((event) => event.runId !== 'real')).toEqual([]);
      expect(events.some((event) => event.type === StreamEventType.RUN_START && event.runId === 'real')).toBe(true);
    } finally {
      clearInterval(timer);
    }
  });

  it('creates its own Backpack with backpackOptions', () => {
    const flow = new Flow({ backpackOptions: { strictMode: true } });
    flow.backpack.registerPermissions('n', { read: ['allowed'] });
    expect(() => flow.backpack.unpack('secret', 'n')).toThrow();
  });

  it('addSubflow runs on the Backpack of its flow and can be routed to, but hands out neither the Backpack nor the streamer (node code reaches subflows through routes)', async () => {
    const flow = new Flow({ namespace: 'sales' });
    const first = flow.addNode(Writer, { id: 'first', key: 'a', value: 1 });
    const reports = flow.addSubflow({ namespace: 'reports' });
    reports.addNode(Writer, { id: 'daily', key: 'b', value: 2 });
    first.next(reports);
    expect(() => reports.backpack).toThrow(/sales/);
    expect(() => reports.eventStreamer).toThrow(/sales/);
    await flow.run();
    expect(flow.backpack.getItem('b')?.metadata.sourceNamespace).toBe('sales.reports.daily');
  });

  it('cannot change once it has run', async () => {
    const flow = new Flow({ id: 'f' });
    const a = flow.addNode(Writer, { id: 'a', key: 'k', value: 1 });
    await flow.run();
    expect(flow.sealed).toBe(true);
    expect(() => flow.addNode(Noop, { id: 'b' })).toThrow(`Flow 'f' has already run and cannot change: cannot add a node. Build a new flow instead.`);
    expect(() => flow.setEntryNode(a)).toThrow(/cannot change the entry node/);
    expect(() => a.on('x', a)).toThrow(`Node 'a' belongs to flow 'f', which has already run: its routes cannot change`);
  });

  it('routes on actions and emits route events; a missing route emits route.missing by default', async () => {
    const flow = new Flow({ namespace: 'r' });
    const a = flow.addNode(Writer, { id: 'a', key: 'x', value: 1, action: 'go' });
    const b = flow.addNode(Writer, { id: 'b', key: 'y', value: 2, action: 'nowhere' });
    a.on('go', b);
    b.on('somewhere', a);
    const warn = vi.spyOn(console, 'warn');
    await flow.run();
    const routes = flow.eventStreamer.getHistory({ type: StreamEventType.ROUTE });
    expect(routes.map((e) => e.payload)).toEqual([{ action: 'go', from: 'a', to: 'b' }]);
    const missing = flow.eventStreamer.getHistory({ type: StreamEventType.ROUTE_MISSING });
    expect(missing.map((e) => e.payload)).toEqual([{ action: 'nowhere', from: 'b', available: ['somewhere'] }]);
    expect(missing[0]!.namespace).toBe('r.b');
    expect(warn).not.toHaveBeenCalled();
  });

  it("onMissingRoute 'throw' raises a FlowError and the run is reported failed", async () => {
    const flow = new Flow({ onMissingRoute: 'throw' });
    const a = flow.addNode(Writer, { id: 'a', key: 'x', value: 1, action: 'nowhere' });
    a.on('elsewhere', a);
    await expect(flow.run()).rejects.toThrow(FlowError);
    const failed = flow.eventStreamer.getHistory({ type: StreamEventType.RUN_ERROR });
    expect(failed).toHaveLength(1);
    expect((failed[0]!.payload.error as { name: string }).name).toBe('FlowError');
  });

  it('emits run.started and run.completed with the step count, under one runId per run', async () => {
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Writer, { id: 'a', key: 'x', value: 1 }).next(flow.addNode(Writer, { id: 'b', key: 'y', value: 2 }));
    await flow.run(undefined, { runId: 'run-one' });
    await flow.run(undefined, { runId: 'run-two' });
    const history = flow.eventStreamer.getHistory();
    const ends = history.filter((e) => e.type === StreamEventType.RUN_END);
    expect(ends.map((e) => [e.runId, e.payload.steps])).toEqual([['run-one', 2], ['run-two', 2]]);
    for (const runId of ['run-one', 'run-two']) {
      const own = history.filter((e) => e.runId === runId && e.type === StreamEventType.NODE_START);
      expect(own.map((e) => e.nodeId)).toEqual(['a', 'b']);
    }
  });
});

describe('events from flows and nodes', () => {
  it('emits the node lifecycle in order with one span per execution under the run span', async () => {
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Writer, { id: 'w', key: 'x', value: 1 });
    const seen: StreamEvent[] = [];
    flow.eventStreamer.on('*', (e) => void seen.push(e));
    await flow.run();
    expect(seen.map((e) => e.type)).toEqual([
      StreamEventType.RUN_START,
      StreamEventType.NODE_START,
      StreamEventType.PREP_COMPLETE,
      StreamEventType.EXEC_COMPLETE,
      StreamEventType.BACKPACK_PACK,
      StreamEventType.NODE_END,
      StreamEventType.RUN_END,
    ]);
    const [runStart, nodeStart] = seen;
    expect(nodeStart).toMatchObject({ nodeId: 'w', nodeName: 'Writer', namespace: 'app.w', parentSpanId: runStart!.spanId });
    for (const e of seen.slice(1, 6)) expect(e.spanId).toBe(nodeStart!.spanId);
    expect(new Set(seen.map((e) => e.runId)).size).toBe(1);
    expect(seen[5]!.payload).toMatchObject({ action: 'default' });
  });

  it('a throwing subscriber does not stop the flow or other subscribers', async () => {
    const reported: unknown[] = [];
    const streamer = new EventStreamer({ onHandlerError: (error) => void reported.push(error) });
    const flow = new Flow({ eventStreamer: streamer });
    flow.addNode(Writer, { id: 'a', key: 'x', value: 1 });
    const received: string[] = [];
    streamer.on('*', () => {
      throw new Error('bad subscriber');
    });
    streamer.on('*', (e) => void received.push(e.type));
    await expect(flow.run()).resolves.toBeUndefined();
    expect(flow.backpack.peek('x')).toBe(1);
    expect(received).toContain(StreamEventType.RUN_END);
    expect(reported.length).toBe(received.length);
  });

  it('two overlapping runs of flows sharing node classes attribute every pack to the right node', async () => {
    class SlowWriter extends BackpackNode<number, number> {
      override prep(backpack: BackpackHandle) {
        return backpack.unpack('delay') as number;
      }
      override async exec(delayMs: number) {
        await new Promise((r) => setTimeout(r, delayMs));
        return delayMs;
      }
      override post(backpack: BackpackHandle, _p: number, delayMs: number) {
        backpack.pack(`written-by-${this.id}`, delayMs);
        this.pack('helper-write', this.id);
        return undefined;
      }
    }
    const backpack = new Backpack();
    const one = new Flow({ namespace: 'one', backpack });
    const two = new Flow({ namespace: 'two', backpack });
    one.addNode(SlowWriter, { id: 'slow' });
    two.addNode(SlowWriter, { id: 'fast' });
    backpack.pack('delay', 10);
    const runs = [one.run(), two.run()];
    await Promise.all(runs);
    const writes = backpack.getHistory().filter((c) => c.action === 'pack' && c.key !== 'delay');
    for (const commit of writes) {
      const writer = commit.key === 'helper-write' ? (commit.newValue as string) : commit.key.replace('written-by-', '');
      expect(commit.nodeId).toBe(writer);
      expect(commit.namespace).toBe(writer === 'slow' ? 'one.slow' : 'two.fast');
    }
    expect(writes).toHaveLength(4);
  });

  it('a plain backpack.pack() after runs is never attributed to a node', async () => {
    const flow = new Flow();
    flow.addNode(Writer, { id: 'a', key: 'x', value: 1 });
    await flow.run();
    flow.backpack.pack('later', true);
    const item = flow.backpack.getItem('later');
    expect(item?.metadata.sourceNodeId).toBeUndefined();
    expect(item?.metadata.sourceNamespace).toBeUndefined();
  });
});
