/**
 * Where a node runs: the per-execution context the engine threads through `_run`. It carries nothing a node
 * keeps between runs (DESIGN D3): nodes are shared, scopes are per execution. A scope and its `path` are frozen:
 * nodes receive it (`prep(shared, scope)`), and one node's code must not change where later steps run or what they
 * record. What only the engine may use (the resume position, the step callback, the answers to pauses) is not on it:
 * see {@link RunControls}.
 */
export interface RunScope {
  /** Ids of the nodes that enclose this execution, outermost first (empty at the top-level flow). */
  readonly path: readonly string[];
  /** Parameters of the current batch-flow iteration (merged from outer to inner); empty otherwise. */
  readonly params: Readonly<Record<string, unknown>>;
  /** Stops the flow before its next step when aborted; the run rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** Run id, for the layers that report events; the engine only passes it along. */
  readonly runId?: string;
  /** Span of the enclosing execution, for the layers that report events; the engine only passes it along. */
  readonly spanId?: string;
}

/**
 * What the engine keeps for one run beside its scopes, found with {@link runControls}: held in a WeakMap of this
 * module, never on the scope object nodes receive. A node that could set them would answer another node's pause,
 * start a later flow past its gate, or record a checkpoint at a position of its choosing (audit of 2026-11-28).
 * Every scope made from a scope ({@link enterScope}, a batch's) shares its run's controls.
 */
export interface RunControls {
  /**
   * Position to resume at: node ids from the outermost flow inwards. Each flow takes the head as its first node;
   * the array is shared down the nesting and consumed as flows start.
   */
  readonly resume?: string[];
  /** Called after every step (node run and route decided); awaited, so a checkpoint can be made durable here. */
  readonly onStep?: (boundary: StepBoundary) => void | Promise<void>;
  /**
   * Answers to the pauses of this run (DESIGN D16), by the namespace of the node that asked, in the order it asked;
   * the engine only passes them along.
   */
  readonly answers?: ReadonlyMap<string, readonly unknown[]>;
  /**
   * Whether the answer given in `answers` for the pause `index` of the node at `namespace` answers `question` (the
   * InterruptInfo the node asks now); false: it was given to another question (the node read something that changed
   * while the run waited), and the node pauses again. Without it, every answer answers its position.
   */
  readonly sameQuestion?: (namespace: string, index: number, question: unknown) => boolean;
  /**
   * A resume of a run whose last step ended its flow (its end was not recorded): the top-level flow runs no node, its
   * orchestration returns `action` (the last node's, as recorded), and its own `post` runs on it. Taken once.
   */
  readonly atEnd?: { readonly action: string; taken: boolean };
}

const controls = new WeakMap<RunScope, RunControls>();

/** The engine's controls of the run `scope` belongs to (see {@link RunControls}), if it has any. */
export function runControls(scope: RunScope): RunControls | undefined {
  return controls.get(scope);
}

/**
 * A frozen scope of `fields` (its `path` frozen too) with the run's `controls`: how a run's first scope is made.
 * Not exported from the package.
 */
export function makeScope(fields: RunScope, runControls?: RunControls): RunScope {
  const scope = Object.freeze({ ...fields, path: Object.isFrozen(fields.path) ? fields.path : Object.freeze([...fields.path]) });
  if (runControls !== undefined) controls.set(scope, runControls);
  return scope;
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
export const ROOT_SCOPE: RunScope = makeScope({ path: [], params: Object.freeze({}) });

/** The scope for the nodes inside `nodeId` (a nested flow or a composite node): frozen, with `scope`'s run controls. */
export function enterScope(scope: RunScope, nodeId: string, changes?: Pick<RunScope, 'spanId'>): RunScope {
  return derive(scope, { ...scope, path: [...scope.path, nodeId], ...changes });
}

/** `fields` as a frozen scope with the run controls of `from`, the scope it was made from. */
export function derive(from: RunScope, fields: RunScope): RunScope {
  return makeScope(fields, controls.get(from));
}
