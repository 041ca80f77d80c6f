import { DEFAULT_ACTION, FlowAction } from './actions.js';
import { checkConcurrency, mapConcurrent } from './concurrency.js';
import { FlowError, FlowSignal, NodeExecutionError, dataProperty } from './errors.js';
import { checkMappings, type RouteMappings, type RouteOptions } from './mappings.js';
import { ROOT_SCOPE, type RunScope } from './scope.js';
import { hardenClass } from '../harden.js';

/** Options every node takes. */
export interface BaseNodeOptions {
  /** Stable id of the node; needed to resume a run. Default: class name and a process-local counter. */
  id?: string;
}

/** What `exec` learns about the attempt it is making. */
export interface Attempt {
  /** 1-based number of this attempt. */
  readonly attempt: number;
  /** Total attempts allowed (`maxRetries`). */
  readonly maxAttempts: number;
}

const SINGLE_ATTEMPT: Attempt = Object.freeze({ attempt: 1, maxAttempts: 1 });
let unnamedNodes = 0;

/** A node's routes: successor by action, and the mappings of the routes that have some. */
interface Routes<S> {
  successors: Map<string, BaseNode<S>>;
  mappings?: Map<string, RouteMappings>;
}

/** The route a flow takes out of a node on an action, read from the node's routing table (see {@link routeOf}). */
export interface TakenRoute<S> {
  /** The node the action routes to, or undefined. */
  next: BaseNode<S> | undefined;
  /** That route's key mappings, if it has any. */
  mappings: RouteMappings | undefined;
  /** How many routes leave the node (0: the flow ends quietly after it). */
  count: number;
}

let routesOf: <S>(node: BaseNode<S>) => Routes<S> | undefined;

/**
 * A check of a route about to change (see {@link setRouteGuard}): throws to refuse it, and returns why a key cannot be
 * a mapped key of the route, or undefined for any key.
 */
export type RouteGuard = (from: BaseNode, action: string, to: BaseNode) => ((key: string) => string | undefined) | undefined;
let routeGuard: RouteGuard | undefined;

/**
 * Sets the check `BaseNode.on` asks before any route changes, whatever class the node is of: the nodes module sets
 * it once, when it loads (a Backpack flow's routes are refused once it has run, and from another node's code). Not
 * exported from the package: node code must not replace it.
 */
export function setRouteGuard(guard: RouteGuard): void {
  if (routeGuard !== undefined) throw new FlowError('The route guard is set once, by the nodes module');
  routeGuard = guard;
}

/**
 * The route out of `node` for `action` (undefined means `'default'`), read from the routing table its `on`/`next`
 * calls built: the library's flows route with this, never through `getNextNode`, `getRouteMappings` or
 * `successorCount`, which a node class can override (node code does not choose where its flow goes next, nor runs in
 * the flow's orchestration). Internal: not exported from the package.
 */
export function routeOf<S>(node: BaseNode<S>, action: string | undefined): TakenRoute<S> {
  const routes = routesOf(node);
  const key = action ?? DEFAULT_ACTION;
  return { next: routes?.successors.get(key), mappings: routes?.mappings?.get(key), count: routes?.successors.size ?? 0 };
}

/** Every route out of `node` (action to node), from its routing table as {@link routeOf} reads it. Internal. */
export function routeTable<S>(node: BaseNode<S>): ReadonlyMap<string, BaseNode<S>> {
  return new Map(routesOf(node)?.successors ?? []);
}

/**
 * A step of a flow: `prep(shared)` reads what it needs, `exec(prepRes)` does the work, `post(shared, prepRes,
 * execRes)` writes results and returns the action that picks the next node (undefined means `'default'`).
 *
 * Nodes are reused, never cloned (DESIGN D3): one instance may run many times, also concurrently, so nothing a run
 * needs may be kept in its fields. Per-run data lives in `shared` or in what `prep` returns.
 */
export class BaseNode<S = any, P = any, E = any> {
  /** The node's id; unique within a flow. */
  readonly id: string;
  /**
   * Routes out of this node (successor by action) and their mappings, made by the first route: a flow of a million
   * nodes holds no million empty maps, nor a field for each.
   */
  #routes: Routes<S> | undefined;

  static {
    routesOf = (node) => node.#routes;
  }

  constructor(options: BaseNodeOptions = {}) {
    this.id = options.id ?? `${new.target.name}#${++unnamedNodes}`;
  }

  /** Reads from shared state what `exec` needs. `scope` tells where the node runs (path, batch params). */
  prep(_shared: S, _scope: RunScope): P | Promise<P> {
    return undefined as P;
  }

  /** Does the work; gets no shared state, so that it can be retried safely. */
  exec(_prepRes: P, _attempt: Attempt): E | Promise<E> {
    return undefined as E;
  }

  /** Writes results to shared state and returns the action to route on (undefined means `'default'`). */
  post(_shared: S, _prepRes: P, _execRes: E): string | undefined | Promise<string | undefined> {
    return undefined;
  }

