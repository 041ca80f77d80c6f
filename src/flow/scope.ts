/**
 * Where a node runs: the per-execution context the engine threads through `_run`. It carries nothing a node
 * keeps between runs (DESIGN D3): nodes are shared, scopes are per execution.
 */
export interface RunScope {
  /** Ids of the nodes that enclose this execution, outermost first (empty at the top-level flow). */
  readonly path: readonly string[];
  /** Parameters of the current batch-flow iteration (merged from outer to inner); empty otherwise. */
  readonly params: Readonly<Record<string, unknown>>;
  /** Stops the flow before its next step when aborted; the run rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /**
   * Position to resume at: node ids from the outermost flow inwards. Each flow takes the head as its first node;
   * the array is shared down the nesting and consumed as flows start.
   */
  readonly resume?: string[];
  /** Called after every step (node run and route decided); awaited, so a checkpoint can be made durable here. */
  readonly onStep?: (boundary: StepBoundary) => void | Promise<void>;
  /** Run id, for the layers that report events; the engine only passes it along. */
  readonly runId?: string;
  /** Span of the enclosing execution, for the layers that report events; the engine only passes it along. */
  readonly spanId?: string;
  /**
   * Answers to the pauses of this run (DESIGN D16), by the namespace of the node that asked, in the order it asked;
   * the engine only passes them along.
   */
  readonly answers?: ReadonlyMap<string, readonly unknown[]>;
}

/** One step of a flow: a node finished and the route was decided. */
export interface StepBoundary {
  /** Ids of the nodes enclosing the flow that took the step. */
  readonly path: readonly string[];
  /** Id of the node that just ran. */
  readonly completed: string;
  /** The action it returned (`'default'` for undefined). */
  readonly action: string;
  /** Id of the node that runs next, or undefined when this flow ends here. */
  readonly next: string | undefined;
  /** 1-based number of the step within this flow execution. */
  readonly step: number;
}

/** The scope of a run started at the top level. */
export const ROOT_SCOPE: RunScope = Object.freeze({ path: Object.freeze([]) as readonly string[], params: Object.freeze({}) });

/** The scope for the nodes inside `nodeId` (a nested flow or a composite node). */
export function enterScope(scope: RunScope, nodeId: string, changes?: Partial<RunScope>): RunScope {
  return { ...scope, path: [...scope.path, nodeId], ...changes };
}
