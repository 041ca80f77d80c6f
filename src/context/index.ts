/**
 * The context engine: a Merkle-hashed, content-addressed view of a workspace with immutable frames attached by
 * agents, bottom-up synthesis, incremental regeneration and read-time composition (DESIGN.md D18).
 */
export { ContextEngine } from './engine.js';
export type {
  AgentAdapter,
  ContextEngineOptions,
  FrameSummary,
  HeadRef,
  NodeAnnotation,
  NodeContext,
  RegenerateOptions,
  RegenerateResult,
  ScanReport,
  StatusReport,
} from './engine.js';
export type { AgentIdentity, AgentRole } from './agents.js';
export type { ComposedContext, ComposedFrame, CompositionOrdering, CompositionPolicy, CompositionSource } from './compose.js';
export { ContextError, type ContextErrorCode } from './errors.js';
export type { Frame, FrameInput, FrameMetadata, NodeBasis, SynthesisBasis } from './frames.js';
export { canonicalJson, loadHashBackend, type HashBackend } from './hash.js';
export { DEFAULT_IGNORED_NAMES, DEFAULT_SECRET_FILE_PATTERNS } from './ignore-rules.js';
export type { CustomSynthesisFn, SynthesisChild, SynthesisInput, SynthesisPolicy } from './synthesis.js';
export type { NodeKind, NodeRecord } from './tree.js';
export type { ValidationReport } from './validate.js';
export type { ContextView, FrameOrdering } from './view.js';
export type { ContextWatcher, WatchEvent, WatchOptions } from './watch.js';
