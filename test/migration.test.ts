/**
 * What users of BackpackFlow v2 and of the storage layer spec meet when they move (MIGRATING.md): the pieces v2 had
 * (getStats, DependencyContainer helpers), and a clear error for each old call shape.
 */
import { describe, expect, it } from 'vitest';
import {
  Backpack,
  BackpackNode,
  DependencyContainer,
  EventStreamer,
  Flow,
  FlowConfigError,
  FlowError,
  FlowLoader,
  StreamEventType,
  TOOLBOX_DEP,
  type BackpackHandle,
} from '../src/index.js';

class Step extends BackpackNode {
  override post(backpack: BackpackHandle): string | undefined {
    const n = ((backpack.unpack('n') as number | undefined) ?? 0) + 1;
    backpack.pack('n', n);
    return n < 3 ? 'again' : undefined;
  }
}

class Composite extends BackpackNode {
  protected override buildInternalFlow(flow: Flow): void {
    flow.addNode(Step, { id: 'inner-a' }).next(flow.addNode(Step, { id: 'inner-b' }));
  }
}

describe('Flow.getStats', () => {
  it('counts nodes, routes, composites, subflows and depth at every level, and the steps its runs took', async () => {
    const flow = new Flow({ namespace: 'app' });
    const a = flow.addNode(Step, { id: 'a' });
    a.on('again', a);
    const composite = flow.addNode(Composite, { id: 'c' });
    a.next(composite);
    const sub = flow.addSubflow({ namespace: 'reports' });
    sub.addNode(Step, { id: 'daily' });
    expect(flow.getStats()).toEqual({
      namespace: 'app',
      nodeCount: 5,
      edgeCount: 3,
      compositeNodeCount: 1,
      subflowCount: 1,
      maxDepth: 1,
      hasEntryNode: true,
      executions: 0,
      stepsRun: 0,
      backpackSize: 0,
    });
    await flow.run();
    // a runs 3 times (n = 1, 2, 3), then the composite once: 4 steps of this flow; the internal flow's 2 are its own.
    expect(flow.getStats()).toMatchObject({ executions: 1, stepsRun: 4, backpackSize: 1 });
    expect(composite.internalFlow!.getStats()).toMatchObject({ namespace: 'app.c', nodeCount: 2, edgeCount: 1, executions: 1, stepsRun: 2 });
    expect(composite.internalFlow!.getStats().backpackSize).toBeUndefined();
    await flow.run({ n: 0 });
    expect(flow.getStats()).toMatchObject({ executions: 2, stepsRun: 8 });
  });
});

describe('EventStreamer.getStats', () => {
  it('counts the events in the history by type (as v2 did), subscribers by kind, and the history', () => {
    const streamer = new EventStreamer({ historySize: 3 });
    const stops = [streamer.on('*', () => undefined), streamer.on(StreamEventType.NODE_START, () => undefined), streamer.onNamespace('a.**', () => undefined)];
    streamer.once(StreamEventType.NODE_START, () => undefined);
    for (let i = 0; i < 3; i++) streamer.emit({ type: StreamEventType.NODE_START, namespace: 'a.b', nodeId: `n${i}` });
    streamer.emit({ type: StreamEventType.CUSTOM, runId: 'other' });
    // The oldest node.started fell out of the 3-event history.
    expect(streamer.getStats()).toEqual({
      totalEvents: 3,
      eventsByType: { custom: 1, 'node.started': 2 },
      subscribers: { total: 3, byType: { 'node.started': 1 }, wildcard: 1, namespace: 1 },
      historySize: 3,
      historyCapacity: 3,
      uniqueNodes: 2,
      uniqueNamespaces: 1,
      uniqueRuns: 2,
    });
    for (const stop of stops) stop();
    streamer.clearHistory();
    expect(streamer.getStats()).toMatchObject({ totalEvents: 0, eventsByType: {}, subscribers: { total: 0 }, historySize: 0 });
  });
});

describe('DependencyContainer', () => {
  it('clear removes everything; delete one key', () => {
    const c = new DependencyContainer().register('a', 1).registerFactory('b', () => 2);
    expect(c.delete('a')).toBe(true);
    expect(c.delete('a')).toBe(false);
    c.clear();
    expect(c.keys()).toEqual([]);
    expect(() => c.get('b')).toThrow(/Missing dependency 'b'/);
  });

  it('clone shares values and copies factories: each copy caches its own factory result, and registering in one leaves the other alone', () => {
    let made = 0;
    const shared = { client: true };
    const original = new DependencyContainer().register('client', shared).registerFactory('thing', () => ({ n: ++made }));
    const copy = original.clone();
    expect(copy.get('client')).toBe(shared);
    expect(copy.get('thing')).not.toBe(original.get('thing'));
    expect(made).toBe(2);
    copy.register('extra', 1);
    expect(original.has('extra')).toBe(false);
  });

  it('createDefault has the built-in services: an event streamer, a Backpack reporting to it, an empty toolbox', () => {
    const c = DependencyContainer.createDefault();
    expect(c.keys()).toEqual(['backpack', 'eventStreamer', TOOLBOX_DEP].sort());
    const streamer = c.get<EventStreamer>('eventStreamer');
    const backpack = c.get<Backpack>('backpack');
    expect(streamer).toBeInstanceOf(EventStreamer);
    expect(backpack).toBeInstanceOf(Backpack);
    backpack.pack('k', 1);
    expect(streamer.getHistory({ type: StreamEventType.BACKPACK_PACK })).toHaveLength(1);
    expect(c.get(TOOLBOX_DEP)).toEqual({});
    // A clone's Backpack reports to the clone's own streamer.
    const clone = DependencyContainer.createDefault().clone();
    clone.get<Backpack>('backpack').pack('k', 1);
    expect(clone.get<EventStreamer>('eventStreamer').getStats().totalEvents).toBe(1);
  });
});

