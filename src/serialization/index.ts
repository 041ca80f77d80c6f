import { setDefaultFlowConfigLoader } from '../nodes/index.js';
import { FlowLoader } from './loader.js';

export { FlowLoader, normalizeFlowConfig } from './loader.js';
export type { ExportOptions, LoadOptions, ConfigValidationReport, NodeLoadContext, LoadableNodeClass } from './loader.js';
export { DependencyContainer } from './container.js';
export { FlowConfigError, type ConfigProblem } from './errors.js';
export { FlowConfigSchema, NodeConfigSchema, FlowEdgeSchema, SUPPORTED_MAJOR_VERSION } from './schema.js';
export type { FlowConfig, FlowConfigInput, NodeConfig, FlowEdge } from './schema.js';
export { flattenNodes, flattenEdges, findNode, getCompositeNodes, getMaxDepth } from './query.js';
export { parseFlowConfig } from './parse.js';
export { maskSecrets, isSecretParamName, MASK } from './secrets.js';

/**
 * The loader `Flow.fromConfig` uses: register your node types on it (`defaultFlowLoader.register('Chat', ChatNode)`).
 */
export const defaultFlowLoader = new FlowLoader();
setDefaultFlowConfigLoader(defaultFlowLoader);
