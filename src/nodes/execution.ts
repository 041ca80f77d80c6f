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
 * The abort signal node code gets for one execution (its `scope.signal`): aborted when the run's own signal aborts,
 * with the same reason, and its listeners run in `execution` (the node's own, ended or not), whatever code called
 * `abort()` (the owner's, in no execution, or a handler in another node's execution). The run's signal is the
 * owner's object, never handed to node code: a listener added to it would run wherever the owner aborts, and a
 * property defined on it (an `aborted` getter) would run where the library reads it. `release` detaches it from the
 * run's signal (when the execution ends).
 */
export function executionSignal(run: AbortSignal, execution: NodeExecution): { signal: AbortSignal; release: () => void } {
  const controller = new AbortController();
  const forward = (): void => void currentExecution.run(execution, () => controller.abort(run.reason));
  if (run.aborted) forward();
  else run.addEventListener('abort', forward, { once: true });
  return { signal: controller.signal, release: () => run.removeEventListener('abort', forward) };
}

/**
 * The execution running now when it is not `madeIn` (the one a registry or loader was made in; undefined: made outside
 * any node's run): a registration from there is another node's code acting on what it did not make. Undefined
 * otherwise (the same context, or no execution).
 */
export function foreignExecution(madeIn: NodeExecution | undefined): NodeExecution | undefined {
  const running = currentExecution.getStore();
  return running !== undefined && running !== madeIn ? running : undefined;
}

let runStarted = false;

/** Records that a flow run has started in this process (see {@link anyRunStarted}). */
export function markRunStarted(): void {
  runStarted = true;
}

/**
 * Whether a flow run has started in this process. The package's shared registries (`defaultProviders`,
 * `defaultFlowLoader`) take registrations only before: from then on, code in no execution may be node code that
 * left it (a FinalizationRegistry callback, a `beforeExit` listener), not the owner setting up.
 */
export function anyRunStarted(): boolean {
  return runStarted;
}

/**
 * An execution of `node` that is over before it starts (frozen): what code of a node runs in outside its run (see
 * {@link asBuilder}). No backpack, emit, interrupt or step is available in it.
 */
function endedExecution(node: BackpackNode): NodeExecution {
  return Object.freeze({
    node,
    nodeName: '',
    scope: undefined as unknown as RunScope,
    spanId: '',
    handle: undefined as unknown as BackpackHandle,
    internalFlowCreated: false,
    failedAttempts: 0,
    interrupts: 0,
    ended: true,
    parent: undefined,
  });
}

/** Stands for the node a flow is adding while its class's code runs (see {@link asBuilder}): it is no node. */
const NODE_BEING_ADDED = Object.freeze({ id: '(a node being added)', namespace: '' }) as unknown as BackpackNode;

/**
 * Runs `build`, code of a node class that the library runs outside a run of that node (its constructor and the
 * statics a flow reads when it adds the node, its `fromConfig`; a composite's `buildInternalFlow`, with `node` the
 * composite), in an execution of `node` (or of no node) that is already over. So it acts as no other node, whatever
 * execution was current (the caller's: a flow built in a node's exec, a flowTool's flow): another node's secret params
 * read masked, no node's backpack, no emit, no interrupt, no step run; and it is not taken for the owner's code either,
 * as code in no execution is. `node`'s own secret params (and those of a node still being built) read as they are.
 */
export function asBuilder<T>(node: BackpackNode | undefined, build: () => T): T {
  return currentExecution.run(endedExecution(node ?? NODE_BEING_ADDED), build);
}

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
