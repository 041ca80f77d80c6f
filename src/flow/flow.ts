import { checkAction, DEFAULT_ACTION } from './actions.js';
import { checkConcurrency, mapConcurrent } from './concurrency.js';
import { FlowError } from './errors.js';
import type { RouteMappings } from './mappings.js';
import { BaseNode, routeOf, routeTable, type BaseNodeOptions, type TakenRoute } from './node.js';
import { ROOT_SCOPE, derive, enterScope, runControls, type RunScope } from './scope.js';
import { hardenClass } from '../harden.js';

/** What a flow does when a node returns an action that has no route: see {@link BaseFlowOptions.onMissingRoute}. */
export type MissingRoutePolicy = 'end' | 'warn' | 'throw';

/** Options of a flow. */
export interface BaseFlowOptions<S = any> extends BaseNodeOptions {
  /** The entry node (also settable with `setEntryNode`). */
  start?: BaseNode<S>;
  /** Most steps one execution of the flow may take; a cycle beyond it is an error. Default 1000. */
  maxSteps?: number;
  /**
   * A node whose action has no route, while it has other routes: `'warn'` (default) ends the flow and reports it,
   * `'end'` ends it silently, `'throw'` raises a FlowError. A node with no routes at all always ends the flow quietly.
   */
  onMissingRoute?: MissingRoutePolicy;
}

const POLICIES: readonly MissingRoutePolicy[] = ['end', 'warn', 'throw'];
const RECENT_NODES = 5;

/** A check of a flow's entry node about to change (see {@link setEntryGuard}). */
export type EntryGuard = (flow: BaseFlow, node: BaseNode) => void;
let entryGuard: EntryGuard | undefined;

/**
 * Sets the check `BaseFlow.setEntryNode` asks before the entry changes (see setRouteGuard): set once by the nodes
 * module. Not exported from the package.
 */
export function setEntryGuard(guard: EntryGuard): void {
  if (entryGuard !== undefined) throw new FlowError('The entry guard is set once, by the nodes module');
  entryGuard = guard;
}

/**
 * The flow engine (PocketFlow semantics, DESIGN D1-D3): runs nodes from the entry node, following the action each
 * returns, until a node has no route. A flow is itself a node, so flows nest. `run(shared)` passes `shared` to every
 * node. The namespaced, Backpack-aware `Flow` builds on this class.
 */
export class BaseFlow<S = any> extends BaseNode<S, any, string | undefined> {
  /** Most steps per execution. */
  readonly maxSteps: number;
  /** Policy for an action without a route. */
  readonly onMissingRoute: MissingRoutePolicy;
  #entry: BaseNode<S> | undefined;
  #executions = 0;
  #stepsRun = 0;

  constructor(options: BaseFlowOptions<S> = {}) {
    super(options);
    const { maxSteps = 1000, onMissingRoute = 'warn' } = options;
    if (!Number.isInteger(maxSteps) || maxSteps < 1) {
      throw new RangeError(`Flow '${this.id}': maxSteps must be an integer >= 1; got ${maxSteps}`);
    }
    if (!POLICIES.includes(onMissingRoute)) {
      throw new RangeError(`Flow '${this.id}': onMissingRoute must be one of ${POLICIES.join(', ')}; got ${String(onMissingRoute)}`);
    }
    this.maxSteps = maxSteps;
    this.onMissingRoute = onMissingRoute;
    this.#entry = options.start;
  }

  /** The node the flow starts at. */
  get entryNode(): BaseNode<S> | undefined {
    return this.#entry;
  }

  /** Makes `node` the entry node. */
  setEntryNode(node: BaseNode<S>): this {
    if (!(node instanceof BaseNode)) throw new TypeError(`Flow '${this.id}': entry node must be a node, got ${String(node)}`);
    // Here, not in an override: see BaseNode.on.
    entryGuard?.(this, node);
    this.#entry = node;
    return this;
  }

  /** Runs the whole flow with `shared` as the state every node sees; resolves to the last action. */
  override run(shared: S): Promise<string | undefined> {
    return this.execute(shared, ROOT_SCOPE);
  }

  /** As a node inside another flow: its nodes run with this flow's id added to the scope's path. */
  override _run(shared: S, scope: RunScope = ROOT_SCOPE): Promise<string | undefined> {
    return this.execute(shared, enterScope(scope, this.id));
  }

