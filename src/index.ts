/**
 * backpackflow public API. This file only re-exports; each module's own index says what it offers.
 */
export * from './flow/index.js';
export * from './backpack/index.js';
export * from './events/index.js';
export * from './nodes/index.js';
export * from './runtime/index.js';
