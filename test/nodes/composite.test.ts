import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, FlowAction, FlowError, StreamEventType, type BackpackHandle, type StreamEvent } from '../../src/index.js';

/** Appends its id to the `trail` list in the backpack and completes. */
class Step extends BackpackNode {
  override post(backpack: BackpackHandle) {
    const trail = (backpack.unpack('trail') as string[] | undefined) ?? [];
    backpack.pack('trail', [...trail, this.id]);
    return FlowAction.COMPLETE;
  }
}

class SearchNode extends Step {}
class AnalysisNode extends Step {}
class SummaryNode extends Step {}

/** PRD-004 §3.2: a composite whose internal flow is search → analysis → summary, created in exec. */
class ResearchAgent extends BackpackNode {
  static override namespaceSegment = 'agent';
  override async exec() {
    const flow = this.createInternalFlow();
    const search = flow.addNode(SearchNode, { id: 'search' });
    const analysis = flow.addNode(AnalysisNode, { id: 'analysis' });
    const summary = flow.addNode(SummaryNode, { id: 'summary' });
    search.onComplete(analysis);
    analysis.onComplete(summary);
    flow.setEntryNode(search);
    await flow.run({});
    return 'done';
  }
  override post() {
    return FlowAction.COMPLETE;
  }
}

describe('composite nodes (PRD-004 §3, DESIGN D13)', () => {
  it('createInternalFlow inherits namespace, backpack and streamer (PRD-004 §9.1)', () => {
    const flow = new Flow({ namespace: 'youtube.research' });
    const node = flow.addNode(ResearchAgent, { id: 'agent' });
    expect(node.internalFlow).toBeUndefined();
    expect(node.isComposite()).toBe(false);
    const internal = node.createInternalFlow();
    expect(internal.namespace).toBe(node.namespace);
    // It shares the Backpack and streamer, but never hands the owner's views to node code.
    expect(() => internal.backpack).toThrow(/runs inside node 'agent': its Backpack is the owner's/);
    expect(() => internal.eventStreamer).toThrow(/runs inside node 'agent'/);
    expect(node.internalFlow).toBe(internal);
    expect(node.isComposite()).toBe(true);
    expect(() => node.createInternalFlow()).toThrow(/Internal flow already exists for node 'agent'/);
  });

  it('emits exactly four node.started events with the nested namespaces in order (PRD-004 §9.3)', async () => {
    const flow = new Flow({ namespace: 'youtube.research' });
    flow.addNode(ResearchAgent, { id: 'agent' });
    flow.backpack.pack('searchQuery', 'AI productivity');
    const events: StreamEvent[] = [];
    flow.eventStreamer.on('*', (e) => void events.push(e));
    await flow.run({});
    const starts = events.filter((e) => e.type === StreamEventType.NODE_START);
    expect(starts.map((e) => e.namespace)).toEqual([
      'youtube.research.agent',
      'youtube.research.agent.search',
      'youtube.research.agent.analysis',
      'youtube.research.agent.summary',
    ]);
    expect(flow.backpack.peek('trail')).toEqual(['search', 'analysis', 'summary']);
  });

  it("internal nodes' spans have the composite's span as parent", async () => {
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(ResearchAgent, { id: 'agent' });
    await flow.run();
    const starts = flow.eventStreamer.getHistory({ type: StreamEventType.NODE_START });
    const [agent, ...inner] = starts;
    const runSpan = flow.eventStreamer.getHistory({ type: StreamEventType.RUN_START })[0]!.spanId;
    expect(agent!.parentSpanId).toBe(runSpan);
    for (const e of inner) expect(e.parentSpanId).toBe(agent!.spanId);
    expect(new Set(starts.map((e) => e.spanId)).size).toBe(4);
  });

  it('runs correctly any number of times, building a fresh internal flow each time', async () => {
    const flow = new Flow({ namespace: 'app' });
    const agent = flow.addNode(ResearchAgent, { id: 'agent' });
    await flow.run();
    const first = agent.internalFlow;
    flow.backpack.delete('trail');
    await flow.run();
    await flow.run();
    expect(agent.internalFlow).not.toBe(first);
    expect(flow.backpack.peek('trail')).toEqual(['search', 'analysis', 'summary', 'search', 'analysis', 'summary']);
    expect(flow.eventStreamer.getHistory({ type: StreamEventType.NODE_START })).toHaveLength(12);
  });

  it('refuses a second createInternalFlow in the same execution', async () => {
    class Twice extends BackpackNode {
      override exec() {
        this.createInternalFlow();
        this.createInternalFlow();
      }
    }
    const flow = new Flow();
    flow.addNode(Twice, { id: 'twice' });
    const error = (await flow.run().catch((e: unknown) => e)) as Error;
    expect((error.cause as Error).message).toBe(
      `Internal flow already created for node 'twice' in this execution: call createInternalFlow() once per execution`,
    );
  });

  it('a composite declared up front exposes its internal flow before any run, runs it, and runs again', async () => {
    class Pipeline extends BackpackNode {
      static override namespaceSegment = 'pipeline';
      protected override buildInternalFlow(flow: Flow) {
        const a = flow.addNode(Step, { id: 'step1' });
        const b = flow.addNode(Step, { id: 'step2' });
        a.onComplete(b);
      }
    }
    const flow = new Flow({ namespace: 'app' });
    const node = flow.addNode(Pipeline, { id: 'p' });
    expect(node.isComposite()).toBe(true);
    expect(node.internalFlow!.getAllNodes().map((n) => n.id)).toEqual(['step1', 'step2']);
    expect(node.internalFlow!.namespace).toBe('app.pipeline');
    await flow.run();
    await flow.run();
    expect(flow.backpack.peek('trail')).toEqual(['step1', 'step2', 'step1', 'step2']);
    expect(flow.backpack.getItem('trail')?.metadata.sourceNamespace).toBe('app.pipeline.step2');
  });

  it('a declared internal flow cannot be modified once declared (nor after its first run)', async () => {
    class Pipeline extends BackpackNode {
      protected override buildInternalFlow(flow: Flow) {
        flow.addNode(Step, { id: 'only' });
      }
    }
    const flow = new Flow();
    const node = flow.addNode(Pipeline, { id: 'p' });
    await flow.run();
    const internal = node.internalFlow!;
    expect(() => internal.addNode(Step, { id: 'late' })).toThrow(FlowError);
    expect(() => internal.getNode('only')!.on('x', internal.getNode('only')!)).toThrow(/is the internal flow node 'p' declared \(buildInternalFlow\), complete once declared: its routes cannot change/);
  });
});

describe('seed examples', () => {
  it('tech spec ResearchAgentNode: chat → needs_search → search → summary, in namespace sales.researchAgent', async () => {
    class ChatNode extends BackpackNode {
      static override namespaceSegment = 'chat';
      override prep(backpack: BackpackHandle) {
        return backpack.unpackRequired('question') as string;
      }
      override exec(question: string) {
        return question.includes('latest') ? 'search_required' : 'answer';
      }
      override post(backpack: BackpackHandle, _q: string, intent: string) {
        backpack.pack('intent', intent);
        return intent === 'search_required' ? 'needs_search' : 'direct_answer';
      }
    }
    class Search extends BackpackNode {
      static override namespaceSegment = 'search';
      override post(backpack: BackpackHandle) {
        backpack.pack('searchResults', ['result one', 'result two']);
        return undefined;
      }
    }
    class Summary extends BackpackNode {
      static override namespaceSegment = 'summary';
      override prep(backpack: BackpackHandle) {
        return (backpack.unpack('searchResults') as string[] | undefined) ?? [];
      }
      override post(backpack: BackpackHandle, results: string[]) {
        backpack.pack('summary', results.length ? `Found: ${results.join(', ')}` : 'Answered directly');
        return undefined;
      }
    }
    class ResearchAgentNode extends BackpackNode {
      static override namespaceSegment = 'researchAgent';
      override async exec() {
        const internalFlow = this.createInternalFlow();
        const chatNode = internalFlow.addNode(ChatNode, { id: 'chat' });
        const searchNode = internalFlow.addNode(Search, { id: 'search' });
        const summaryNode = internalFlow.addNode(Summary, { id: 'summary' });
        chatNode.on('needs_search', searchNode);
        chatNode.on('direct_answer', summaryNode);
        searchNode.on('default', summaryNode);
        return internalFlow.run();
      }
    }
    for (const [question, summary, trail] of [
      ['what is the latest news?', 'Found: result one, result two', ['sales.researchAgent', 'sales.researchAgent.chat', 'sales.researchAgent.search', 'sales.researchAgent.summary']],
      ['what is 2 + 2?', 'Answered directly', ['sales.researchAgent', 'sales.researchAgent.chat', 'sales.researchAgent.summary']],
    ] as const) {
      const flow = new Flow({ namespace: 'sales' });
      flow.addNode(ResearchAgentNode, { id: 'agent' });
      await flow.run({ question });
      expect(flow.backpack.peek('summary')).toBe(summary);
      expect(flow.eventStreamer.getHistory({ type: StreamEventType.NODE_START }).map((e) => e.namespace)).toEqual(trail);
      expect(flow.backpack.getItem('summary')?.metadata.sourceNamespace).toBe('sales.researchAgent.summary');
    }
  });

  it('PRD-004 §11.1 simple composite: pipeline of three steps via onComplete', async () => {
    class Step1Node extends Step {}
    class Step2Node extends Step {}
    class Step3Node extends Step {}
    class PipelineNode extends BackpackNode {
      static override namespaceSegment = 'pipeline';
      override async exec(input: unknown) {
        const flow = this.createInternalFlow();
        const step1 = flow.addNode(Step1Node, { id: 'step1' });
        const step2 = flow.addNode(Step2Node, { id: 'step2' });
        const step3 = flow.addNode(Step3Node, { id: 'step3' });
        step1.onComplete(step2);
        step2.onComplete(step3);
        flow.setEntryNode(step1);
        await flow.run(input as Record<string, unknown>);
      }
    }
    const flow = new Flow({ namespace: 'jobs' });
    flow.addNode(PipelineNode, { id: 'pipeline' });
    await flow.run();
    expect(flow.backpack.peek('trail')).toEqual(['step1', 'step2', 'step3']);
    expect(flow.backpack.getItem('trail')?.metadata.sourceNamespace).toBe('jobs.pipeline.step3');
  });

  it('PRD-004 §11.2 three-level nesting: app.orchestrator.agent.search', async () => {
    class Search extends Step {}
    class AgentNode extends BackpackNode {
      override async exec() {
        const flow = this.createInternalFlow();
        flow.addNode(Search, { id: 'search' });
        await flow.run();
      }
    }
    class OrchestratorNode extends BackpackNode {
      override async exec() {
        const flow = this.createInternalFlow();
        flow.addNode(AgentNode, { id: 'agent' });
        await flow.run();
      }
    }
    const mainFlow = new Flow({ namespace: 'app' });
    const orchestrator = mainFlow.addNode(OrchestratorNode, { id: 'orchestrator' });
    await mainFlow.run();
    const starts = mainFlow.eventStreamer.getHistory({ type: StreamEventType.NODE_START });
    expect(starts.map((e) => e.namespace)).toEqual(['app.orchestrator', 'app.orchestrator.agent', 'app.orchestrator.agent.search']);
    expect(starts[1]!.parentSpanId).toBe(starts[0]!.spanId);
    expect(starts[2]!.parentSpanId).toBe(starts[1]!.spanId);
    const agent = orchestrator.internalFlow!.getNode('agent') as AgentNode;
    expect(agent.internalFlow!.getNode('search')!.id).toBe('search');
  });
});