  /** Times this flow ran its nodes from the entry (or a resume position): per run, per batch of a batch flow. */
  get executions(): number {
    return this.#executions;
  }

  /** Steps (node executions) its runs took, over all of them; a nested flow's steps are that flow's. */
  get stepsRun(): number {
    return this.#stepsRun;
  }

  /** prep, the orchestration in place of exec, then post; `scope` is the scope of the flow's own nodes. */
  protected async execute(shared: S, scope: RunScope): Promise<string | undefined> {
    const prepRes = await this.prep(shared, scope);
    const action = await this._orchestrate(shared, scope);
    return this.post(shared, prepRes, action);
  }

  /** Returns the last action, so an enclosing flow routes on how this one ended. */
  override post(_shared: S, _prepRes: unknown, execRes: string | undefined): string | undefined | Promise<string | undefined> {
    return execRes;
  }

  /** Follows routes from the entry (or resume) node until one has none; returns the last action. */
  protected async _orchestrate(shared: S, scope: RunScope): Promise<string | undefined> {
    // A resume after the flow's last step: its nodes are done, and the flow's own post runs on the recorded action.
    const atEnd = scope.path.length === 0 ? runControls(scope)?.atEnd : undefined;
    if (atEnd !== undefined && !atEnd.taken) {
      atEnd.taken = true;
      return atEnd.action;
    }
    this.#executions++;
    let current = this.resumeNode(scope) ?? this.#entry;
    if (!current) {
      throw new FlowError(`Flow '${this.id}' has no entry node: add a node or call setEntryNode(node)`);
    }
    const recent: string[] = [];
    let action: string | undefined;
    for (let step = 1; current; step++) {
      if (step > this.maxSteps) {
        throw new FlowError(
          `Flow '${this.id}' exceeded maxSteps (${this.maxSteps}); last nodes visited: ${recent.join(' → ')}. ` +
            `A route cycle does not end: add an exit route, or raise maxSteps.`,
        );
      }
      if (scope.signal?.aborted) throw scope.signal.reason;
      this.#stepsRun++;
      action = await this.runStep(current, shared, scope);
      // Only a string (or undefined) goes on: into routing, events and the step boundary.
      checkAction(current.id, action);
      // From the node's routing table, not its (overridable) routing methods: the routes its flow's author drew.
      const { next, mappings, count }: TakenRoute<S> = routeOf(current, action);
      if (next) {
        if (mappings) this.applyMappings(current, action ?? DEFAULT_ACTION, next, mappings, shared, scope);
        this.routeTaken(current, action ?? DEFAULT_ACTION, next, scope);
      }
      else if (count > 0) this.routeMissing(current, action ?? DEFAULT_ACTION, scope);
      const onStep = runControls(scope)?.onStep;
      if (onStep) await onStep({ path: scope.path, completed: current.id, action: action ?? DEFAULT_ACTION, next: next?.id, step });
      if (recent.push(current.id) > RECENT_NODES) recent.shift();
      current = next;
    }
    return action;
  }

  /** Runs one step: `node`'s full execution with the shared state (the namespaced Flow checks the node first). */
  protected runStep(node: BaseNode<S>, shared: S, scope: RunScope): Promise<string | undefined> {
    return node._run(shared, scope);
  }

  /**
   * Copies the mapped keys of a route being taken, before its target runs: on a plain shared object, every source
   * property is read, then every target written; a missing source is a FlowError naming the route. (The namespaced
   * Flow commits them to the Backpack instead.)
   */
  protected applyMappings(from: BaseNode<S>, action: string, to: BaseNode<S>, mappings: RouteMappings, shared: S, _scope: RunScope): void {
    if (shared === null || typeof shared !== 'object') {
      throw new FlowError(`Flow '${this.id}': route '${from.id}' -(${action})-> '${to.id}' maps keys, but the shared state is not an object`);
    }
    const state = shared as Record<string, unknown>;
    const values = Object.keys(mappings).map((source) => {
      if (!Object.hasOwn(state, source)) {
        throw new FlowError(`Flow '${this.id}': route '${from.id}' -(${action})-> '${to.id}' maps '${source}' to '${mappings[source]}', but the shared state has no '${source}'`);
      }
      return state[source];
    });
    Object.values(mappings).forEach((target, i) => (state[target] = values[i]));
  }

