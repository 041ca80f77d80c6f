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
  /**
   * The class name the node was registered under when its flow added it: what its events name (not the class's
   * `name` now, which node code can redefine).
   */
  readonly nodeName: string;
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
  /** The execution this one runs inside (a composite's, for a node of its internal flow), if any. */
  readonly parent: NodeExecution | undefined;
  /**
   * The pause (a RunInterrupted that `interrupt()` made) this execution ended with, when it did: a pause stands for
   * the run's question only as it goes up from the execution that asked through those it runs in, each ending with it.
   */
  paused?: unknown;
}

/** The execution the current async context belongs to. */
export const currentExecution = new AsyncLocalStorage<NodeExecution>();

/**
 * Steps a flow hands to its nodes: the scope a node's `_run` was called with by its flow's `runStep`, taken once.
 * `_run` is public (PocketFlow's shape), and node code reaches other nodes (`this.successors`): a node must not run
 * another out of the flow's order (a `publish` behind an `approve`), nor itself as a step no route took.
 */
const steps = new WeakMap<object, RunScope>();

/** Lets `node` run the next time its `_run` is called with `scope` (see {@link takeStep}). */
export function grantStep(node: object, scope: RunScope): void {
  steps.set(node, scope);
}

/** Whether `node`'s flow granted it this step (`scope`); the grant is used up either way. */
export function takeStep(node: object, scope: RunScope): boolean {
  const granted = steps.get(node);
  steps.delete(node);
  return granted !== undefined && granted === scope;
}
