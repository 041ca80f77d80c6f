import { z } from 'zod';
import { BackpackNode, FlowAction, FlowLoader, type BackpackHandle, type Flow } from '../../src/index.js';
import { register } from '../../examples/flows/nodes.js';

/** Stand-ins for the node types of the PRD-004 §4.1 example (offline). */
export class YouTubeSearchNode extends BackpackNode {
  static override paramsSchema = z.object({ apiKey: z.string().meta({ secret: true }), maxResults: z.number().int().min(1) });
  override post(backpack: BackpackHandle) {
    backpack.pack('videos', Array.from({ length: Math.min(3, this.params.maxResults as number) }, (_, i) => ({ id: `v${i}`, views: 100 * (i + 1) })));
    return FlowAction.COMPLETE;
  }
}
export class DataAnalysisNode extends BackpackNode {
  static override paramsSchema = z.object({ metric: z.string(), threshold: z.number() });
  override post(backpack: BackpackHandle) {
    const videos = backpack.unpackRequired('videos') as { views: number }[];
    backpack.pack('outliers', videos.filter((v) => v.views > 150 * (this.params.threshold as number)).length);
    return FlowAction.COMPLETE;
  }
}
export class ChatStandInNode extends BackpackNode {
  static override paramsSchema = z.object({ model: z.string(), temperature: z.number().optional(), systemPrompt: z.string() });
  override post(backpack: BackpackHandle) {
    backpack.pack('summary', `${this.params.model}: ${backpack.unpack('outliers') as number} outliers`);
    return FlowAction.COMPLETE;
  }
}
export class YouTubeResearchAgentNode extends BackpackNode {
  static override namespaceSegment = 'agent';
}

/** A loader with the example node types and the PRD-004 stand-ins registered. */
export function exampleLoader(): FlowLoader {
  const loader = new FlowLoader();
  register(loader);
  loader
    .register('YouTubeSearchNode', YouTubeSearchNode)
    .register('DataAnalysisNode', DataAnalysisNode)
    .register('BaseChatCompletionNode', ChatStandInNode)
    .register('YouTubeResearchAgentNode', YouTubeResearchAgentNode);
  return loader;
}

/** PRD-004 §4.1, verbatim but for the `"..."` prompt. */
export const prdExample = {
  version: '2.0.0',
  namespace: 'youtube.research',
  nodes: [
    {
      type: 'YouTubeResearchAgentNode',
      id: 'agent',
      params: {},
      internalFlow: {
        version: '2.0.0',
        namespace: 'youtube.research.agent',
        nodes: [
          { type: 'YouTubeSearchNode', id: 'search', params: { apiKey: '***', maxResults: 50 } },
          { type: 'DataAnalysisNode', id: 'analysis', params: { metric: 'views', threshold: 1.5 } },
          { type: 'BaseChatCompletionNode', id: 'summary', params: { model: 'gpt-4', temperature: 0.7, systemPrompt: 'Analyze YouTube videos' } },
        ],
        edges: [
          { from: 'search', to: 'analysis', condition: 'complete' },
          { from: 'analysis', to: 'summary', condition: 'complete' },
        ],
        dependencies: {},
      },
    },
  ],
  edges: [],
  dependencies: {},
};

/** The trail of node namespaces a run started, from a flow's event history. */
export function startedNamespaces(flow: Flow): string[] {
  return flow.eventStreamer.getHistory({ type: 'node.started' }).map((e) => e.namespace!);
}
