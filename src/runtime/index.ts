export { runFlow, resumeRun, forkRun, listRuns, loadRunPoint } from './durable.js';
export type { RunLocation, RunFlowOptions, ResumeRunOptions, ForkRunOptions, RunResult, RunPoint } from './durable.js';
export { StateTracker, applyStateDelta, type StateDelta } from './state-tracker.js';
export { diffJson, applyJsonDelta, type JsonDelta } from './json-delta.js';
