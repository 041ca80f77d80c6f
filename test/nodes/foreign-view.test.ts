/**
 * Node code runs only in its own execution (review s24, findings 1 and 2). Code the library ran in no execution was
 * taken for the owner's, which reads every node's secret params in clear: a handler one node subscribed on another
 * node's eventStreamer ran there, and so did a node class's own routing methods, which the flow consulted to choose
 * the next step (a class could also skip a gate that way). Now a node reads and subscribes only through its own view,
 * and flows route by the routing table the flow's author drew, never through a method a node class can override.
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, ChatNode, Flow, FlowLoader, MASK, type BackpackHandle } from '../../src/index.js';
import type { BaseNode } from '../../src/flow/index.js';

const SECRET = 'sk-live-SECRET-0123456789abcdef';
const chatConfig = { id: 'chat', model: 'openai-compatible:test-model', baseURL: 'http://127.0.0.1:9', apiKey: SECRET, promptFrom: 'question' };

describe("another node's eventStreamer", () => {
  for (const use of ['on', 'once', 'onNamespace', 'getHistory', 'visible'] as const) {
    it(`node code cannot ${use} through it (it would act with that node's view, in no execution of its own)`, async () => {
      const seen: unknown[] = [];
      let refused: unknown;
      class Evil extends BackpackNode {
        override prep(bp: BackpackHandle): void {
          const chat = this.successors.get('ask') as BackpackNode;
          const view = chat.eventStreamer;
          const read = (): void => void seen.push(chat.config['apiKey']);
          try {
            if (use === 'on') view.on('*', read);
            else if (use === 'once') view.once('*', read);
            else if (use === 'onNamespace') view.onNamespace('**', read);
            else if (use === 'getHistory') seen.push(...view.getHistory());
            else seen.push(view.visible({ v: 1, id: 'e', seq: 1, timestamp: 0, type: 'backpack.packed', payload: { key: 'question', version: 1 } } as never));
          } catch (error) {
            refused = error;
          }
          bp.pack('trigger', 1);
        }
        override post(): string {
          return 'end';
        }
      }
      const flow = new Flow({ onMissingRoute: 'end' });
      const evil = flow.addNode(Evil, { id: 'evil' });
      const chat = flow.addNode(ChatNode, chatConfig);
      evil.on('ask', chat);
      flow.setEntryNode(evil);
      await flow.run({ question: 'hi' });
      expect(refused).toBeInstanceOf(TypeError);
      expect(String((refused as Error).message)).toContain("Node 'evil' cannot");
      expect(seen).toEqual([]);
      // The owner reads every event through the flow's streamer. A node's view, from code in no execution, only
      // before the flow's first run: afterwards a node's escaped code (a FinalizationRegistry callback, a timer left
      // running into the next run) would pass for the owner (review s51a H2).
      expect(flow.eventStreamer.getHistory({ type: 'backpack.packed' }).map((e) => e.payload.key)).toContain('trigger');
      expect(() => chat.eventStreamer.getHistory()).toThrow(/once its flow has run/);
    });
  }

  it("a node's own subscriber runs in its execution, where another node's secret params are masked", async () => {
    const read: unknown[] = [];
    class Watcher extends BackpackNode {
      override prep(bp: BackpackHandle): void {
        const chat = this.successors.get('ask') as BackpackNode;
        const stop = this.eventStreamer.on('backpack.packed', () => {
          read.push(chat.config['apiKey']);
          stop();
        });
        bp.pack('trigger', 1);
      }
      override post(): string {
        return 'end';
      }
    }
    const flow = new Flow({ onMissingRoute: 'end' });
    const watcher = flow.addNode(Watcher, { id: 'watcher' });
    watcher.on('ask', flow.addNode(ChatNode, chatConfig));
    flow.setEntryNode(watcher);
    await flow.run({ question: 'hi' });
    expect(read).toEqual([MASK]);
  });
});

describe('flows route by the routing table, not by methods a node class overrides', () => {
  function gated(overrides: Partial<Pick<BaseNode, 'getNextNode' | 'getRouteMappings'>> & { successorCount?: number; successors?: ReadonlyMap<string, BaseNode> }) {
    const ran: string[] = [];
    let consulted = 0;
    class Worker extends BackpackNode {
      override post(): string {
        ran.push(this.id);
        return 'default';
      }
      override getNextNode(action?: string): BaseNode | undefined {
        consulted++;
        const approve = super.getNextNode(action);
        return overrides.getNextNode ? approve?.getNextNode('yes') : approve;
      }
      override getRouteMappings(action?: string) {
        consulted++;
        return overrides.getRouteMappings ? { secret: 'copied' } : super.getRouteMappings(action);
      }
      override get successorCount(): number {
        consulted++;
        return overrides.successorCount ?? super.successorCount;
      }
      override get successors(): ReadonlyMap<string, BaseNode> {
        consulted++;
        return overrides.successors ?? super.successors;
      }
    }
    class Approve extends BackpackNode {
      override post(): string {
        ran.push(this.id);
        return 'no';
      }
    }
    class Publish extends BackpackNode {
      override post(backpack: BackpackHandle): undefined {
        ran.push(this.id);
        backpack.pack('published', true);
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'p', onMissingRoute: 'throw' });
    const worker = flow.addNode(Worker, { id: 'worker' });
    const approve = flow.addNode(Approve, { id: 'approve' });
    const publish = flow.addNode(Publish, { id: 'publish' });
    worker.next(approve);
    approve.on('yes', publish);
    approve.on('no', flow.addNode(Approve, { id: 'rejected' }));
    return { flow, ran, consulted: () => consulted };
  }

  it('a getNextNode override cannot send the run past a gate (approve) to the node behind it', async () => {
    const { flow, ran, consulted } = gated({ getNextNode: () => undefined });
    await flow.run({ secret: 's' });
    expect(ran).toEqual(['worker', 'approve', 'rejected']);
    expect(flow.backpack.unpack('published')).toBeUndefined();
    expect(consulted()).toBe(0);
  });

  it('a getRouteMappings override copies nothing and is not what route.taken reports', async () => {
    const { flow, consulted } = gated({ getRouteMappings: () => undefined });
    await flow.run({ secret: 's' });
    expect(flow.backpack.unpack('copied')).toBeUndefined();
    const taken = flow.eventStreamer.getHistory({ type: 'route.taken' }).find((e) => e.nodeId === 'worker')!;
    expect(taken.payload).toEqual({ action: 'default', from: 'worker', to: 'approve' });
    expect(consulted()).toBe(0);
  });

  it('exportFlow and getStats read the routes the author drew, running no node code', async () => {
    const { flow, consulted } = gated({ successorCount: 0, successors: new Map() });
    const exported = new FlowLoader().exportFlow(flow);
    expect(exported.edges.map((e) => `${e.from}-${e.condition}->${e.to}`)).toEqual(['worker-default->approve', 'approve-yes->publish', 'approve-no->rejected']);
    expect(flow.getStats().edgeCount).toBe(3);
    expect(consulted()).toBe(0);
  });
});

describe("a node's eventStreamer view is frozen", () => {
  it('another node cannot put a method of its own on it, which the node would call as itself', async () => {
    const outcome: string[] = [];
    class Evil extends BackpackNode {
      override prep(): void {
        const view = (this.successors.get('next') as BackpackNode).eventStreamer;
        try {
          Object.defineProperty(view, 'emit', { value: () => outcome.push('planted emit ran') });
        } catch (error) {
          outcome.push((error as Error).name);
        }
      }
      override post(): string {
        return 'next';
      }
    }
    class Reporter extends BackpackNode {
      override prep(): void {
        this.eventStreamer.emit({ type: 'custom', payload: { note: 'hello' } });
      }
    }
    const flow = new Flow({ onMissingRoute: 'end' });
    const evil = flow.addNode(Evil, { id: 'evil' });
    evil.on('next', flow.addNode(Reporter, { id: 'reporter' }));
    await flow.run();
    expect(outcome).toEqual(['TypeError']);
    expect(flow.eventStreamer.getHistory({ type: 'custom' }).map((e) => e.nodeId)).toEqual(['reporter']);
  });
});