  /**
   * Routes `action` to `node`; a later call for the same action replaces the earlier one (and its mappings).
   * `options.mappings` copies keys when the route is taken (source key → target key), before `node` runs.
   */
  on(action: string, node: BaseNode<S>, options?: RouteOptions): this {
    if (typeof action !== 'string' || action === '') {
      throw new TypeError(`Node '${this.id}': action must be a non-empty string, got ${JSON.stringify(action)}`);
    }
    if (!(node instanceof BaseNode)) {
      throw new TypeError(`Node '${this.id}': successor for action '${action}' must be a node, got ${String(node)}`);
    }
    if (options !== undefined && (options === null || typeof options !== 'object')) {
      throw new TypeError(`Node '${this.id}': options of route '${action}' must be an object ({ mappings }), got ${String(options)}`);
    }
    // Here, not in an override of `on`: the base method is exported, and code that calls it on a node directly
    // (`BaseNode.prototype.on.call(node, …)`) meets the library's rules all the same; and not through a method or
    // getter of the node, which its class (node code) could redefine and which would run in the caller's execution.
    // The guard also gives the syntax mapped keys must have (the Backpack's, for its nodes).
    const keyProblem = routeGuard?.(this, action, node);
    const given = options?.mappings;
    const mappings = given === undefined ? undefined : checkMappings(`Node '${this.id}', route '${action}' → '${node.id}'`, given, keyProblem);
    const routes: Routes<S> = (this.#routes ??= { successors: new Map() });
    routes.successors.set(action, node);
    if (mappings) (routes.mappings ??= new Map()).set(action, mappings);
    else routes.mappings?.delete(action);
    return this;
  }

  /** The key mappings of the route for `action` (undefined means `'default'`), if it has any. */
  getRouteMappings(action?: string): RouteMappings | undefined {
    return this.#routes?.mappings?.get(action ?? DEFAULT_ACTION);
  }

  /** Routes `'default'` to `node` and returns `node`, so that `a.next(b).next(c)` builds a chain. */
  next<T extends BaseNode<S>>(node: T): T {
    this.on(DEFAULT_ACTION, node);
    return node;
  }

  /** Routes `'complete'` to `node`. */
  onComplete(node: BaseNode<S>): this {
    return this.on(FlowAction.COMPLETE, node);
  }

  /** Routes `'error'` to `node`. */
  onError(node: BaseNode<S>): this {
    return this.on(FlowAction.ERROR, node);
  }

  /** Routes `'success'` to `node`. */
  onSuccess(node: BaseNode<S>): this {
    return this.on(FlowAction.SUCCESS, node);
  }

  /** Routes `'failure'` to `node`. */
  onFailure(node: BaseNode<S>): this {
    return this.on(FlowAction.FAILURE, node);
  }

  /** Routes `'retry'` to `node`. */
  onRetry(node: BaseNode<S>): this {
    return this.on(FlowAction.RETRY, node);
  }

  /** The node that `action` routes to (undefined action means `'default'`), or undefined. */
  getNextNode(action?: string): BaseNode<S> | undefined {
    return this.#routes?.successors.get(action ?? DEFAULT_ACTION);
  }

  /** A copy of the routing table: action to node. Changing it changes nothing. */
  get successors(): ReadonlyMap<string, BaseNode<S>> {
    return new Map(this.#routes?.successors ?? []);
  }

  /** Number of routes out of this node (0 means the flow ends quietly after it). */
  get successorCount(): number {
    return this.#routes?.successors.size ?? 0;
  }

  /** Runs exec for a prep result; `Node` adds retries here. */
  protected async _exec(prepRes: P, _scope: RunScope): Promise<E> {
    return this.exec(prepRes, SINGLE_ATTEMPT);
  }

  /** One full execution: prep, exec, post. Flows call this; returns the action. */
  async _run(shared: S, scope: RunScope = ROOT_SCOPE): Promise<string | undefined> {
    const prepRes = await this.prep(shared, scope);
    const execRes = await this._exec(prepRes, scope);
    return this.post(shared, prepRes, execRes);
  }

  /** Runs this node alone; successors are not followed (use a flow for that). */
  run(shared: S): Promise<string | undefined> {
    return this._run(shared, ROOT_SCOPE);
  }
}

/** Options of a node with retries. */
export interface NodeOptions extends BaseNodeOptions {
  /** Total attempts of exec, at least 1. Default 1 (no retry). */
  maxRetries?: number;
  /** Milliseconds to wait between attempts. Default 0. */
  retryDelayMs?: number;
}

/**
 * A node whose exec is retried: up to `maxRetries` attempts with `retryDelayMs` between them; after the last
 * failure `execFallback(prepRes, error)` decides (by default it throws a {@link NodeExecutionError}).
 */
export class Node<S = any, P = any, E = any> extends BaseNode<S, P, E> {
  /** Total attempts of exec. */
  readonly maxRetries: number;
  /** Milliseconds between attempts. */
  readonly retryDelayMs: number;

  constructor(options: NodeOptions = {}) {
    super(options);
    const { maxRetries = 1, retryDelayMs = 0 } = options;
    if (!Number.isInteger(maxRetries) || maxRetries < 1) {
      throw new RangeError(`Node '${this.id}': maxRetries is the total number of attempts, an integer >= 1; got ${maxRetries}`);
    }
    if (!Number.isFinite(retryDelayMs) || retryDelayMs < 0) {
      throw new RangeError(`Node '${this.id}': retryDelayMs must be a number >= 0; got ${retryDelayMs}`);
    }
    this.maxRetries = maxRetries;
    this.retryDelayMs = retryDelayMs;
  }

  /** Runs after the last attempt failed; its result stands in for exec's. Default: throw NodeExecutionError. */
  execFallback(_prepRes: P, error: unknown): E | Promise<E> {
    throw new NodeExecutionError(this.id, this.maxRetries, this.maxRetries, error);
  }

  /** Called when an attempt failed and another one follows (for reporting); must not throw. */
  protected onAttemptFailed(_error: unknown, _attempt: Attempt, _delayMs: number, _scope: RunScope): void {}

  protected override async _exec(prepRes: P, scope: RunScope): Promise<E> {
    const maxAttempts = this.maxRetries;
    for (let attempt = 1; ; attempt++) {
      const info: Attempt = maxAttempts === 1 ? SINGLE_ATTEMPT : { attempt, maxAttempts };
      try {
        return await this.exec(prepRes, info);
      } catch (error) {
        // A pause, or the run's own abort, is not a failure of this node: no retry, no fallback, not wrapped.
        if (error instanceof FlowSignal || isRunAbort(error, scope.signal)) throw error;
        if (attempt >= maxAttempts) return this.execFallback(prepRes, error);
        this.onAttemptFailed(error, info, this.retryDelayMs, scope);
        if (this.retryDelayMs > 0) await delay(this.retryDelayMs, scope.signal);
      }
    }
  }
}

/**
 * A node whose prep returns a list of items; exec runs once per item, in order, each with its own retries; post gets
 * the items and the results in the same order.
 */
export class BatchNode<S = any, I = any, R = any> extends Node<S, any, any> {
  override prep(_shared: S, _scope: RunScope): I[] | Promise<I[]> {
    return [];
  }
  override exec(_item: I, _attempt: Attempt): R | Promise<R> {
    return undefined as R;
  }
  override post(_shared: S, _items: I[], _results: R[]): string | undefined | Promise<string | undefined> {
    return undefined;
  }
  override execFallback(_item: I, error: unknown): R | Promise<R> {
    throw new NodeExecutionError(this.id, this.maxRetries, this.maxRetries, error);
  }

  /** Runs exec for one item, with that item's own attempts. */
  protected execItem(item: I, scope: RunScope): Promise<R> {
    return super._exec(item, scope);
  }

  protected override async _exec(items: I[], scope: RunScope): Promise<R[]> {
    checkItems(this.id, items);
    const results: R[] = [];
    for (const item of items) results.push(await this.execItem(item, scope));
    return results;
  }
}

/** Options of a parallel batch node. */
export interface ParallelBatchNodeOptions extends NodeOptions {
  /** Most items in flight at once. Default: all of them. */
  concurrency?: number;
}

/** A batch node that runs its items concurrently (up to `concurrency` at once); each item has its own attempts. */
export class ParallelBatchNode<S = any, I = any, R = any> extends BatchNode<S, I, R> {
  /** Most items in flight at once (Infinity when unlimited). */
  readonly concurrency: number;

  constructor(options: ParallelBatchNodeOptions = {}) {
    super(options);
    this.concurrency = checkConcurrency(`Node '${this.id}'`, options.concurrency);
  }

  protected override async _exec(items: I[], scope: RunScope): Promise<R[]> {
    checkItems(this.id, items);
    return mapConcurrent(items, this.concurrency, (item) => this.execItem(item, scope));
  }
}

function checkItems(nodeId: string, items: unknown): asserts items is unknown[] {
  if (!Array.isArray(items)) {
    throw new TypeError(`Batch node '${nodeId}': prep must return an array of items, got ${typeof items}`);
  }
}

/**
 * True when `error` is the run stopping because its own `signal` aborted: the signal is aborted and the error is its
 * reason or an `AbortError` (or wraps one as its `cause`). Such an error is not a failure of the node it passes
 * through: like a {@link FlowSignal}, exec is not retried for it, `execFallback` does not run, nothing wraps it, and
 * the run stops where it was (resumable).
 */
export function isRunAbort(error: unknown, signal: AbortSignal | undefined): boolean {
  if (signal?.aborted !== true) return false;
  // Read as data (no getter or Proxy trap of the thrown value runs: it may be another node's, see dataProperty).
  for (let e: unknown = error, depth = 0; e !== null && e !== undefined && depth < 32; e = dataProperty(e, 'cause'), depth++) {
    if (e === signal.reason) return true;
    if (typeof e !== 'object') return false;
    if (dataProperty(e, 'name') === 'AbortError') return true;
  }
  return false;
}

/** Waits `ms`, or rejects early with the signal's reason when it aborts. */
export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

// Code running in a node must not rewrite what the library runs for others (README: threat model).
hardenClass(BaseNode);
hardenClass(Node);
hardenClass(BatchNode);
hardenClass(ParallelBatchNode);
