import { AsyncLocalStorage } from 'node:async_hooks';
import type { BackpackHandle } from '../backpack/index.js';
import type { RunScope } from '../flow/index.js';
import type { BackpackNode } from './backpack-node.js';

/**
 * One execution of a BackpackNode. Nodes are shared between runs (D3), so what belongs to one execution lives here,
 * found through async context, never in the node's fields.
 */
export interface NodeExecution {
  readonly node: BackpackNode;
  readonly scope: RunScope;
  /** The span of this execution; nodes of its internal flow use it as their parent span. */
  readonly spanId: string;
  /** The node's backpack handle for this execution (its events carry the run and span). */
  readonly handle: BackpackHandle;
  /** Set once `createInternalFlow()` was called in this execution. */
  internalFlowCreated: boolean;
  /** Attempts of exec that failed and were retried. */
  failedAttempts: number;
  /** Interrupts this execution has reached so far (answered or not). */
  interrupts: number;
  /**
   * Set when the execution's prep, exec and post are over (it returned or threw). Async context carries the execution
   * into timers and promises the node left running; they find it ended, so nothing they do is taken as part of it.
   */
  ended: boolean;
}

/** The execution the current async context belongs to. */
export const currentExecution = new AsyncLocalStorage<NodeExecution>();
