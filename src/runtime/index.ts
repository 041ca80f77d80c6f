export { runFlow, resumeRun, forkRun, listRuns, listedRun } from './durable.js';
export type { RunFlowOptions, ResumeRunOptions, ForkRunOptions, RunResult, ListRunsOptions } from './durable.js';
export type { RunLocation } from './location.js';
export { loadRunPoint } from './run-point.js';
export type { RunPoint } from './run-point.js';
export { StateTracker, applyStateDelta, type StateDelta } from './state-tracker.js';
export { diffJson, applyJsonDelta, type JsonDelta } from './json-delta.js';
export { verifyRun } from './verify.js';
export type { RunVerification, KeyframeCheck } from './verify.js';