describe('old call shapes get a clear error', () => {
  it('flow.run(node, input), the v2 shape, says to set the entry node', async () => {
    const flow = new Flow();
    const node = flow.addNode(Step, { id: 's' });
    const error = await flow.run(node as never, {} as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FlowError);
    expect((error as Error).message).toBe(
      "Flow 'flow': run(node, input) is the BackpackFlow v2 call shape; here run(input) starts at the entry node. " +
        "Call flow.setEntryNode('s') before the first run, then flow.run(input) (see MIGRATING.md)",
    );
    expect(flow.backpack.size).toBe(0);
  });

  it('a BackpackNode constructed outside a flow, as v2 did with { namespace, backpack }, says to use flow.addNode', () => {
    expect(() => new Step({ id: 'x' }, { namespace: 'a.x', backpack: new Backpack() } as never)).toThrow(
      "Step 'x': a BackpackNode is created by its flow: use flow.addNode(Step, { id: ... }), which gives it its namespace, Backpack handle and events " +
        '(new Step(config, { namespace, backpack }) was the BackpackFlow v2 form; see MIGRATING.md)',
    );
    expect(() => new Step({ id: 'y' }, undefined as never)).toThrow(/a BackpackNode is created by its flow: use flow\.addNode\(Step/);
  });

  const config = { version: '2.0.0', namespace: 'app', nodes: [{ type: 'Step', id: 's' }], edges: [] };

  it("loadFlow(config, deps) with a 'backpack' and an 'eventStreamer' in deps builds the flow on them, and keeps them from the nodes", async () => {
    let seen: unknown;
    class Peek extends BackpackNode {
      override post(): undefined {
        seen = { hasBackpack: this.deps!.has('backpack'), hasStreamer: this.deps!.has('eventStreamer'), other: this.deps!.get('other') };
        expect(() => this.deps!.get('backpack')).toThrow(/Dependency 'backpack' is the owner's view/);
        return undefined;
      }
    }
    const loader = new FlowLoader().register('Step', Peek);
    const deps = DependencyContainer.createDefault().register('other', 7);
    const flow = await loader.loadFlow(config, deps);
    expect(flow.backpack).toBe(deps.get('backpack'));
    expect(flow.eventStreamer).toBe(deps.get('eventStreamer'));
    await flow.run({ q: 1 });
    expect(seen).toEqual({ hasBackpack: false, hasStreamer: false, other: 7 });
    expect(deps.get<Backpack>('backpack').peek('q')).toBe(1);
    // A plain object of deps works the same way.
    const backpack = new Backpack();
    expect((await loader.loadFlow(config, { backpack, other: 1 })).backpack).toBe(backpack);
  });

  it("refuses a 'backpack' dependency that is not a Backpack, and two different Backpacks given both ways", async () => {
    const loader = new FlowLoader().register('Step', Step);
    await expect(loader.loadFlow(config, { backpack: { items: {} } })).rejects.toThrow(/dependency 'backpack' is not a Backpack \(got Object\)/);
    await expect(loader.loadFlow(config, { eventStreamer: 'x' })).rejects.toThrow(/dependency 'eventStreamer' is not an EventStreamer \(got string\)/);
    const error = await loader.loadFlow(config, { backpack: new Backpack() }, { backpack: new Backpack() }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FlowConfigError);
    expect((error as Error).message).toMatch(/both in options\.backpack and as dependency 'backpack', and they differ/);
  });
});

describe('adopted from BackpackFlow v2 (they cost nothing and break no decision)', () => {
  it('setEntryNode takes a node id too, and names the ids there are when it is wrong', async () => {
    const flow = new Flow();
    flow.addNode(Step, { id: 'first' });
    const second = flow.addNode(Step, { id: 'second' });
    expect(flow.setEntryNode('second').entryNode).toBe(second);
    expect(() => flow.setEntryNode('third')).toThrow("Flow 'flow': no node with id 'third' to make the entry node (nodes: first, second)");
    await flow.run();
    expect(flow.backpack.getItem('n')?.metadata.sourceNodeId).toBe('second');
  });

  it('new Flow({ initialData }) packs it into the Backpack the flow creates, as the owner', () => {
    const flow = new Flow({ initialData: { q: 'tides' } });
    expect(flow.backpack.peek('q')).toBe('tides');
    expect(flow.backpack.getItem('q')?.metadata.sourceNodeId).toBeUndefined();
    expect(() => new Flow({ initialData: { q: 1 }, backpack: new Backpack() })).toThrow(/initialData fills the Backpack the flow creates/);
  });

  it('Backpack option enableAccessControl: false is refused with what replaced it', () => {
    expect(() => new Backpack(undefined, { enableAccessControl: false } as never)).toThrow(/enableAccessControl is gone: access control always applies/);
  });
});
