export { runFlow, resumeRun, forkRun, listRuns, loadRunPoint } from './durable.js';
export type { RunLocation, RunFlowOptions, ResumeRunOptions, ForkRunOptions, RunResult, RunPoint } from './durable.js';
export { StateTracker, applyStateDelta, type StateDelta } from './state-tracker.js';
export { diffJson, applyJsonDelta, jsonEqual, type JsonDelta } from './json-delta.js';
