/**
 * The PRD-004 research agent as a composite node: an internal flow search → analysis → summary, built up front so
 * that exporting the flow shows it. The search step is a tool-calling agent with the local search tool (from the
 * `tools` dependency, so the flow exports to JSON and loads back); analysis and summary are chat nodes. Every step
 * uses the composite's model settings.
 */
import { z } from 'zod';
import { BackpackNode, Flow } from '../../src/nodes/index.js';
import { AgentNode, ChatNode, llmNodeTypes, llmParamsShape, TOOLBOX_DEP } from '../../src/nodes/llm/index.js';
import { DependencyContainer, FlowLoader } from '../../src/serialization/index.js';
import { searchTool } from './search-tool.js';

const connectionKeys = ['model', 'modelRef', 'apiKey', 'baseURL', 'timeoutMs', 'retry', 'temperature'] as const;

/** The research agent: reads `query`, packs `findings`, `analysis` and `summary` under its namespace's nodes. */
export class ResearchAgentNode extends BackpackNode {
  static override namespaceSegment = 'research';
  static override paramsSchema = z.strictObject({
    model: llmParamsShape.model,
    modelRef: llmParamsShape.modelRef,
    apiKey: llmParamsShape.apiKey,
    baseURL: llmParamsShape.baseURL,
    timeoutMs: llmParamsShape.timeoutMs,
    retry: llmParamsShape.retry,
    temperature: llmParamsShape.temperature,
  });

  protected override buildInternalFlow(flow: Flow): void {
    const connection: Record<string, unknown> = {};
    for (const key of connectionKeys) if (this.params[key] !== undefined) connection[key] = this.params[key];
    const search = flow.addNode(AgentNode, {
      id: 'search',
      ...connection,
      promptFrom: 'query',
      systemPrompt: 'You are a research assistant. Use the search_corpus tool to find sources, then list the relevant findings with their ids.',
      tools: ['search_corpus'],
      maxSteps: 3,
      outputTo: 'findings',
      toolResultsTo: 'sources',
    });
    const analysis = flow.addNode(ChatNode, {
      id: 'analysis',
      ...connection,
      promptFrom: 'findings',
      contextFrom: ['query'],
      systemPrompt: 'Analysis step: compare the findings, note trade-offs and what the sources agree on.',
      outputTo: 'analysis',
    });
    const summary = flow.addNode(ChatNode, {
      id: 'summary',
      ...connection,
      promptFrom: 'analysis',
      contextFrom: ['query'],
      systemPrompt: 'Summary step: answer the query in three sentences for a decision maker.',
      outputTo: 'summary',
    });
    search.next(analysis).next(summary);
  }
}

/** The dependencies the research agent needs: the toolbox with the local search tool. */
export function researchDependencies(): DependencyContainer {
  return new DependencyContainer().register(TOOLBOX_DEP, { search_corpus: searchTool });
}

/** A flow loader that knows the LLM node types and the research agent. */
export function researchLoader(): FlowLoader {
  const loader = new FlowLoader();
  for (const [type, NodeClass] of Object.entries(llmNodeTypes)) loader.register(type, NodeClass);
  return loader.register('ResearchAgent', ResearchAgentNode);
}

/** A flow holding one research agent, configured with `params` (model settings). */
export function createResearchFlow(params: Record<string, unknown>): Flow {
  const flow = new Flow({ namespace: 'app', deps: researchDependencies() });
  flow.addNode(ResearchAgentNode, { id: 'researcher', ...params });
  return flow;
}
