/**
 * backpackflow public API. This file re-exports (each module's own index says what it offers), then freezes what it
 * exports (see seal.ts), before any code that imports the package runs.
 */
export * from './flow/index.js';
export * from './backpack/index.js';
export * from './events/index.js';
export * from './nodes/index.js';
export * from './nodes/llm/index.js';
export * from './store/index.js';
export * from './serialization/index.js';
export * from './runtime/index.js';
export * from './context/index.js';
// A name two modules define: the node layer's NodeContext is the public one.
export type { NodeContext } from './nodes/index.js';
export type { NodeContext as ContextNode } from './context/index.js';

import { sealPublicApi } from './seal.js';
import * as api from './index.js';
sealPublicApi(api);
