import type { FlowConfig, FlowConfigInput, FlowEdge, NodeConfig } from './schema.js';

type AnyFlowConfig = FlowConfig | FlowConfigInput;
type AnyNodeConfig = AnyFlowConfig['nodes'][number];

/** Every node of the config, depth first: each node, then the nodes of its internal flow, then subflows' nodes. */
export function flattenNodes(config: AnyFlowConfig): NodeConfig[] {
  const out: NodeConfig[] = [];
  const visit = (flow: AnyFlowConfig): void => {
    for (const node of flow.nodes) {
      out.push(node as NodeConfig);
      if (node.internalFlow) visit(node.internalFlow);
    }
    for (const sub of flow.subflows ?? []) visit(sub);
  };
  visit(config);
  return out;
}

/** Every edge of the config at every nesting level. */
export function flattenEdges(config: AnyFlowConfig): FlowEdge[] {
  const out: FlowEdge[] = [];
  const visit = (flow: AnyFlowConfig): void => {
    out.push(...((flow.edges ?? []) as FlowEdge[]));
    for (const node of flow.nodes) if (node.internalFlow) visit(node.internalFlow);
    for (const sub of flow.subflows ?? []) visit(sub);
  };
  visit(config);
  return out;
}

/** The node at a dot-separated path of node ids (`'agent.search'`: node `search` inside composite `agent`). */
export function findNode(config: AnyFlowConfig, path: string): NodeConfig | undefined {
  let flow: AnyFlowConfig | undefined = config;
  let found: AnyNodeConfig | undefined;
  for (const id of path.split('.')) {
    if (!flow) return undefined;
    found = flow.nodes.find((n: AnyNodeConfig) => n.id === id);
    if (!found) return undefined;
    flow = found.internalFlow;
  }
  return found as NodeConfig | undefined;
}

/** The composite nodes (those with an internal flow), at every level. */
export function getCompositeNodes(config: AnyFlowConfig): NodeConfig[] {
  return flattenNodes(config).filter((n) => n.internalFlow !== undefined);
}

/** Nesting depth: 0 for a flow without composites, 1 when a composite's internal flow has none, and so on. */
export function getMaxDepth(config: AnyFlowConfig): number {
  let max = 0;
  for (const node of config.nodes) if (node.internalFlow) max = Math.max(max, 1 + getMaxDepth(node.internalFlow));
  for (const sub of config.subflows ?? []) max = Math.max(max, getMaxDepth(sub));
  return max;
}
