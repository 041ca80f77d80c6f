export { FlowAction, DEFAULT_ACTION } from './actions.js';
export { FlowError, FlowSignal, NodeExecutionError } from './errors.js';
export { BaseNode, Node, BatchNode, ParallelBatchNode, delay } from './node.js';
// routeOf and routeTable are the library's (nodes/, runtime/ and serialization/ import them from node.js).
export type { BaseNodeOptions, NodeOptions, ParallelBatchNodeOptions, Attempt } from './node.js';
export { BaseFlow, BatchFlow, ParallelBatchFlow, missingRouteMessage } from './flow.js';
export type { BaseFlowOptions, ParallelBatchFlowOptions, MissingRoutePolicy } from './flow.js';
// makeScope, derive and runControls are the engine's (nodes/ imports them from scope.js): a node must not reach its run's controls.
export { ROOT_SCOPE, enterScope } from './scope.js';
export type { RunScope, StepBoundary } from './scope.js';
export { mapConcurrent } from './concurrency.js';
export { mappingProblems, checkMappings } from './mappings.js';
export type { RouteMappings, RouteOptions, MappingProblem } from './mappings.js';
