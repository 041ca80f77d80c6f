import { setDefaultFlowConfigLoader } from '../nodes/flow.js';
import { llmNodeTypes } from '../nodes/llm/index.js';
import { FlowLoader, shareLoader } from './loader.js';

export { FlowLoader, normalizeFlowConfig } from './loader.js';
export type { ExportOptions, ExportableNode, LoadOptions, ValidateOptions, ConfigValidationReport, NodeLoadContext, NodeLoadFlow, LoadableNodeClass } from './loader.js';
export { DependencyContainer, BACKPACK_DEP, EVENT_STREAMER_DEP } from './container.js';
export { FlowConfigError, type ConfigProblem } from './errors.js';
export { FlowConfigSchema, NodeConfigSchema, FlowEdgeSchema, McpServerSchema, SUPPORTED_MAJOR_VERSION } from './schema.js';
export type { FlowConfig, FlowConfigInput, NodeConfig, FlowEdge } from './schema.js';
export { flattenNodes, flattenEdges, findNode, getCompositeNodes, getMaxDepth } from './query.js';
export { parseFlowConfig, readFlowConfigFile, jsonErrorOffset } from './parse.js';
export type { ParseFlowConfigOptions } from './parse.js';
export { DEFAULT_MAX_FLOW_BYTES, MAX_JSON_NESTING, nestingProblem, stripBom } from './limits.js';
export { maskSecrets, isSecretParamName, MASK } from './secrets.js';

/**
 * The loader `Flow.fromConfig` uses. The built-in LLM nodes are registered on it (`ChatNode`,
 * `BaseChatCompletionNode`, `DecisionNode`, `AgentNode`, ...); register your own node types too, before the first
 * flow runs in the process (then it takes no more: node code may run outside any node's run by then).
 */
export const defaultFlowLoader = new FlowLoader();
for (const [type, NodeClass] of Object.entries(llmNodeTypes)) defaultFlowLoader.register(type, NodeClass);
shareLoader(defaultFlowLoader);
setDefaultFlowConfigLoader(defaultFlowLoader);
