/**
 * `backpackflow/langgraph`: a LangGraph.js checkpointer over backpackflow's run store. Needs the optional peers
 * `@langchain/langgraph-checkpoint` and `@langchain/core`.
 */
export { BackpackflowSaver, LANGGRAPH_NAMESPACE } from './saver.js';
export type { BackpackflowSaverOptions } from './saver.js';
export { RunStoreRecordStore } from './record-store.js';
export type { CheckpointRecordStore, RunStoreRecordStoreOptions } from './record-store.js';
export { threadRunId } from './encoding.js';

import { sealPublicApi } from '../seal.js';
import * as api from './index.js';
// Frozen before any code that imports this entry point runs (see seal.ts).
sealPublicApi(api);
