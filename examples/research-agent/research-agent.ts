/**
 * The PRD-004 research agent as a composite node: an internal flow search → analysis → summary, built up front so
 * that exporting the flow shows it. The search step is a tool-calling agent with a local search tool; analysis and
 * summary are chat nodes. Every step uses the composite's model settings.
 */
import { z } from 'zod';
import { BackpackNode, Flow } from '../../src/nodes/index.js';
import { AgentNode, ChatNode, llmParamsShape } from '../../src/nodes/llm/index.js';
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
      promptKey: 'query',
      systemPrompt: 'You are a research assistant. Use the search_corpus tool to find sources, then list the relevant findings with their ids.',
      maxSteps: 3,
      outputKey: 'findings',
      toolResultsKey: 'sources',
    });
    search.registerTool('search_corpus', searchTool);
    const analysis = flow.addNode(ChatNode, {
      id: 'analysis',
      ...connection,
      promptKey: 'findings',
      contextKeys: ['query'],
      systemPrompt: 'Analysis step: compare the findings, note trade-offs and what the sources agree on.',
      outputKey: 'analysis',
    });
    const summary = flow.addNode(ChatNode, {
      id: 'summary',
      ...connection,
      promptKey: 'analysis',
      contextKeys: ['query'],
      systemPrompt: 'Summary step: answer the query in three sentences for a decision maker.',
      outputKey: 'summary',
    });
    search.next(analysis).next(summary);
  }
}

/** A flow holding one research agent, configured with `params` (model settings). */
export function createResearchFlow(params: Record<string, unknown>, options: ConstructorParameters<typeof Flow>[0] = {}): Flow {
  const flow = new Flow({ namespace: 'app', ...options });
  flow.addNode(ResearchAgentNode, { id: 'researcher', ...params });
  return flow;
}