  /** Called when a route is followed (for reporting). */
  protected routeTaken(_from: BaseNode<S>, _action: string, _to: BaseNode<S>, _scope: RunScope): void {}

  /** Called when a node's action has no route while it has others; applies `onMissingRoute`. */
  protected routeMissing(from: BaseNode<S>, action: string, _scope: RunScope): void {
    if (this.onMissingRoute === 'end') return;
    const message = missingRouteMessage(this.id, from, action);
    if (this.onMissingRoute === 'throw') throw new FlowError(message);
    console.warn(`backpackflow: ${message}; the flow ends here`);
  }

  /** Takes the head of a resume position, if any, and finds that node among those reachable from the entry. */
  private resumeNode(scope: RunScope): BaseNode<S> | undefined {
    const id = runControls(scope)?.resume?.shift();
    if (id === undefined) return undefined;
    const node = this.findReachable(id);
    if (!node) throw new FlowError(`Cannot resume flow '${this.id}' at node '${id}': no such node is reachable from its entry node`);
    return node;
  }

  /** The node with `id` among those reachable from the entry node, or undefined. */
  findReachable(id: string): BaseNode<S> | undefined {
    const seen = new Set<BaseNode<S>>();
    const queue = this.#entry ? [this.#entry] : [];
    while (queue.length > 0) {
      const node = queue.shift() as BaseNode<S>;
      if (node.id === id) return node;
      seen.add(node);
      for (const next of routeTable(node).values()) if (!seen.has(next)) queue.push(next);
    }
    return undefined;
  }
}

/** The message for an action without a route (shared by every missing-route report). */
export function missingRouteMessage(flowId: string, from: BaseNode, action: string): string {
  const available = [...routeTable(from).keys()].map((a) => `'${a}'`).join(', ');
  return `Flow '${flowId}': node '${from.id}' returned action '${action}', which has no route (routes: ${available})`;
}

/**
 * A flow run once per parameter object: `prep` returns the list, and each run sees its object in `scope.params`
 * (merged over the enclosing params). Runs go one after another.
 */
export class BatchFlow<S = any> extends BaseFlow<S> {
  /** Returns one parameter object per run of the flow. */
  override prep(_shared: S, _scope: RunScope): Record<string, unknown>[] | Promise<Record<string, unknown>[]> {
    return [];
  }

  protected override async execute(shared: S, scope: RunScope): Promise<string | undefined> {
    const batches = await this.prep(shared, scope);
    checkBatches(this.id, batches);
    let action: string | undefined;
    for (const params of batches) action = await this._orchestrate(shared, batchScope(scope, params));
    return this.post(shared, batches, action);
  }
}

/** Options of a parallel batch flow. */
export interface ParallelBatchFlowOptions<S = any> extends BaseFlowOptions<S> {
  /** Most runs in flight at once. Default: all of them. */
  concurrency?: number;
}

/** A batch flow whose runs go concurrently (up to `concurrency` at once). */
export class ParallelBatchFlow<S = any> extends BatchFlow<S> {
  /** Most runs in flight at once (Infinity when unlimited). */
  readonly concurrency: number;

  constructor(options: ParallelBatchFlowOptions<S> = {}) {
    super(options);
    this.concurrency = checkConcurrency(`Flow '${this.id}'`, options.concurrency);
  }

  protected override async execute(shared: S, scope: RunScope): Promise<string | undefined> {
    const batches = await this.prep(shared, scope);
    checkBatches(this.id, batches);
    const actions = await mapConcurrent(batches, this.concurrency, (params) =>
      this._orchestrate(shared, batchScope(scope, params)),
    );
    return this.post(shared, batches, actions.at(-1));
  }
}

function batchScope(scope: RunScope, params: Record<string, unknown>): RunScope {
  return derive(scope, { ...scope, params: Object.freeze({ ...scope.params, ...params }) });
}

function checkBatches(flowId: string, batches: unknown): asserts batches is Record<string, unknown>[] {
  if (!Array.isArray(batches) || batches.some((b) => typeof b !== 'object' || b === null || Array.isArray(b))) {
    throw new TypeError(`Batch flow '${flowId}': prep must return an array of parameter objects`);
  }
}

// Code running in a node must not rewrite what the library runs for others (README: threat model).
hardenClass(BaseFlow);
hardenClass(BatchFlow);
hardenClass(ParallelBatchFlow);
