export { BackpackNode, backpackKeyProblem, describeError, nodePermissions } from './backpack-node.js';
export { NodeEventView } from './event-view.js';
export type { FlowView, BackpackNodeConfig, BackpackNodeClass, NodeContext, DataContract, DependencyLookup } from './backpack-node.js';
export { Flow, setDefaultFlowConfigLoader } from './flow.js';
export type { FlowOptions, FlowRunOptions, FlowConfigLoader, FlowStats } from './flow.js';
export { ContractValidationError } from './errors.js';
export type { ContractViolation } from './errors.js';
export { composeNamespace, checkNamespace } from './namespace.js';
export { RunInterrupted, InterruptAnswerError, checkAnswer, schemaFromJson } from './interrupt.js';
